"""Reciprocal rank fusion: one candidate list from several ranked lists (pure).

Each list votes 1 / (k + rank) for every item it holds (rank 1 is its best);
an item's fused score is the sum of its votes. Only ranks count, never the
engines' own scores, so bm25, ts_rank_cd and cosine similarity need no common
scale. k = 60 is the value of the original paper (Cormack et al., 2009): it
keeps one list's first place from outweighing an item that both lists rank
well.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

RRF_K = 60

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Fused(Generic[K]):
    """One item of the fused list."""

    key: K
    fused_rank: int  # 1-based position in the fused list
    score: float
    ranks: tuple[int | None, ...]  # the item's 1-based rank in each input list; None where absent


def reciprocal_rank_fusion(rankings: Sequence[Sequence[K]], *, k: int = RRF_K) -> list[Fused[K]]:
    """Every item of the rankings once, best fused score first.

    Ties go to the item the earlier lists rank better (the first list decides
    first), so fusing a single list returns it unchanged.
    """
    ranks: dict[K, list[int | None]] = {}
    for index, ranking in enumerate(rankings):
        for position, key in enumerate(ranking, start=1):
            slot = ranks.setdefault(key, [None] * len(rankings))
            if slot[index] is None:  # a repeated item keeps its best rank
                slot[index] = position
    missing = max((len(r) for r in rankings), default=0) + 1

    def score(item_ranks: list[int | None]) -> float:
        return sum(1.0 / (k + rank) for rank in item_ranks if rank is not None)

    ordered = sorted(
        ranks.items(),
        key=lambda pair: (-score(pair[1]), [missing if r is None else r for r in pair[1]]),
    )
    return [
        Fused(key=key, fused_rank=position, score=score(item_ranks), ranks=tuple(item_ranks))
        for position, (key, item_ranks) in enumerate(ordered, start=1)
    ]
