"""rarity: the chunks an asker may read that hold a term, from the engine's count and the closed chunks'."""

from __future__ import annotations

import pytest

from answers.retrieval.access import Reader
from answers.retrieval.backends import SearchResult
from answers.retrieval.query import MatchPlan, term_weights
from answers.retrieval.rarity import RarityTable, rarity_table, readable_count, without_closed

CAP = 500


@pytest.mark.parametrize(
    ("count", "closed", "readable"),
    [
        (0, 0, 0),  # no chunk holds it
        (3, 3, 0),  # only closed chunks hold it: absent for the asker
        (3, 1, 2),
        (CAP - 1, CAP - 1, 0),
        (CAP - 1, 10, CAP - 11),
        (2 * CAP, 10, 2 * CAP - 10),  # common either way (an estimate less an exact count)
        (30_000, CAP - 1, 30_000 - CAP + 1),
        (CAP, 0, CAP),  # at least CAP, none closed
        (CAP, 1, None),  # at least CAP, one closed: fewer than CAP left, or more? Counted.
        (CAP + 10, 20, None),
        (5 * CAP, CAP, None),  # the closed count stopped at the cap: it cannot be subtracted
    ],
)
def test_the_readable_count_is_exact_or_left_to_be_counted(
    count: int, closed: int, readable: int | None
) -> None:
    assert readable_count(count, closed, cap=CAP) == readable


def _nothing_to_count(terms: list[str]) -> dict[str, int]:
    assert terms == [], "every count was exact: nothing is counted among the readable chunks"
    return {}


def test_a_term_only_closed_chunks_hold_weighs_as_a_term_no_chunk_holds() -> None:
    everyone = RarityTable({"is": 300, "zorblax": 3, "payroll": 4}, 650)
    closed = {"is": 1, "zorblax": 3, "payroll": 0}  # five closed chunks, three saying "zorblax"

    asker = without_closed(everyone, closed, 5, cap=CAP, count_readable=_nothing_to_count)
    weights = term_weights(
        "What is zorblax payroll?", ["is", "zorblax", "payroll"], asker.doc_counts, asker.total
    )
    unknown = term_weights(
        "What is quibbleflux payroll?", ["is", "quibbleflux", "payroll"], asker.doc_counts, asker.total
    )
    before = term_weights("What is zorblax payroll?", ["is", "zorblax", "payroll"], everyone.doc_counts, 650)

    assert asker == RarityTable({"is": 299, "zorblax": 0, "payroll": 4}, 645)
    assert weights["zorblax"] == unknown["quibbleflux"] > 7
    assert weights["payroll"] == unknown["payroll"]
    assert before["zorblax"] == 2.0  # what an anonymous asker learned: a word the corpus uses


def test_only_the_terms_the_figures_cannot_tell_are_counted_among_the_readable_chunks() -> None:
    everyone = RarityTable({"ledger": CAP, "common": 4 * CAP, "rare": 2}, 10_000)
    closed = {"ledger": CAP, "common": 10, "rare": 1}
    asked: list[list[str]] = []

    def count_readable(terms: list[str]) -> dict[str, int]:
        asked.append(terms)
        return {"ledger": 1}

    asker = without_closed(everyone, closed, 700, cap=CAP, count_readable=count_readable)

    assert asked == [["ledger"]]
    assert asker == RarityTable({"ledger": 1, "common": 4 * CAP - 10, "rare": 1}, 9_300)


def test_staff_get_the_engines_table_without_a_query() -> None:
    # No database here: a query would fail the test. Staff read everything, so nothing is subtracted.
    found = SearchResult([], MatchPlan(["zorblax"], False, []), {"zorblax": 3}, 650)

    table = rarity_table(Reader(signed_in=True, staff=True), found)

    assert table == RarityTable({"zorblax": 3}, 650)
