"""coverage_record: which of the question's terms the cited sources hold, and when that flags an answer."""

from __future__ import annotations

import pytest

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
        # Weak terms (keywords that are common words) never flag.
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
    record = coverage_record(terms=terms, cited_texts=cited, in_corpus=in_corpus, declined=declined)
    assert record == {"terms": terms, "covered": covered, "missing": missing, "key": key, "flag": flag}
