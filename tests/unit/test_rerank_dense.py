"""The reranker's dense component: meaning alone can pass the threshold; without it, scores are unchanged."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from answers.retrieval.rerank import DENSE_WEIGHT, WEIGHTS, LexicalReranker, Passage

TERMS = ["break", "loop"]
BREAK = Passage("The break statement", "", "break terminates the nearest enclosing loop.", 1.0)
UNRELATED = Passage("Lambdas", "", "Lambda expressions create anonymous functions.", 0.0)


def _four_part(passage: Passage) -> float:
    parts = LexicalReranker().components(TERMS, passage)
    return sum(WEIGHTS[k] * parts[k] for k in WEIGHTS)


@pytest.mark.parametrize("passage", [BREAK, UNRELATED], ids=["matching", "unrelated"])
def test_without_a_dense_similarity_the_score_is_the_four_part_one(passage: Passage) -> None:
    assert LexicalReranker().score(TERMS, [passage]) == [min(1.0, _four_part(passage))]
    assert "dense" not in LexicalReranker().components(TERMS, passage)


@pytest.mark.parametrize(
    ("passage", "dense", "expected"),
    [
        pytest.param(UNRELATED, 0.6, 0.3, id="meaning-only-passage-reaches-the-default-threshold"),
        pytest.param(UNRELATED, 0.0, 0.0, id="no-words-no-meaning-scores-nothing"),
        pytest.param(UNRELATED, -0.4, 0.0, id="negative-similarity-counts-as-none"),
    ],
)
def test_the_dense_component_takes_half_the_weight(passage: Passage, dense: float, expected: float) -> None:
    scored = Passage(passage.title, passage.heading, passage.text, passage.lexical, dense)
    assert LexicalReranker().score(TERMS, [scored]) == [pytest.approx(expected)]


def test_a_perfect_similarity_adds_half_to_half_the_lexical_score() -> None:
    scored = Passage(BREAK.title, BREAK.heading, BREAK.text, BREAK.lexical, 1.0)
    assert LexicalReranker().score(TERMS, [scored]) == [pytest.approx(0.5 * _four_part(BREAK) + 0.5)]


def test_components_show_the_dense_part_when_there_is_one() -> None:
    scored = Passage(BREAK.title, BREAK.heading, BREAK.text, BREAK.lexical, 0.8)
    assert LexicalReranker().components(TERMS, scored)["dense"] == 0.8


@given(st.floats(0, 1), st.floats(-1, 1))
def test_hybrid_score_is_the_mix_of_the_lexical_score_and_the_similarity(
    lexical: float, dense: float
) -> None:
    plain = Passage("A title", "", "break out of the loop early", lexical)
    hybrid = Passage(plain.title, plain.heading, plain.text, lexical, dense)
    (base,) = LexicalReranker().score(TERMS, [plain])
    (mixed,) = LexicalReranker().score(TERMS, [hybrid])
    assert 0.0 <= mixed <= 1.0
    assert mixed == pytest.approx((1 - DENSE_WEIGHT) * base + DENSE_WEIGHT * max(0.0, dense))
