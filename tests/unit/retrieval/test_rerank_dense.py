"""The reranker's dense component: it raises a score towards the similarity, never lowers it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from answers.conf import MIN_SCORE_DEFAULT
from answers.retrieval.rerank import DENSE_WEIGHT, LexicalReranker, Passage, with_dense

TERMS = ["break", "loop"]
BREAK = Passage("Break a loop", "", "A loop break ends the nearest enclosing loop.", 1.0)
UNRELATED = Passage("Lambdas", "", "Lambda expressions create anonymous functions.", 0.0)


def _lexical(passage: Passage) -> float:
    (value,) = LexicalReranker().score(TERMS, [passage])
    return value


def _with(passage: Passage, dense: float) -> Passage:
    return Passage(passage.title, passage.heading, passage.text, passage.lexical, dense)


@pytest.mark.parametrize("passage", [BREAK, UNRELATED], ids=["matching", "unrelated"])
def test_without_a_dense_similarity_the_score_is_the_lexical_one(passage: Passage) -> None:
    assert "dense" not in LexicalReranker().components(TERMS, passage)
    assert _lexical(passage) == (1.0 if passage is BREAK else 0.0)


@pytest.mark.parametrize(
    ("passage", "dense", "expected"),
    [
        pytest.param(UNRELATED, 0.8, 0.28, id="meaning-only-passage-reaches-the-default-threshold"),
        pytest.param(UNRELATED, 0.0, 0.0, id="no-words-no-meaning-scores-nothing"),
        pytest.param(UNRELATED, -0.4, 0.0, id="negative-similarity-counts-as-none"),
        pytest.param(BREAK, 0.2, 1.0, id="a-weak-similarity-never-lowers-an-exact-match"),
    ],
)
def test_the_dense_similarity_raises_the_score_towards_it(
    passage: Passage, dense: float, expected: float
) -> None:
    assert LexicalReranker().score(TERMS, [_with(passage, dense)]) == [pytest.approx(expected)]


def test_components_show_the_dense_part_when_there_is_one() -> None:
    assert LexicalReranker().components(TERMS, _with(BREAK, 0.8))["dense"] == 0.8


@given(st.floats(-1, 1))
def test_hybrid_score_is_the_lexical_one_raised_towards_the_similarity(dense: float) -> None:
    plain = Passage("A title", "", "break out of the loop early", 0.3)
    base = _lexical(plain)
    (mixed,) = LexicalReranker().score(TERMS, [_with(plain, dense)])
    assert base <= mixed <= 1.0
    assert mixed == pytest.approx(base + DENSE_WEIGHT * max(0.0, max(0.0, dense) - base))


def test_a_meaning_only_passage_passes_the_default_threshold_and_an_unrelated_one_does_not() -> None:
    assert with_dense(0.0, 0.75) >= MIN_SCORE_DEFAULT > with_dense(0.0, 0.5)


@given(st.floats(0, 1), st.floats(-1, 1))
def test_the_benchmarks_weight_sweep_spans_lexical_alone_to_the_best_of_both(
    lexical: float, dense: float
) -> None:
    # bench_relevance sweeps the weight from 0 (the lexical score) to 1 (the larger of the two).
    assert with_dense(lexical, dense, 0.0) == pytest.approx(lexical)
    assert with_dense(lexical, dense, 1.0) == pytest.approx(max(lexical, min(1.0, max(0.0, dense))))
    assert with_dense(lexical, dense) == pytest.approx(with_dense(lexical, dense, DENSE_WEIGHT))
