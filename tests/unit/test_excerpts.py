"""The Sources list's excerpt window and its marked passages (answers/excerpts.py)."""

from __future__ import annotations

import pytest

from answers.excerpts import Piece, excerpt_pieces, quote_spans

LONG = " ".join(f"word{i:03d}" for i in range(100))  # 799 characters, "word000 word001 ..."


def shown(pieces: list[Piece]) -> str:
    """The pieces as text, marked ones in [[...]]."""
    return "".join(f"[[{p.text}]]" if p.marked else p.text for p in pieces)


@pytest.mark.parametrize(
    ("excerpt", "spans", "expected"),
    [
        pytest.param("", [], "", id="empty"),
        pytest.param("Short text.", [], "Short text.", id="short/whole"),
        pytest.param("x" * 200, [], "x" * 200, id="no-passage/200-fits"),
        pytest.param("x" * 201, [], "x" * 199 + "…", id="no-passage/one-long-word-cut-like-truncatechars"),
        pytest.param(LONG, [], LONG[:199] + "…", id="no-passage/cut-at-a-word"),
        pytest.param(
            "excluding " * 19 + "globalization",
            [],
            ("excluding " * 19).rstrip() + "…",
            id="no-passage/never-mid-word",
        ),
        pytest.param(
            "Alpha *beta* gamma.", [(6, 12)], "Alpha [[beta]] gamma.", id="markdown/passage-follows-its-text"
        ),
        pytest.param(
            "| a | b |\n| +-----+ |\n|---|:--:|\n| *sub* | `x` |",
            [],
            "a b sub x",
            id="markdown/table-rules-dropped-pipes-read-as-spaces",
        ),
        pytest.param(
            "## Naming\n\nSee [the guide](https://x.test/g) and ![a chart](c.png).\n- one\n> quoted",
            [],
            "Naming See the guide and a chart. one quoted",
            id="markdown/headings-links-images-lists-quotes",
        ),
        pytest.param(
            "snake_case and \\*literal\\* stars", [], "snake_case and *literal* stars", id="markdown/escapes"
        ),
        pytest.param("Alpha beta gamma.", [(6, 10)], "Alpha [[beta]] gamma.", id="marked-in-place"),
        pytest.param("Alpha beta gamma.", [(6, 10), (8, 16)], "Alpha [[beta gamma]].", id="overlaps-merge"),
        pytest.param("Alpha beta gamma.", [(0, 5), (11, 16)], "[[Alpha]] beta [[gamma]].", id="two-passages"),
        pytest.param("Alpha beta.", [(6, 99), (-5, 2)], "[[Al]]pha [[beta.]]", id="clipped-to-the-excerpt"),
        pytest.param("Alpha beta.", [(4, 4)], "Alpha beta.", id="empty-span-ignored"),
        pytest.param(
            LONG,
            [(400, 407)],
            "…word046 word047 word048 word049 [[word050]]" + LONG[407:567] + "…",
            id="far-passage/window-starts-at-a-word-before-it",
        ),
        pytest.param(
            LONG,
            [(8, 15), (600, 607)],
            "word000 [[word001]]" + LONG[15:199] + "…",
            id="only-passages-within-the-window",
        ),
        pytest.param(
            LONG,
            [(100, 700)],
            "…word008 word009 word010 word011 word[[" + LONG[100:463] + "]]…",
            id="long-passage/at-most-twice-the-limit",
        ),
    ],
)
def test_excerpt_window_and_marks(excerpt: str, spans: list[tuple[int, int]], expected: str) -> None:
    assert shown(excerpt_pieces(excerpt, spans)) == expected


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
