"""The lexical support score: the weighted share of a sentence's content words its source contains."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from answers.support.lexical import Idf, content_words, lexical_score

EXCERPT = "The with statement calls the context manager's __enter__ method, then runs the suite."

# (sentence, excerpt, expected score with every word weighing 1)
CASES = [
    pytest.param(EXCERPT, EXCERPT, 1.0, id="identical-text-scores-1"),
    pytest.param("The suite runs.", EXCERPT, 1.0, id="every-content-word-found-scores-1"),
    pytest.param("Generators yield values lazily.", EXCERPT, 0.0, id="no-content-word-found-scores-0"),
    pytest.param("The statement runs a loop.", EXCERPT, 2 / 3, id="share-of-content-words-found"),
    pytest.param("It is what they were.", EXCERPT, 0.0, id="no-content-word-at-all-scores-0"),
    pytest.param("the THE The suite", "a suite", 1.0, id="stop-words-ignored-and-case-folded"),
    pytest.param("suite suite suite loop", EXCERPT, 0.5, id="a-word-counts-once"),
    pytest.param("Statements were calling managers.", EXCERPT, 1.0, id="stems-match-inflections"),
    pytest.param("The suite runs [2].", EXCERPT, 1.0, id="marker-is-not-a-word"),
    pytest.param("The suite runs 2.", EXCERPT, 2 / 3, id="a-number-outside-a-marker-is-a-word"),
    pytest.param("According to the sources, the suite runs.", EXCERPT, 1.0, id="words-about-sources-ignored"),
    pytest.param("__enter__ is called", EXCERPT, 1.0, id="dunder-names-are-their-word"),
    pytest.param("The suite runs.", "", 0.0, id="empty-excerpt-scores-0"),
]


@pytest.mark.parametrize(("sentence", "excerpt", "expected"), CASES)
def test_score_with_uniform_weights(sentence, excerpt, expected):
    assert lexical_score(sentence, excerpt) == pytest.approx(expected)


def test_rare_words_count_more_than_common_ones():
    idf = Idf(documents=1000, counts={"walrus": 2, "object": 900})
    sentence = "The walrus object."
    assert idf("walrus") > idf("object")
    assert lexical_score(sentence, "a walrus", idf) > 0.5 > lexical_score(sentence, "an object", idf)
    assert lexical_score(sentence, "a walrus", idf) + lexical_score(
        sentence, "an object", idf
    ) == pytest.approx(1)


@pytest.mark.parametrize(
    ("idf", "word", "expected"),
    [
        pytest.param(Idf(), "anything", 1.0, id="no-statistics-weigh-1"),
        pytest.param(Idf(documents=99, counts={"x": 99}), "x", 1.0, id="word-in-every-chunk-weighs-1"),
        pytest.param(Idf(documents=99), "x", math.log(100) + 1, id="word-in-no-chunk-weighs-most"),
        pytest.param(Idf(documents=99, counts={"x": 500}), "x", 1.0, id="count-capped-at-the-chunk-count"),
    ],
)
def test_idf(idf, word, expected):
    assert idf(word) == pytest.approx(expected)


def test_content_words_are_distinct_lower_case_in_order_without_stop_words_or_markers():
    assert content_words("The Suite, the suite [3] and 7 Walruses.") == ["suite", "7", "walruses"]


# --- Properties ----------------------------------------------------------------------

WORDS = [
    "the",
    "suite",
    "Suite",
    "suites",
    "walrus",
    "object",
    "is",
    "7",
    "[1]",
    "[2, 3]",
    "with",
    "exit",
    "ünï",
]
texts = st.lists(st.sampled_from([*WORDS, " ", ".", "\n", "`"]), max_size=25).map("".join)
weights = st.builds(
    Idf,
    documents=st.integers(min_value=0, max_value=5000),
    counts=st.dictionaries(
        st.sampled_from([w.lower() for w in WORDS]), st.integers(min_value=0, max_value=9000)
    ),
)
PROPERTY = settings(max_examples=300, deadline=None, derandomize=True)


@PROPERTY
@given(texts, texts, weights)
def test_scores_are_between_0_and_1(sentence, excerpt, idf):
    assert 0.0 <= lexical_score(sentence, excerpt, idf) <= 1.0


@PROPERTY
@given(texts, texts, weights)
def test_a_text_containing_the_sentence_scores_1(sentence, rest, idf):
    if content_words(sentence):
        assert lexical_score(sentence, sentence, idf) == pytest.approx(1.0)
        assert lexical_score(sentence, rest + " " + sentence + " " + rest, idf) == pytest.approx(1.0)


@PROPERTY
@given(texts, texts, texts, weights)
def test_more_excerpt_never_lowers_the_score(sentence, excerpt, more, idf):
    assert lexical_score(sentence, excerpt + " " + more, idf) >= lexical_score(sentence, excerpt, idf) - 1e-12
