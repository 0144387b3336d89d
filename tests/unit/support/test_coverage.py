"""coverage_record: which of the question's terms the cited sources hold, and when that flags an answer."""

from __future__ import annotations

import pytest

from answers.retrieval.query import quarter_terms, query_terms
from answers.support.coverage import coverage_record

PYTHON = "Exceptions in Python are raised with raise and handled with try and except."
JAVA_TITLE = "Exceptions in Java"
CORPUS = {"exceptions", "handled", "java", "python", "with", "statement", "is"}


def in_corpus(term: str) -> bool:
    return term in CORPUS


@pytest.mark.parametrize(
    ("terms", "cited", "declined", "covered", "missing", "key", "flag"),
    [
        # Asked about Java, cited only a Python page, on a site that has a Java page: flagged.
        (["exceptions", "handled", "java"], [PYTHON], False, ["exceptions", "handled"], ["java"],
         ["exceptions", "handled", "java"], True),
        # The same question answered from the Java page too: nothing key is missing.
        (["exceptions", "handled", "java"], [PYTHON, JAVA_TITLE], False,
         ["exceptions", "handled", "java"], [], ["exceptions", "handled", "java"], False),
        # A term in no document at all is not key: that is retrieval's part (and the decline's).
        (["exceptions", "kotlin"], [PYTHON], False, ["exceptions"], ["kotlin"], ["exceptions"], False),
        # Terms that count a quarter in retrieval (here the weak "is") never flag.
        (["is", "statement"], ["A statement."], False, ["statement"], ["is"], ["statement"], False),
        # Compared by stem: "exception" in the source covers "exceptions".
        (["exceptions"], ["An exception is raised."], False, ["exceptions"], [], ["exceptions"], False),
        # Nothing cited: everything missing, flagged when a key term is among them...
        (["java"], [], False, [], ["java"], ["java"], True),
        # ...except for a declined answer, which says itself that the documents do not cover it.
        (["java"], [], True, [], ["java"], ["java"], False),
        # No informative term: nothing to miss.
        ([], [PYTHON], False, [], [], [], False),
    ],
)  # fmt: skip
def test_coverage_record(terms, cited, declined, covered, missing, key, flag):
    record = coverage_record(
        terms=terms, cited_texts=cited, in_corpus=in_corpus, quarter=frozenset({"is"}), declined=declined
    )
    assert record == {"terms": terms, "covered": covered, "missing": missing, "key": key, "flag": flag}


NONLOCAL = "The nonlocal statement: the identifiers it lists refer to the nearest enclosing scope."
BREAK = "The break statement: it terminates the nearest enclosing loop."


@pytest.mark.parametrize(
    ("question", "cited", "key", "flag"),
    [
        # The kind noun: the page on `nonlocal` answers it without saying "keyword".
        ("What does the nonlocal keyword mean?", [NONLOCAL], ["nonlocal"], False),
        # The how-to verb is the reader's word; the page says "terminates".
        ("How do I leave a loop early?", [BREAK], ["loop", "early"], True),  # "early": not in BREAK
        ("How do I leave a loop?", [BREAK], ["loop"], False),
        # A weak term that is the subject is key: a page without "for" misses the question.
        ("How does the for statement work?", [BREAK], ["for"], True),
    ],
)
def test_key_terms_are_the_ones_retrieval_weighs_fully(question, cited, key, flag):
    terms = query_terms(question)
    corpus = {"nonlocal", "keyword", "leave", "loop", "early", "for", "statement"}
    record = coverage_record(
        terms=terms, cited_texts=cited, in_corpus=corpus.__contains__, quarter=quarter_terms(question)
    )
    assert record["key"] == key
    assert record["flag"] is flag
