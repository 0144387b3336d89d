"""The support record (docs/reference/http.md, trail `support`): verdicts, scores, grounded_by, quotes,
fallback."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from answers.support.methods import LexicalMethod, SupportError, support_inputs, support_record
from answers.support.quotes import quoted_pairs
from answers.support.record import SourceText, Summary, below_bar, build_record, summarize, wanted_pairs
from answers.support.sentences import split_sentences

# Three retrieved sources: 1 -> final 2, 2 dropped, 3 -> final 1.
SOURCES = [
    SourceText(original_number=1, final_number=2, excerpt="one"),
    SourceText(original_number=2, final_number=None, excerpt="two"),
    SourceText(original_number=3, final_number=1, excerpt="three"),
]
TEXT = "First [1]. Second [1, 2]. Third."


def _record(scores, *, min_score=0.5, text=TEXT, sources=SOURCES):
    return build_record(
        method="lexical", min_score=min_score, sentences=split_sentences(text), sources=sources, scores=scores
    )


@pytest.mark.parametrize(
    ("score", "min_score", "below"),
    [(0.49, 0.5, True), (0.5, 0.5, False), (0.51, 0.5, False), (0.0, 0.0, False), (1.0, 1.0, False)],
)
def test_the_bar_is_reached_at_min_score_itself(score, min_score, below):
    # One rule for the record's verdicts, its grounded_by and passages, the metric and the admin panel.
    assert below_bar(score, min_score) is below


def test_a_cited_source_exactly_at_the_bar_supports_and_one_under_it_does_not():
    at = _record({(0, 3): 0.5, (1, 3): 0.5, (1, 1): 0.5})
    under = _record({(0, 3): 0.4999, (1, 3): 0.5, (1, 1): 0.5})
    assert [s["verdict"] for s in at["sentences"][:2]] == ["supported", "supported"]
    assert under["sentences"][0]["verdict"] == "unsupported"


def test_the_record_has_the_api_shape():
    record = _record({(0, 3): 0.9, (1, 3): 0.9, (1, 1): 0.9})
    assert set(record) == {"method", "min_score", "fallback", "sentences"}
    assert (record["method"], record["min_score"], record["fallback"]) == ("lexical", 0.5, None)
    first = record["sentences"][0]
    assert set(first) == {"text", "start", "end", "cited", "scores", "verdict", "grounded_by", "passages"}
    assert first == {
        "text": "First [1].",
        "start": 0,
        "end": 10,
        "cited": [1],
        "scores": {"1": 0.9},
        "verdict": "supported",
        "grounded_by": [],
        "passages": {},
    }


# (scores by (sentence index, original number), min_score, [(verdict, scores, grounded_by)])
CASES = [
    pytest.param(
        {(0, 3): 0.9, (1, 3): 0.8, (1, 1): 0.7, (2, 1): 0.1, (2, 2): 0.1, (2, 3): 0.1},
        0.5,
        [("supported", {"1": 0.9}, []), ("supported", {"1": 0.8, "2": 0.7}, []), ("uncited", {}, [])],
        id="supported/every-cited-source-reaches-the-bar",
    ),
    pytest.param(
        {(0, 3): 0.5, (1, 3): 0.5, (1, 1): 0.5},
        0.5,
        [("supported", {"1": 0.5}, []), ("supported", {"1": 0.5, "2": 0.5}, []), ("uncited", {}, [])],
        id="supported/a-score-equal-to-the-bar-reaches-it",
    ),
    pytest.param(
        {(0, 3): 0.2, (1, 3): 0.9, (1, 1): 0.49},
        0.5,
        [("unsupported", {"1": 0.2}, []), ("unsupported", {"1": 0.9, "2": 0.49}, []), ("uncited", {}, [])],
        id="unsupported/one-cited-source-under-the-bar",
    ),
    pytest.param(
        {},
        0.5,
        [("unsupported", {"1": 0.0}, []), ("unsupported", {"1": 0.0, "2": 0.0}, []), ("uncited", {}, [])],
        id="unsupported/a-missing-score-is-0",
    ),
    pytest.param(
        {(2, 1): 0.6, (2, 2): 0.9, (2, 3): 0.3},
        0.5,
        [("unsupported", {"1": 0.0}, []), ("unsupported", {"1": 0.0, "2": 0.0}, []), ("uncited", {}, [2, 1])],
        id="uncited/grounded-by-original-numbers-best-first-dropped-included",
    ),
    pytest.param(
        {(2, 1): 0.7, (2, 2): 0.7, (2, 3): 0.7},
        0.5,
        [
            ("unsupported", {"1": 0.0}, []),
            ("unsupported", {"1": 0.0, "2": 0.0}, []),
            ("uncited", {}, [1, 2, 3]),
        ],
        id="uncited/ties-by-original-number",
    ),
    pytest.param(
        {(0, 3): 0.1, (1, 3): 0.1, (1, 1): 0.1, (2, 1): 0.1, (2, 2): 0.1, (2, 3): 0.1},
        0.0,
        [("supported", {"1": 0.1}, []), ("supported", {"1": 0.1, "2": 0.1}, []), ("uncited", {}, [1, 2, 3])],
        id="bar-0/everything-reaches-it",
    ),
    pytest.param(
        {(0, 3): 0.123456, (1, 3): 1.5, (1, 1): -1.0},
        0.5,
        [("unsupported", {"1": 0.1235}, []), ("unsupported", {"1": 1.0, "2": 0.0}, []), ("uncited", {}, [])],
        id="scores-rounded-and-clamped",
    ),
]


@pytest.mark.parametrize(("scores", "min_score", "expected"), CASES)
def test_verdicts(scores, min_score, expected):
    record = _record(scores, min_score=min_score)
    assert [(s["verdict"], s["scores"], s["grounded_by"]) for s in record["sentences"]] == expected


def test_a_cited_number_no_source_has_scores_0():
    record = _record({}, text="Ghost [7].")
    assert record["sentences"][0]["scores"] == {"7": 0.0}
    assert record["sentences"][0]["verdict"] == "unsupported"


def test_wanted_pairs_are_the_cited_sources_and_every_source_for_an_uncited_sentence():
    sentences = split_sentences(TEXT + " Ghost [7].")
    assert wanted_pairs(sentences, SOURCES) == [(0, 3), (1, 3), (1, 1), (2, 1), (2, 2), (2, 3)]


def test_a_fallback_answer_has_only_uncited_sentences_grounded_by_its_sources():
    sources = [SourceText(1, 1, "The walrus teacups."), SourceText(2, 2, "Carpentry at sea.")]
    inputs = support_inputs("Walrus teacups exist. Carpentry happens at sea.", sources)
    record = _run(inputs, LexicalMethod())
    assert [(s["verdict"], s["grounded_by"]) for s in record["sentences"]] == [
        ("uncited", [1]),
        ("uncited", [2]),
    ]


# --- Quotes ----------------------------------------------------------------------------------------

QUOTE_SOURCES = [
    SourceText(1, 1, "Walruses drink tea\nfrom porcelain cups. They never spill."),
    SourceText(2, 2, "Teacups come from China."),
]
QUOTE_TEXT = "Walruses use porcelain [1]. Teacups are Chinese [2]. Nothing cited."


@pytest.mark.parametrize(
    ("quotes", "expected"),
    [
        pytest.param(
            {1: ["drink tea from porcelain cups"]}, {(0, 1)}, id="verbatim-quote-backs-its-sentence"
        ),
        pytest.param(
            {1: ["drink tea   from\nporcelain"]}, {(0, 1)}, id="whitespace-runs-compare-as-one-space"
        ),
        pytest.param({1: ["drink coffee from porcelain"]}, set(), id="quote-not-in-the-excerpt-is-ignored"),
        pytest.param(
            {1: ["They never spill."]}, set(), id="quote-sharing-no-word-with-the-sentence-is-ignored"
        ),
        pytest.param(
            {2: ["Teacups come from China."]}, {(1, 2)}, id="quote-counts-for-sentences-citing-its-source"
        ),
        pytest.param({1: [""], 2: []}, set(), id="empty-quotes-are-ignored"),
    ],
)
def test_quoted_pairs(quotes, expected):
    assert quoted_pairs(split_sentences(QUOTE_TEXT), QUOTE_SOURCES, quotes) == expected


def _run(inputs, method, min_score=0.5):
    return asyncio.run(support_record(inputs, method=method, min_score=min_score))


def test_a_verified_quote_raises_the_score_to_1_whatever_the_method_said():
    inputs = support_inputs(QUOTE_TEXT, QUOTE_SOURCES, quotes={1: ["drink tea from porcelain cups"]})
    record = _run(inputs, LexicalMethod())
    assert record["sentences"][0]["scores"] == {"1": 1.0}
    assert record["sentences"][0]["verdict"] == "supported"


class _Failing:
    name = "judge"

    async def scores(self, inputs):
        raise SupportError("The judge's reply was not JSON.")


def test_a_failing_method_falls_back_to_lexical_and_says_so():
    inputs = support_inputs(QUOTE_TEXT, QUOTE_SOURCES)
    record = _run(inputs, _Failing())
    assert record["method"] == "lexical"
    assert record["fallback"] == {"method": "judge", "reason": "The judge's reply was not JSON."}
    assert record["sentences"] == _run(inputs, LexicalMethod())["sentences"]


# --- Properties ------------------------------------------------------------------------------------

texts = st.lists(
    st.sampled_from(["Walrus", "tea", "cups", "China", ".", " ", "[1]", "[2]", "[1, 2]", "[3]", "\n\n"]),
    max_size=30,
).map("".join)
PROPERTY = settings(max_examples=200, deadline=None, derandomize=True)


@PROPERTY
@given(texts, st.floats(min_value=0.0, max_value=1.0))
def test_verdicts_follow_the_scores_and_the_bar(text, min_score):
    inputs = support_inputs(text, QUOTE_SOURCES)
    record = _run(inputs, LexicalMethod(), min_score)
    for sentence in record["sentences"]:
        assert all(0.0 <= v <= 1.0 for v in sentence["scores"].values())
        if not sentence["cited"]:
            assert sentence["verdict"] == "uncited"
        elif all(v >= min_score for v in sentence["scores"].values()):
            assert sentence["verdict"] == "supported"
        else:
            assert sentence["verdict"] == "unsupported"
        assert sentence["grounded_by"] == [] or sentence["verdict"] == "uncited"
        assert text[sentence["start"] : sentence["end"]] == sentence["text"]


def test_the_summary_counts_unsupported_and_grounded_sentences():
    text = "First [1]. Second [1, 2]. Third. Fourth."
    scores = {(0, 3): 0.9, (1, 3): 0.9, (1, 1): 0.1, (2, 2): 0.8, (3, 1): 0.7, (3, 3): 0.6}
    record = _record(scores, text=text)
    assert [s["grounded_by"] for s in record["sentences"]] == [[], [], [2], [1, 3]]
    assert summarize(record, dropped={2}) == Summary(unsupported=1, grounded_uncited=2, grounded_by_dropped=1)
    assert summarize(record, dropped=set()).grounded_by_dropped == 0
