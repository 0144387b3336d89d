"""Unit tests of answers.citations.LiveDisplay: the streamed display agrees with the whole-text functions."""

from __future__ import annotations

from collections.abc import Collection

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from answers.citations import (
    LiveDisplay,
    Step,
    finalize_citations,
    normalize_markers,
    scan_markers,
    strip_out_of_range_markers,
)
from tests.fixtures.citation_texts import dialect_texts, source_counts, table_texts, texts

PROPERTY = settings(max_examples=400, deadline=None, derandomize=True)
NO_DIALECTS: tuple[str, ...] = ()


def _steps(pieces: list[str], count: int, dialects: Collection[str] | None = None) -> list[Step]:
    """What feed() returns for each piece, then what close() returns."""
    live = LiveDisplay(count, dialects)
    return [live.feed(piece) for piece in pieces] + [live.close()]


def _whole(raw: str, count: int, dialects: Collection[str] | None) -> tuple[str, list[tuple[int, int]]]:
    """The final text and the (new, original) number of each reference, from the whole-text functions."""
    stripped = strip_out_of_range_markers(normalize_markers(raw, dialects).text, count).text
    final = finalize_citations(stripped, list(range(1, count + 1)))
    return final.text, [] if final.fallback else list(enumerate(final.references, start=1))


def _assert_agrees(pieces: list[str], count: int, dialects: Collection[str] | None) -> None:
    steps = _steps(pieces, count, dialects)
    text, references = _whole("".join(pieces), count, dialects)
    assert "".join(step.display for step in steps) == text
    assert [pair for step in steps for pair in step.cited] == references
    # Each number is cited in the step that first displays it, or earlier.
    cited_in = {k: i for i, step in enumerate(steps) for k, _ in step.cited}
    ends = []
    shown = 0
    for step in steps:
        shown += len(step.display)
        ends.append(shown)
    for marker in scan_markers(text):
        shown_in = next(i for i, end in enumerate(ends) if end > marker.start)
        assert all(cited_in[k] <= shown_in for k in marker.members), marker


def _splits(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({min(cut, len(text)) for cut in cuts})
    return [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]


def _assert_agrees_on_every_split(text: str, count: int, dialects: Collection[str] | None) -> None:
    for cut in range(len(text) + 1):
        _assert_agrees([text[:cut], text[cut:]], count, dialects)
    _assert_agrees(list(text), count, dialects)


# (pieces, source count, dialects, display of each feed() and then close(), cited pairs of each)
CASES = [
    pytest.param(
        ["The sky is blue."], 2, NO_DIALECTS, ["The sky is blue.", ""], [[], []], id="prose/shown-at-once"
    ),
    pytest.param(
        ["Hello ", "world."],
        2,
        NO_DIALECTS,
        ["Hello", " world.", ""],
        [[], [], []],
        id="blanks/held-until-the-next-word",
    ),
    pytest.param(
        ["A [3]", ". B [1]."],
        3,
        NO_DIALECTS,
        ["A", " [1]. B [2].", ""],
        [[], [(1, 3), (2, 1)], []],
        id="marker/final-numbers-from-the-first",
    ),
    pytest.param(
        ["see [", "2", "]", " x"],
        2,
        NO_DIALECTS,
        ["see", "", "", " [1] x", ""],
        [[], [], [], [(1, 2)], []],
        id="marker/unfinished-held-until-the-character-after-it",
    ),
    pytest.param(
        ["[1] and", " more"],
        1,
        NO_DIALECTS,
        ["[1] and", " more", ""],
        [[(1, 1)], [], []],
        id="marker/text-after-a-closed-marker-shown-at-once",
    ),
    pytest.param(
        ["[1]", "(x) y"],
        1,
        NO_DIALECTS,
        ["", "[1](x) y", ""],
        [[], [], []],
        id="link/decided-by-the-next-piece",
    ),
    pytest.param(
        ["a\n[1]", ": x"],
        1,
        NO_DIALECTS,
        ["a\n", "[1]: x", ""],
        [[], [], []],
        id="definition/decided-by-the-next-piece",
    ),
    pytest.param(
        ["Foo [9]", "."], 1, NO_DIALECTS, ["Foo", ".", ""], [[], [], []], id="strip/blanks-go-with-the-marker"
    ),
    pytest.param(
        ["Foo [9] ", "bar [1]."],
        1,
        NO_DIALECTS,
        ["Foo", " bar [1].", ""],
        [[], [(1, 1)], []],
        id="strip/else-the-blanks-after-it",
    ),
    pytest.param(
        ["No markers at all."],
        3,
        NO_DIALECTS,
        ["No markers at all.", ""],
        [[], []],
        id="fallback/text-as-it-is",
    ),
    pytest.param(
        ["a `b [1]", " c` d [1]."],
        1,
        NO_DIALECTS,
        ["a ", "`b [1] c` d [1].", ""],
        [[], [(1, 1)], []],
        id="code/open-span-held-until-its-partner",
    ),
    pytest.param(
        ["```\n[1] x", "\n```\n[1] y"],
        1,
        NO_DIALECTS,
        ["```\n[1] x", "\n```\n[1] y", ""],
        [[], [(1, 1)], []],
        id="code/fenced-block-shown-as-it-comes",
    ),
    pytest.param(
        ["`[2]`", "[9]`", " [1]"],
        2,
        NO_DIALECTS,
        ["", "", "", "`[1]`` [2]"],
        [[], [], [], [(1, 2), (2, 1)]],
        id="join/a-removal-merging-backtick-runs-unmakes-a-span",
    ),
    pytest.param(
        ["\\ [9]", "[1] x"],
        1,
        NO_DIALECTS,
        ["\\", "[1] x", ""],
        [[], [], []],
        id="join/a-removal-escapes-a-marker",
    ),
    pytest.param(
        ["[[9]1", "] x"],
        1,
        NO_DIALECTS,
        ["", "[1] x", ""],
        [[], [(1, 1)], []],
        id="join/a-removal-makes-a-marker",
    ),
    pytest.param(
        ["\n~[9]~", "~ x [1]"],
        1,
        NO_DIALECTS,
        ["\n", "", "~~~ x [1]"],  # (the first line break is settled: a new line starts either way)
        [[], [], []],
        id="join/a-removal-opens-a-fence-so-the-rest-waits-for-the-end",
    ),
    pytest.param(
        ["a \u3010", "2\u3011", " b"],
        2,
        None,
        ["a", "", " [1] b", ""],
        [[], [], [(1, 2)], []],
        id="dialect/fullwidth-held-until-decided",
    ),
    pytest.param(
        ["a [", "1", "2", "\u0663", "]", " b"],
        3,
        None,
        ["a", "", "", " [12\u0663", "]", " b", ""],
        [[], [], [], [], [], [], []],
        id="held-open/a-non-ascii-digit-is-no-member",
    ),
    pytest.param(
        ["a [", "1", ",", " ", "3", "]", " b"],
        3,
        None,
        ["a", "", "", "", "", "", " [1, 2] b", ""],
        [[], [], [], [], [], [], [(1, 1), (2, 3)], []],
        id="held-open/members-fed-one-at-a-time",
    ),
    pytest.param(
        ["a [cita", "tion: 2] b"],
        2,
        None,
        ["a", " [1] b", ""],
        [[], [(1, 2)], []],
        id="dialect/label-held-while-a-prefix",
    ),
    pytest.param(
        ["a [2\u2020sou", "rce] b"],
        2,
        None,
        ["a", " [1] b", ""],
        [[], [(1, 2)], []],
        id="dialect/dagger-held-to-its-close",
    ),
    pytest.param(
        ["x\n[^1]: http", "s://a.example\n", "y [^1]."],
        1,
        None,
        ["x\n", "", "y [1].", ""],
        [[], [], [(1, 1)], []],
        id="dialect/footnote-definition-line-held-then-removed",
    ),
    pytest.param(
        ["a [cita", "tion: 2] b"],
        2,
        NO_DIALECTS,
        ["a [cita", "tion: 2] b", ""],
        [[], [], []],
        id="dialect/off-means-text",
    ),
]

# The last spec edge cases: a line of blanks so far may yet continue a paragraph (a fence-like
# line indented four spaces there opens nothing) or open a fence after a blank line; a dagger's
# text and a definition's line may hold code. By id, as CASES.
EDGE_CASES = {
    "indented-fence/a-line-of-blanks-waits-for-what-it-continues": pytest.param(
        ["[1]\n    ", "```\n    ```[7]"], 0, NO_DIALECTS, ["", "", "\n    ```\n    ```"], [[], [], []]
    ),
    "indented-fence/in-a-paragraph-it-is-a-continuation-line": pytest.param(
        ["a\n    ", "```\n[1]"], 1, NO_DIALECTS, ["a\n", "", "    ```\n[1]"], [[], [], [(1, 1)]]
    ),
    "info-string/a-marker-there-is-code": pytest.param(
        ["```py [", "1]\nx"], 1, NO_DIALECTS, ["", "```py [1]\nx", ""], [[], [], []]
    ),
    "dialect/a-dagger-text-holding-a-code-span": pytest.param(
        ["a [1\u2020`x", "`] b"], 1, None, ["a", " [1] b", ""], [[], [(1, 1)], []]
    ),
    "dialect/a-definition-line-holding-a-backtick-run-goes-whole": pytest.param(
        ["[^1]: note```\n", "x``` [1]"], 1, None, ["", "", "x``` [1]"], [[], [], [(1, 1)]]
    ),
}
CASES += [pytest.param(*case.values, id=name) for name, case in EDGE_CASES.items()]


@pytest.mark.parametrize(("pieces", "count", "dialects", "displays", "cited"), CASES)
def test_live_display_steps(
    pieces: list[str],
    count: int,
    dialects: Collection[str] | None,
    displays: list[str],
    cited: list[list[tuple[int, int]]],
) -> None:
    steps = _steps(pieces, count, dialects)
    assert [step.display for step in steps] == displays
    assert [step.cited for step in steps] == cited
    _assert_agrees(pieces, count, dialects)


@pytest.mark.parametrize("dialects", [NO_DIALECTS, None], ids=["dialects-off", "dialects-all"])
@pytest.mark.parametrize("count", [0, 1, 2, 3, 5])
def test_agrees_on_every_split_of_every_table_text(count: int, dialects: Collection[str] | None) -> None:
    for text in table_texts():
        _assert_agrees_on_every_split(text, count, dialects)


@PROPERTY
@given(texts, source_counts)
def test_agrees_with_the_whole_text_on_every_split(text: str, count: int) -> None:
    _assert_agrees_on_every_split(text, count, NO_DIALECTS)


@PROPERTY
@given(st.one_of(texts, dialect_texts), source_counts)
def test_agrees_with_the_whole_text_on_every_split_with_dialects(text: str, count: int) -> None:
    _assert_agrees_on_every_split(text, count, None)


@PROPERTY
@given(
    st.one_of(texts, dialect_texts),
    source_counts,
    st.lists(st.integers(min_value=0, max_value=400), max_size=12),
    st.sampled_from([NO_DIALECTS, None]),
)
def test_agrees_with_the_whole_text_on_any_splits(
    text: str, count: int, cuts: list[int], dialects: Collection[str] | None
) -> None:
    _assert_agrees(_splits(text, cuts), count, dialects)


@PROPERTY
@given(
    st.lists(st.sampled_from(["The", " sky", " is", " blue", ".", ",", " 1990", "-", " ", "\t", "(x)", ":"]))
)
def test_prose_is_shown_in_the_step_that_brings_it_but_its_trailing_blanks(pieces: list[str]) -> None:
    live = LiveDisplay(3)
    received = shown = ""
    for piece in pieces:
        received += piece
        shown += live.feed(piece).display
        assert shown == received.rstrip(" \t")


@PROPERTY
@given(texts.map(lambda text: text.replace("`", "").replace("~", "")), source_counts)
def test_without_code_nothing_waits_past_a_letter(text: str, count: int) -> None:
    live = LiveDisplay(count, NO_DIALECTS)
    received = ""
    for char in text:
        live.feed(char)
        received += char
        # (A line break may wait: whether a removal emptied its line, ending the paragraph, decides
        # how the next line reads in CommonMark; a letter that continues the line settles it.)
        if char in "abx":
            assert live.held == 0, received


def test_a_long_answer_holds_only_a_short_stretch() -> None:
    # A 1 MB answer in 20-character pieces: the engine keeps a short stretch, never
    # the answer, and does it in one go (the benchmark bench/bench_live.py times it).
    unit = "Sources agree on this point [2]. Others differ [1, 7]. Code `x[1]` stays.\n\n"
    text = unit * (1_000_000 // len(unit))
    live = LiveDisplay(3)
    shown: list[str] = []
    peak = 0
    for start in range(0, len(text), 20):
        shown.append(live.feed(text[start : start + 20]).display)
        peak = max(peak, live.held)
    shown.append(live.close().display)
    assert "".join(shown) == _whole(text, 3, None)[0]
    assert peak < 40


def test_feed_after_close_and_a_second_close_are_refused() -> None:
    live = LiveDisplay(1)
    live.close()
    with pytest.raises(ValueError, match="after close"):
        live.feed("x")
    with pytest.raises(ValueError, match="twice"):
        live.close()
