"""The default reranker's components: known cases, and agreement with a literal reading of its definition."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from answers.retrieval.query import STEM_KEEPS, stem, tokenize
from answers.retrieval.rerank import WEIGHTS, LexicalReranker, Passage, proximity, term_weight

RERANKER = LexicalReranker()


def literal_components(terms: list[str], passage: Passage) -> dict[str, float]:
    """The module docstring read word by word: every word of the passage stemmed, no shortcut."""
    weights: dict[str, float] = {}
    for term in terms:
        weights[stem(term)] = max(weights.get(stem(term), 0.0), term_weight(term))
    total = sum(weights.values())
    if not total:
        return dict.fromkeys(WEIGHTS, 0.0)
    stems = [stem(w) for w in tokenize(passage.text)]
    positions = [(i, s) for i, s in enumerate(stems) if s in weights]
    title = {stem(w) for w in tokenize(passage.title + " " + passage.heading)}
    found = {s for s in stems if s in weights} | title
    return {
        "coverage": sum(w for s, w in weights.items() if s in found) / total,
        "lexical": min(1.0, max(0.0, passage.lexical)),
        "title": sum(w for s, w in weights.items() if s in title) / total,
        "proximity": proximity(list(weights), positions),
    }


@pytest.mark.parametrize(
    ("terms", "passage", "expected"),
    [
        # Every term, in the title, side by side, the best lexical match: 1.0 throughout.
        (
            ["yield", "statement"],
            Passage("The yield statement", "", "A yield statement suspends the function.", 1.0),
            {"coverage": 1.0, "lexical": 1.0, "title": 1.0, "proximity": 1.0},
        ),
        # Plurals and -ing forms match their stems; two terms in a window of four words: 1 / 3.
        (
            ["class", "define"],
            Passage("Misc", "", "Classes are what defining code makes.", 0.5),
            {"coverage": 1.0, "lexical": 0.5, "title": 0.0, "proximity": 1 / 3},
        ),
        # A weak term counts a quarter: "with" found, "context" not: 0.25 / 1.25.
        (
            ["with", "context"],
            Passage("Statements", "", "Use with to open a file.", 0.2),
            {"coverage": 0.2, "lexical": 0.2, "title": 0.0, "proximity": 0.0},
        ),
        # Only in the heading: coverage and title, no proximity in the text.
        (
            ["lambda"],
            Passage("Expressions", "Lambdas", "Small anonymous functions.", 0.9),
            {"coverage": 1.0, "lexical": 0.9, "title": 1.0, "proximity": 0.0},
        ),
        # Nothing in common.
        (
            ["zebra"],
            Passage("Horses", "", "Horses graze.", 0.0),
            {"coverage": 0.0, "lexical": 0.0, "title": 0.0, "proximity": 0.0},
        ),
    ],
)
def test_components(terms: list[str], passage: Passage, expected: dict[str, float]) -> None:
    assert RERANKER.components(terms, passage) == pytest.approx(expected)
    combined = sum(WEIGHTS[k] * v for k, v in expected.items())
    assert RERANKER.score(terms, [passage]) == pytest.approx([combined])


WORDS = st.sampled_from(
    ["class", "classes", "classy", "statement", "statements", "defined", "define", "defining", "with",
     "for", "is", "ties", "tie", "boxes", "box", "run", "runs", "running", "zebra", "Zebras", "a", "I",
     "stress", "stresses", "stories", "story", "ÉCOLE", "école", "x1", "_", "-", ",", "[1]"]
)  # fmt: skip
TEXT = st.lists(st.one_of(WORDS, st.text(max_size=8)), max_size=40).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(terms=st.lists(WORDS.map(str.lower), max_size=5), text=TEXT, title=TEXT, lexical=st.floats(-1, 2))
def test_components_agree_with_the_literal_reading(
    terms: list[str], text: str, title: str, lexical: float
) -> None:
    passage = Passage(title, "", text, lexical)
    assert RERANKER.components(terms, passage) == literal_components(terms, passage)


@given(st.text())
def test_a_stem_keeps_the_start_of_its_word(text: str) -> None:
    """What the reranker's filter relies on: only a word starting like X[:3] can stem to X."""
    for word in tokenize(text):
        assert stem(word)[:STEM_KEEPS] == word[:STEM_KEEPS]
