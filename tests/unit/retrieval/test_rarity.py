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
        if terms:
            asked.append((sorted(terms), limit))
        return {t: min(readable[t], limit) for t in terms}

    return count


def test_a_term_only_closed_chunks_hold_weighs_as_a_term_no_chunk_holds() -> None:
    everyone = RarityTable({"is": 300, "zorblax": 3, "payroll": 4}, 650)
    readable = {"is": 299, "zorblax": 0, "payroll": 4}  # of 645: five chunks are closed

    asker = readable_table(everyone, 5, cap=CAP, count=_counter(readable, []))
    terms = ["is", "zorblax", "payroll"]
    weights = term_weights("What is zorblax payroll?", terms, asker.doc_counts, asker.total)
    unknown = term_weights(
        "What is quibbleflux payroll?", ["is", "quibbleflux", "payroll"], asker.doc_counts, asker.total
    )
    before = term_weights("What is zorblax payroll?", terms, everyone.doc_counts, 650)
    exact = term_weights("What is zorblax payroll?", terms, readable, 645)

    assert (asker.total, asker.doc_counts["zorblax"]) == (645, 0)
    assert weights == pytest.approx(exact, abs=0.01)  # as if counted exactly
    assert weights["zorblax"] == unknown["quibbleflux"] > 7
    assert weights["payroll"] == unknown["payroll"]
    assert before["zorblax"] == 2.0  # what an anonymous asker learned: a word the corpus uses


def test_only_terms_closed_chunks_alone_may_hold_are_looked_for_and_only_common_ones_counted() -> None:
    # 2,000 chunks, 200 closed.
    everyone = RarityTable(
        {"nowhere": 0, "rare": 210, "few": 3, "closed": 5, "common": 1_200, "bound": CAP}, 2_000
    )
    readable = {"few": 1, "closed": 0, "common": 1_100, "bound": 2 * CAP}
    asked: list[tuple[list[str], int]] = []

    asker = readable_table(everyone, 200, cap=CAP, count=_counter(readable, asked))

    # Held by more chunks than are closed, and counted exactly: "rare" needs no look.
    assert asked == [(["bound", "closed", "common", "few"], 1)]
    assert asker == RarityTable(
        # "rare" and "few" weigh RARITY_CAP for any count: the engine's stands. The common ones are
        # held by n - 200 to n readable chunks (n at least the engine's): scaled to 90 %, within that.
        {"nowhere": 0, "rare": 210, "few": 3, "closed": 0, "common": 1_080, "bound": 450},
        1_800,
    )
    exact = {**readable, "nowhere": 0, "rare": 180}
    terms = ["rare", "few", "closed", "nowhere"]
    assert term_weights("", terms, asker.doc_counts, 1_800) == term_weights("", terms, exact, 1_800)


def test_a_common_term_closed_chunks_alone_may_hold_is_counted_up_to_the_cap() -> None:
    # 2,000 chunks, 1,500 closed: "mostly" is in 400 chunks, all but ten of them closed.
    everyone = RarityTable({"mostly": 400, "open": 450}, 2_000)
    asked: list[tuple[list[str], int]] = []

    asker = readable_table(everyone, 1_500, cap=CAP, count=_counter({"mostly": 10, "open": 450}, asked))

    assert asked == [(["mostly", "open"], 1), (["mostly", "open"], CAP)]
    assert asker == RarityTable({"mostly": 10, "open": 450}, 500)


def test_staff_get_the_engines_table_without_a_query() -> None:
    # No database here: a query would fail the test. Staff read everything, so nothing is subtracted.
    found = SearchResult([], MatchPlan(["zorblax"], False, []), {"zorblax": 3}, 650)

    table = rarity_table(Reader(signed_in=True, staff=True), found)

    assert table == RarityTable({"zorblax": 3}, 650)
