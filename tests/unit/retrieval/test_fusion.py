"""Reciprocal rank fusion: one candidate list from the lexical and the dense rankings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from answers.retrieval.fusion import RRF_K, reciprocal_rank_fusion

CASES = [
    pytest.param([["a", "b", "c"]], ["a", "b", "c"], id="one-list-comes-back-unchanged"),
    pytest.param([["a", "b"], ["b", "a"]], ["a", "b"], id="a-tie-goes-to-the-first-lists-order"),
    pytest.param([["a", "b", "c"], ["b"]], ["b", "a", "c"], id="found-by-both-beats-first-in-one"),
    pytest.param([["a"], ["x", "y"]], ["a", "x", "y"], id="first-places-tie-then-the-first-list-wins"),
    pytest.param([[], ["x", "y"]], ["x", "y"], id="an-empty-list-changes-nothing"),
    pytest.param([[], []], [], id="nothing-in-nothing-out"),
    pytest.param([["a", "a", "b"]], ["a", "b"], id="a-repeated-item-keeps-its-best-rank"),
]


@pytest.mark.parametrize(("rankings", "expected"), CASES)
def test_fused_order(rankings: list[list[str]], expected: list[str]) -> None:
    assert [f.key for f in reciprocal_rank_fusion(rankings)] == expected


def test_each_item_records_its_rank_in_each_list_and_its_score() -> None:
    fused = {f.key: f for f in reciprocal_rank_fusion([["a", "b"], ["b", "c"]])}

    assert fused["a"].ranks == (1, None)
    assert fused["b"].ranks == (2, 1)
    assert fused["c"].ranks == (None, 2)
    assert fused["b"].score == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert [fused[k].fused_rank for k in ("b", "a", "c")] == [1, 2, 3]


def test_a_small_k_lets_one_lists_first_place_win() -> None:
    rankings = [["solo", *(f"x{i}" for i in range(8)), "both"], ["y1", "both"]]
    assert reciprocal_rank_fusion(rankings)[0].key == "both"
    assert reciprocal_rank_fusion(rankings, k=1)[0].key == "solo"


rankings_strategy = st.lists(st.lists(st.integers(0, 30), max_size=20, unique=True), min_size=1, max_size=3)


@given(rankings_strategy)
def test_every_item_appears_once_numbered_from_one(rankings: list[list[int]]) -> None:
    fused = reciprocal_rank_fusion(rankings)

    assert sorted(f.key for f in fused) == sorted({k for r in rankings for k in r})
    assert [f.fused_rank for f in fused] == list(range(1, len(fused) + 1))
    assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)
    for f in fused:
        for ranking, rank in zip(rankings, f.ranks, strict=True):
            assert rank == (ranking.index(f.key) + 1 if f.key in ranking else None)


@given(rankings_strategy)
def test_an_item_first_in_every_list_it_is_in_and_in_all_lists_comes_first(rankings: list[list[int]]) -> None:
    firsts = {r[0] for r in rankings if r}
    if len(firsts) != 1 or not all(rankings):
        return
    assert reciprocal_rank_fusion(rankings)[0].key == next(iter(firsts))
