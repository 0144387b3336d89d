"""query: a term the corpus never uses counts fully if it is a name or a rare word, not if common English."""

from __future__ import annotations

import re

import pytest

from answers.conf import MIN_SCORE_DEFAULT
from answers.retrieval.english import COMMON_ENGLISH
from answers.retrieval.query import (
    RARITY_CAP,
    absent_weight,
    holds_all,
    name_terms,
    query_terms,
    rare_names,
    rarity,
    stem,
    term_weights,
)
from answers.retrieval.rerank import LexicalReranker, Passage

CHUNKS = 650
FULL = rarity(0, CHUNKS)


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("What is the capital of America?", {"america"}),
        ("What should I know about Java generics?", {"java"}),
        ("How do I handle exceptions in C++?", {"c"}),
        ("How do I leave a loop early?", set()),  # "How" and "I" are no names
        ("Early exits? Java too.", set()),  # each starts a sentence: its capital says nothing
        ("Is it good: Good enough", set()),
        ("what about GOOD manners", {"good"}),
        ("", set()),
    ],
)
def test_names_are_the_words_capitalised_where_no_sentence_starts(question: str, names: set[str]) -> None:
    assert name_terms(question) == names


@pytest.mark.parametrize(
    ("question", "counts", "names"),
    [
        ("How do exceptions work in Java?", {"java": 2, "exceptions": 40}, {"java"}),  # rare
        ("How do I bail out in Kotlin?", {}, {"kotlin"}),  # never used
        ("How do comparisons work in Python?", {"python": 130}, set()),  # the site's subject
        ("What does The Will say?", {"say": 3}, set()),  # a stop word is no term, capitalised or not
        ("What are java generics?", {"java": 2}, set()),  # not written as a name
    ],
)
def test_rare_names_are_the_names_the_corpus_uses_rarely_or_never(
    question: str, counts: dict[str, int], names: set[str]
) -> None:
    # A passage lacking one of these gets no lift from dense similarity (rerank's docstring).
    assert rare_names(question, counts, CHUNKS) == names


@pytest.mark.parametrize(
    ("words", "texts", "held"),
    [
        (frozenset({"java"}), ("Exceptions", "", "Python raises them."), False),
        (frozenset({"java"}), ("Floating point", "", "The C or Java implementation decides."), True),
        (frozenset({"java", "generics"}), ("Java's generics", "", ""), True),  # the title counts; stems
        (frozenset({"java", "generics"}), ("Java", "", "no such thing"), False),
        (frozenset(), ("", "", ""), True),
    ],
)
def test_holds_all_reads_title_heading_and_text_by_stem(
    words: frozenset[str], texts: tuple[str, str, str], held: bool
) -> None:
    assert holds_all(words, *texts) is held


@pytest.mark.parametrize(
    ("term", "names", "weight"),
    [
        ("early", frozenset(), RARITY_CAP),  # common English: weighs as a rare word the corpus uses
        ("good", frozenset(), RARITY_CAP),
        ("keep", frozenset(), RARITY_CAP),
        ("france", frozenset(), FULL),  # a name: the question is about something else
        ("photosynthesis", frozenset(), FULL),  # a rare word
        ("clean", frozenset(), FULL),  # not among the most common words
        ("america", frozenset({"america"}), FULL),  # common, but written as a name
        ("america", frozenset(), RARITY_CAP),
    ],
)
def test_an_absent_term_weighs_fully_unless_it_is_common_english(
    term: str, names: frozenset[str], weight: float
) -> None:
    assert absent_weight(term, CHUNKS, names) == pytest.approx(weight)


@pytest.mark.parametrize(
    ("question", "counts", "absent", "weight"),
    [
        ("How do I leave a loop early?", {"leave": 5, "loop": 40}, "early", RARITY_CAP),
        ("What is the capital of America?", {"is": 600, "capital": 3}, "america", FULL),
        ("What is the capital of France?", {"is": 600, "capital": 3}, "france", FULL),
        ("What is a good name for a dog?", {"is": 600, "name": 200, "for": 300}, "good", RARITY_CAP),
        ("What is a good name for a dog?", {"is": 600, "name": 200, "for": 300}, "dog", RARITY_CAP),
        ("What is a good name for a hamster?", {"is": 600, "name": 200, "for": 300}, "hamster", FULL),
    ],
)
def test_term_weights_apply_the_rule_to_the_terms_the_corpus_never_uses(
    question: str, counts: dict[str, int], absent: str, weight: float
) -> None:
    terms = query_terms(question)
    assert absent in terms
    assert absent not in counts
    assert term_weights(question, terms, counts, CHUNKS)[absent] == pytest.approx(weight)


@pytest.mark.parametrize(
    ("question", "counts", "passage", "answered"),
    [
        # The reader's everyday word is not what the question is about: `break` answers it.
        (
            "How do I leave a loop early?",
            {"leave": 5, "loop": 40},
            Passage(
                "The break statement",
                "",
                "It terminates the nearest enclosing loop. A finally clause is executed before really "
                "leaving the loop.",
                1.0,
            ),
            True,
        ),
        # A name matched alone answers nothing when the rest of the question is absent.
        (
            "What is a good name for a hamster?",
            {"is": 600, "name": 200, "for": 300},
            Passage("Naming and binding", "", "A name refers to an object; names are bound.", 1.0),
            False,
        ),
        (
            "What is the capital of America?",
            {"is": 600, "capital": 3},
            Passage("String literals", "", "LATIN CAPITAL LETTER A is a capital letter.", 1.0),
            False,
        ),
    ],
)
def test_the_default_threshold_reads_the_rule(
    question: str, counts: dict[str, int], passage: Passage, answered: bool
) -> None:
    terms = query_terms(question)
    (score,) = LexicalReranker().score(terms, [passage], term_weights(question, terms, counts, CHUNKS))
    assert (score >= MIN_SCORE_DEFAULT) is answered


def test_common_english_holds_lower_case_words_only() -> None:
    assert len(COMMON_ENGLISH) > 1000
    assert all(re.fullmatch(r"[a-z]+", word) for word in COMMON_ENGLISH)
    assert {"early", "good", "keep", "the"} <= COMMON_ENGLISH
    assert not {"france", "java", "python", "photosynthesis"} & COMMON_ENGLISH


@pytest.mark.parametrize(
    ("plural", "singular"),
    [("slicings", "slicing"), ("bindings", "binding"), ("mappings", "mapping"), ("strings", "string")],
)
def test_a_plural_in_ings_stems_as_its_singular(plural: str, singular: str) -> None:
    """ "What is a slicing?" finds the page titled "Slicings": both stem alike."""
    assert stem(plural) == stem(singular)
    assert stem(stem(plural)) == stem(plural)
