"""The Sources list's excerpt window and its marked passages (answers/excerpts.py)."""

from __future__ import annotations

from typing import Any

import pytest

from answers.excerpts import excerpt_pieces, quote_spans
from tests.fixtures.excerpts import EXCERPT_CASES

LONG = " ".join(f"word{i:03d}" for i in range(100))  # 799 characters, "word000 word001 ..."


def shown(pieces: list[list[Any]]) -> str:
    """Pieces ([text, marked]) as text, marked ones in [[...]]."""
    return "".join(f"[[{text}]]" if marked else text for text, marked in pieces)


@pytest.mark.parametrize("case", EXCERPT_CASES, ids=[case["name"] for case in EXCERPT_CASES])
def test_the_shared_table(case: dict[str, Any]) -> None:
    # The page's excerpt code passes the same table (tests/browser/test_source_quotes.py).
    excerpt = case["excerpt"]
    spans = quote_spans(excerpt, case["quotes"]) + [tuple(span) for span in case["passages"]]
    assert [[p.text, p.marked] for p in excerpt_pieces(excerpt, spans)] == case["pieces"]


def test_the_table_reads_as_intended() -> None:
    # A few of its rows as a reader sees them (marked pieces in [[...]]).
    by_name = {case["name"]: case for case in EXCERPT_CASES}

    def shown_case(name: str) -> str:
        return shown(by_name[name]["pieces"])

    assert shown_case("markdown/passage-follows-its-text") == "Alpha [[beta]] gamma."
    assert shown_case("clipped-to-the-excerpt") == "[[Al]]pha [[beta.]]"
    assert shown_case("no-passage/cut-at-a-word") == LONG[:199] + "…"
    assert shown_case("far-passage/window-starts-at-a-word-before-it") == (
        "…word046 word047 word048 word049 [[word050]]" + LONG[407:567] + "…"
    )
    assert shown_case("long-passage/at-most-twice-the-limit") == (
        "…word008 word009 word010 word011 word[[" + LONG[100:463] + "]]…"
    )


def test_plain_text_is_never_altered_only_cut() -> None:
    pieces = excerpt_pieces(LONG, [(400, 407)])
    text = "".join(p.text for p in pieces).strip("…")
    assert text in LONG


@pytest.mark.parametrize("cut", range(150, 260, 7))
def test_a_cut_window_ends_at_a_word(cut: int) -> None:
    words = " ".join(["globally"] * 60)
    pieces = excerpt_pieces(words, [(cut, cut + 8)])
    shown_text = "".join(p.text for p in pieces)
    for part in shown_text.strip("…").split(" "):
        assert part == "globally"


def test_quotes_not_in_the_excerpt_mark_nothing() -> None:
    assert quote_spans("Zebras live in grassland.", ["in  grassland", "on the moon", ""]) == [(12, 24)]
