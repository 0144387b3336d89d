"""Streaming text in pieces (answers.citations.LiveDisplay, the one streaming engine): what each piece
displays and cites, and when a marker split across pieces, a fence or a code span is decided.

The cases are pieces of raw text and, for each feed() and then close(), the
display it returns and the sources it cites first as (final number, original
number). Twenty sources: nothing here is out of range. tests/fixtures/citation_texts.py
reads these cases as texts for the property and event tests.
"""

from __future__ import annotations

import pytest

from answers.citations import LiveDisplay, scan_markers
from answers.citations.trail import compute_trail

SOURCES = 20
NO_DIALECTS: tuple[str, ...] = ()

Released = list[tuple[str, list[tuple[int, int]]]]


def _released(pieces: list[str]) -> Released:
    """What feed() returns for each piece, then what close() returns."""
    live = LiveDisplay(SOURCES, NO_DIALECTS)
    steps = [live.feed(piece) for piece in pieces] + [live.close()]
    return [(step.display, step.cited) for step in steps]


# (pieces, what each feed() and then close() displays and cites)
CASES = [
    pytest.param(
        ["... [1", "2] ..."],
        [("...", []), (" [1] ...", [(1, 12)]), ("", [])],
        id="split-marker/released-when-complete-in-its-final-number",
    ),
    pytest.param(
        ["[1", ", 2", "-4", "]", " x"],
        [
            ("", []),
            ("", []),
            ("", []),
            ("", []),
            ("[1, 2, 3, 4] x", [(1, 1), (2, 2), (3, 3), (4, 4)]),
            ("", []),
        ],
        id="split-marker/held-until-the-next-character",
    ),
    pytest.param(
        ["[1]", "(x)"], [("", []), ("[1](x)", []), ("", [])], id="split-marker/link-decided-by-the-next-piece"
    ),
    pytest.param(
        ["a\n[1]", ": x"],
        [("a\n", []), ("[1]: x", []), ("", [])],
        id="split-marker/reference-definition-across-pieces",
    ),
    pytest.param(
        ["a [1]", ": x"],
        [("a", []), (" [1]: x", [(1, 1)]), ("", [])],
        id="split-marker/colon-mid-line-keeps-it",
    ),
    pytest.param(
        ["\\", "[1] "], [("\\", []), ("", []), ("[1] ", [])], id="split-marker/escape-in-the-previous-piece"
    ),
    pytest.param(["[1]"], [("", []), ("[1]", [(1, 1)])], id="close/releases-a-marker-at-the-very-end"),
    pytest.param(["[1", "2"], [("", []), ("", []), ("[12", [])], id="close/unfinished-bracket-is-text"),
    pytest.param(
        ["x [1] y", "", " [2] z"],
        [("x [1] y", [(1, 1)]), ("", []), (" [2] z", [(2, 2)]), ("", [])],
        id="feed/empty-piece",
    ),
    pytest.param(
        ["x [7] y", " [3] and [7]", "."],
        [("x [1] y", [(1, 7)]), (" [2] and", [(2, 3)]), (" [1].", []), ("", [])],
        id="renumber/first-citation-order-from-the-first-marker",
    ),
    # Fences split across pieces
    pytest.param(
        ["``", "`\n[1]\n``", "`\n[2] "],
        [("", []), ("```\n[1]\n", []), ("```\n", []), ("[1] ", [(1, 2)])],
        id="fence/opening-and-closing-split",
    ),
    pytest.param(
        ["~", "~~x [1]\n", "[2] "],
        [("", []), ("~~~x [1]\n", []), ("", []), ("[2] ", [])],
        id="fence/unclosed-runs-to-the-end",
    ),
    pytest.param(
        ["```\n[1]\n``", "x\n[2] "],
        [("```\n[1]\n", []), ("``x\n", []), ("[2] ", [])],
        id="fence/two-backticks-do-not-close",
    ),
    pytest.param(
        ["````\n> ````\n", "x [3]"],
        # The fence is in no quote: "> ````" is its text, not its closing line.
        [("````\n> ````\n", []), ("x", []), (" [3]", [])],
        id="fence/a-quoted-run-does-not-close-an-unquoted-fence",
    ),
    pytest.param(
        ["> ````\n> a\n", "> ````\n", "x [3]"],
        [("", []), ("", []), ("> ````\n> a\n> ````\nx", []), (" [1]", [(1, 3)])],
        id="fence/a-quoted-fence-closes-at-its-quoted-run",
    ),
    # Inline code spans across pieces
    pytest.param(
        ["`a [1]", " b` [2] "],
        [("", []), ("", []), ("`a [1] b` [1] ", [(1, 2)])],
        id="span/markers-after-an-open-run-wait-for-its-partner",
    ),
    pytest.param(
        ["`a [1] b"], [("", []), ("`a [1] b", [(1, 1)])], id="span/close-makes-an-unmatched-run-text"
    ),
    pytest.param(
        ["x [1] `a [2]\n``", "`"],
        [("x [1] ", [(1, 1)]), ("", []), ("`a [2]\n```", [(2, 2)])],
        id="span/a-fence-line-makes-an-unmatched-run-text",
    ),
    pytest.param(
        ["``a [1] `", "` [2] "],
        [("", []), ("", []), ("``a [1] `` [1] ", [(1, 2)])],
        id="span/run-split-across-pieces",
    ),
    pytest.param(
        ["`", "`", "`x [1] "],
        # A backtick fence's info string holds no backtick: the opening line waits for its end.
        [("", []), ("", []), ("", []), ("```x [1] ", [])],
        id="span/line-start-run-grows-into-a-fence",
    ),
]


@pytest.mark.parametrize(("pieces", "expected"), CASES)
def test_stream_releases(pieces: list[str], expected: Released) -> None:
    assert _released(pieces) == expected


@pytest.mark.parametrize(("pieces", "expected"), CASES)
def test_stream_agrees_with_the_whole_text(pieces: list[str], expected: object) -> None:
    steps = _released(pieces)
    trail = compute_trail("".join(pieces), SOURCES, dialects=NO_DIALECTS)
    assert "".join(display for display, _ in steps) == trail.final_text
    cited = [pair for _, pairs in steps for pair in pairs]
    assert cited == sorted(
        (s.final_number, s.original_number)
        for s in trail.sources
        if s.final_number is not None and not trail.fallback
    )


def test_markers_in_small_pieces_come_out_in_order_with_their_final_numbers() -> None:
    live = LiveDisplay(SOURCES, NO_DIALECTS)
    text = "".join(f"Sentence {n} [{21 - n}]. " for n in range(1, 21))
    shown = [live.feed(text[i : i + 7]).display for i in range(0, len(text), 7)] + [live.close().display]
    display = "".join(shown)
    assert [display[m.start : m.end] for m in scan_markers(display)] == [f"[{n}]" for n in range(1, 21)]


def test_a_long_unfinished_marker_is_only_kept() -> None:
    live = LiveDisplay(SOURCES, NO_DIALECTS)
    assert live.feed("a [1").display == "a"
    for _ in range(10_000):
        assert live.feed(", 1").display == ""
    step = live.feed("] b")
    assert (step.display, step.cited) == (" [1] b", [(1, 1)])
    assert live.close().display == ""


def test_a_long_open_span_holds_everything_after_it() -> None:
    live = LiveDisplay(SOURCES, NO_DIALECTS)
    assert live.feed("`").display == ""
    for n in range(1, 1_000):
        assert live.feed(f" [{n % SOURCES + 1}]").display == ""
    step = live.close()
    assert step.cited == [(k, k + 1) for k in range(1, SOURCES)] + [(SOURCES, 1)]
    assert step.display.startswith("` [1] [2]")


def test_feed_after_close_is_an_error() -> None:
    live = LiveDisplay(SOURCES)
    live.close()
    with pytest.raises(ValueError, match="after close"):
        live.feed("[1]")


def test_close_twice_is_an_error() -> None:
    live = LiveDisplay(SOURCES)
    live.close()
    with pytest.raises(ValueError, match="twice"):
        live.close()
