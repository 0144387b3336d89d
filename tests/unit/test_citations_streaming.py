"""Unit tests of answers.citations.MarkerStream: what each piece releases, and when."""

from __future__ import annotations

import pytest

from answers.citations import Marker, MarkerStream, scan_markers


def _released(pieces: list[str]) -> list[list[tuple[int, int, tuple[int, ...]]]]:
    """What feed() returns for each piece, then what close() returns."""
    stream = MarkerStream()
    steps = [stream.feed(piece) for piece in pieces] + [stream.close()]
    return [[(m.start, m.end, m.members) for m in step] for step in steps]


# (pieces, what each feed() and then close() returns)
CASES = [
    pytest.param(
        ["... [1", "2] ..."],
        [[], [(4, 8, (12,))], []],
        id="split-marker/released-when-complete",
    ),
    pytest.param(
        ["[1", ", 2", "-4", "]", " x"],
        [[], [], [], [], [(0, 8, (1, 2, 3, 4))], []],
        id="split-marker/held-until-the-next-character",
    ),
    pytest.param(["[1]", "(x)"], [[], [], []], id="split-marker/link-decided-by-the-next-piece"),
    pytest.param(["a\n[1]", ": x"], [[], [], []], id="split-marker/reference-definition-across-pieces"),
    pytest.param(["a [1]", ": x"], [[], [(2, 5, (1,))], []], id="split-marker/colon-mid-line-keeps-it"),
    pytest.param(["\\", "[1] "], [[], [], []], id="split-marker/escape-in-the-previous-piece"),
    pytest.param(["[1]"], [[], [(0, 3, (1,))]], id="close/releases-a-marker-at-the-very-end"),
    pytest.param(["[1", "2"], [[], [], []], id="close/unfinished-bracket-is-text"),
    pytest.param(["x [1] y", "", " [2] z"], [[(2, 5, (1,))], [], [(8, 11, (2,))], []], id="feed/empty-piece"),
    # Fences split across pieces
    pytest.param(
        ["``", "`\n[1]\n``", "`\n[2] "],
        [[], [], [(12, 15, (2,))], []],
        id="fence/opening-and-closing-split",
    ),
    pytest.param(["~", "~~x [1]\n", "[2] "], [[], [], [], []], id="fence/unclosed-runs-to-the-end"),
    pytest.param(["```\n[1]\n``", "x\n[2] "], [[], [], []], id="fence/two-backticks-do-not-close"),
    # Inline code spans across pieces
    pytest.param(
        ["`a [1]", " b` [2] "],
        [[], [(10, 13, (2,))], []],
        id="span/markers-after-an-open-run-wait-for-its-partner",
    ),
    pytest.param(["`a [1] b"], [[], [(3, 6, (1,))]], id="span/close-makes-an-unmatched-run-text"),
    pytest.param(
        ["x [1] `a [2]\n``", "`"],
        [[(2, 5, (1,))], [(9, 12, (2,))], []],
        id="span/a-fence-line-makes-an-unmatched-run-text",
    ),
    pytest.param(["``a [1] `", "` [2] "], [[], [(11, 14, (2,))], []], id="span/run-split-across-pieces"),
    pytest.param(["`", "`", "`x [1] "], [[], [], [], []], id="span/line-start-run-grows-into-a-fence"),
]


@pytest.mark.parametrize(("pieces", "expected"), CASES)
def test_stream_releases(pieces: list[str], expected: list[list[tuple[int, int, tuple[int, ...]]]]) -> None:
    assert _released(pieces) == expected


@pytest.mark.parametrize(("pieces", "expected"), CASES)
def test_stream_agrees_with_the_whole_text_scan(pieces: list[str], expected: object) -> None:
    released = [m for step in _released(pieces) for m in step]
    assert released == [(m.start, m.end, m.members) for m in scan_markers("".join(pieces))]


def test_positions_are_offsets_in_the_whole_text() -> None:
    stream = MarkerStream()
    text = "".join(f"Sentence {n} [{n}]. " for n in range(1, 200))
    found: list[Marker] = []
    for i in range(0, len(text), 7):
        found += stream.feed(text[i : i + 7])
    found += stream.close()
    assert [text[m.start : m.end] for m in found] == [f"[{n}]" for n in range(1, 200)]


def test_a_long_unfinished_marker_is_only_kept() -> None:
    stream = MarkerStream()
    assert stream.feed("a [1") == []
    for _ in range(10_000):
        assert stream.feed(", 1") == []
    assert stream.feed("] b") == [Marker(2, 30_005, (1,))]
    assert stream.close() == []


def test_a_long_open_span_holds_everything_after_it() -> None:
    stream = MarkerStream()
    assert stream.feed("`") == []
    for n in range(1, 1_000):
        assert stream.feed(f" [{n}]") == []
    assert [m.members for m in stream.close()] == [(n,) for n in range(1, 1_000)]


def test_feed_after_close_is_an_error() -> None:
    stream = MarkerStream()
    stream.close()
    with pytest.raises(ValueError, match="after close"):
        stream.feed("[1]")


def test_close_twice_is_an_error() -> None:
    stream = MarkerStream()
    stream.close()
    with pytest.raises(ValueError, match="twice"):
        stream.close()
