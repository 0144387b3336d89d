"""rarity: the chunks an asker may read that hold a term, from the engine's count and the closed chunks'."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from answers.retrieval.access import Reader
from answers.retrieval.backends import SearchResult
from answers.retrieval.query import MatchPlan, term_weights
from answers.retrieval.rarity import RarityTable, rarity_table, readable_count, readable_table

CAP = 500


@pytest.mark.parametrize(
    ("count", "counted", "share", "readable"),
    [
        (CAP, 0, 0.9, 0),  # every chunk holding it is closed
        (CAP, 1, 0.9, 1),
        (30_000, CAP - 1, 0.9, CAP - 1),  # fewer than the cap: exact
        (CAP, CAP, 0.9, CAP),  # at least the cap: the engine's figure, scaled to what the asker reads
        (30_000, CAP, 0.9, 27_000),
        (30_000, CAP, 0.01, CAP),  # never under what was counted
    ],
)
def test_the_readable_count_of_a_common_term(count: int, counted: int, share: float, readable: int) -> None:
    assert readable_count(count, counted, cap=CAP, share=share) == readable


Counter = Callable[[list[str], int], dict[str, int]]


def _counter(readable: dict[str, int], asked: list[tuple[list[str], int]]) -> Counter:
    """Counts as an engine would: the readable chunks holding each term, up to the limit."""

    def count(terms: list[str], limit: int) -> dict[str, int]:
        asked.append((sorted(terms), limit))
        return {t: min(readable[t], limit) for t in terms}

    return count


def test_a_term_only_closed_chunks_hold_weighs_as_a_term_no_chunk_holds() -> None:
    everyone = RarityTable({"is": 300, "zorblax": 3, "payroll": 4}, 650)
    readable = {"is": 299, "zorblax": 0, "payroll": 4}  # of 645: five chunks are closed

    asker = readable_table(everyone, 5, cap=CAP, count=_counter(readable, []))
    weights = term_weights(
        "What is zorblax payroll?", ["is", "zorblax", "payroll"], asker.doc_counts, asker.total
    )
    unknown = term_weights(
        "What is quibbleflux payroll?", ["is", "quibbleflux", "payroll"], asker.doc_counts, asker.total
    )
    before = term_weights("What is zorblax payroll?", ["is", "zorblax", "payroll"], everyone.doc_counts, 650)
    exact = term_weights("What is zorblax payroll?", ["is", "zorblax", "payroll"], readable, 645)

    assert asker.total == 645
    assert asker.doc_counts["zorblax"] == 0
    assert weights == exact  # as if counted exactly
    assert weights["zorblax"] == unknown["quibbleflux"] > 7
    assert weights["payroll"] == unknown["payroll"]
    assert before["zorblax"] == 2.0  # what an anonymous asker learned: a word the corpus uses


def test_a_rare_term_is_looked_for_once_a_common_one_counted_up_to_the_cap() -> None:
    everyone = RarityTable({"ledger": CAP, "common": 4 * CAP, "rare": 2, "nowhere": 0}, 2_000)
    readable = {"ledger": 1, "common": 4 * CAP - 100, "rare": 1}
    asked: list[tuple[list[str], int]] = []

    asker = readable_table(everyone, 200, cap=CAP, count=_counter(readable, asked))

    assert asked == [(["rare"], 1), (["common", "ledger"], CAP)]
    # "rare" weighs as any term held by one to two chunks of 1,800: the engine's count stands.
    assert asker == RarityTable({"ledger": 1, "common": 1_800, "rare": 2, "nowhere": 0}, 1_800)
    # Where the counts are exact, or weigh the same as the exact ones, so do the weights.
    terms = ["ledger", "rare", "nowhere"]
    exact = {**readable, "nowhere": 0}
    assert term_weights("ledger rare nowhere", terms, asker.doc_counts, 1_800) == term_weights(
        "ledger rare nowhere", terms, exact, 1_800
    )


def test_staff_get_the_engines_table_without_a_query() -> None:
    # No database here: a query would fail the test. Staff read everything, so nothing is subtracted.
    found = SearchResult([], MatchPlan(["zorblax"], False, []), {"zorblax": 3}, 650)

    table = rarity_table(Reader(signed_in=True, staff=True), found)

    assert table == RarityTable({"zorblax": 3}, 650)
