"""The scanner and render_marker (answers/citations/scan.py): the table (each case pins one clause of
docs/citations.md, worked out by hand), the adversarial inputs and the literal reading."""

from __future__ import annotations

import pytest
from hypothesis import given

from answers.citations import (
    Marker,
    render_marker,
    scan_markers,
)
from tests.fixtures.citation_literal import literal_scan
from tests.fixtures.citation_texts import PROPERTY, texts

RANGE_1_TO_50 = tuple(range(1, 51))

# (text, markers as (start, end, members))
SCAN_CASES = [
    # What is a marker
    pytest.param("see [1].", [(4, 7, (1,))], id="marker/one-number"),
    pytest.param("[1,2]", [(0, 5, (1, 2))], id="marker/members-separated-by-commas"),
    pytest.param("[ 1 , 2 ]", [(0, 9, (1, 2))], id="marker/spaces-around-members-and-commas"),
    pytest.param("[\t1,\t2\t]", [(0, 8, (1, 2))], id="marker/tabs-around-members-and-commas"),
    pytest.param("[1 2]", [], id="marker/members-need-a-comma"),
    pytest.param("[1,]", [], id="marker/trailing-comma-is-text"),
    pytest.param("[,1]", [], id="marker/leading-comma-is-text"),
    pytest.param("[1a]", [], id="marker/letter-is-text"),
    pytest.param("[1;2]", [], id="marker/semicolon-is-text"),
    pytest.param("[]", [], id="marker/empty-is-text"),
    pytest.param("[see 1]", [], id="marker/words-are-text"),
    pytest.param("[1\n]", [], id="marker/newline-is-text"),
    # Ranges
    pytest.param("[2-4]", [(0, 5, (2, 3, 4))], id="range/hyphen"),
    pytest.param("[2\u20134]", [(0, 5, (2, 3, 4))], id="range/en-dash"),
    pytest.param("[3-3]", [(0, 5, (3,))], id="range/N-equal-to-M"),
    pytest.param("[1-50]", [(0, 6, RANGE_1_TO_50)], id="range/M-minus-N-49-is-a-range"),
    pytest.param("[1-51]", [], id="range/M-minus-N-50-is-text"),
    pytest.param("[4-2]", [], id="range/reversed-is-text"),
    pytest.param("[1, 4-2]", [], id="range/one-bad-range-makes-the-whole-bracket-text"),
    pytest.param("[2 - 4]", [], id="range/no-spaces-inside-a-range"),
    pytest.param("[ 2-4 ]", [(0, 7, (2, 3, 4))], id="range/spaces-around-a-range"),
    # Members
    pytest.param("[2-4, 3, 1]", [(0, 11, (2, 3, 4, 1))], id="members/written-order-ranges-expanded"),
    pytest.param("[1,1,2,1]", [(0, 9, (1, 2))], id="members/repeats-removed"),
    pytest.param("[3, 1, 3]", [(0, 9, (3, 1))], id="members/repeat-removed-first-kept"),
    pytest.param("[01]", [(0, 4, (1,))], id="number/leading-zero-is-its-decimal-value"),
    pytest.param("[01, 1]", [(0, 7, (1,))], id="number/01-and-1-are-a-repeat"),
    pytest.param("[0]", [(0, 3, (0,))], id="number/zero-is-a-member"),
    pytest.param(
        "[99999999999999999999]",
        [(0, 22, (99999999999999999999,))],
        id="number/beyond-64-bits-is-a-member",
    ),
    pytest.param("[\u0661]", [], id="number/arabic-indic-digit-is-text"),
    pytest.param("[\uff11]", [], id="number/fullwidth-digit-is-text"),
    pytest.param("[1\u0661]", [], id="number/non-ascii-digit-inside-is-text"),
    # Adjacent and nested brackets
    pytest.param("[1][3]", [(0, 3, (1,)), (3, 6, (3,))], id="adjacent/two-markers"),
    pytest.param("[[1]]", [(1, 4, (1,))], id="nested/inner-bracket-is-the-marker"),
    # Links, reference definitions, escapes
    pytest.param("[1](x)", [], id="link/bracket-followed-by-paren"),
    pytest.param("![1](img.png)", [], id="link/image"),
    pytest.param("[1] (x)", [(0, 3, (1,))], id="link/space-before-paren-is-a-marker"),
    pytest.param("[1]: https://a.example/", [], id="reference-definition/at-text-start"),
    pytest.param("a\n[1]: x", [], id="reference-definition/at-line-start"),
    pytest.param("a\r\n[1]: x", [], id="reference-definition/after-crlf"),
    pytest.param("see [1]: x", [(4, 7, (1,))], id="reference-definition/mid-line-is-a-marker"),
    pytest.param(" [1]: x", [(1, 4, (1,))], id="reference-definition/indented-is-a-marker"),
    pytest.param("\\[1]", [], id="escape/backslash-before-bracket"),
    pytest.param("\\\\[1]", [], id="escape/bracket-after-two-backslashes-is-still-preceded-by-one"),
    pytest.param("\\ [1]", [(2, 5, (1,))], id="escape/not-immediately-preceded"),
    # Fenced code blocks
    pytest.param("```\n[1]\n```\n[2]", [(12, 15, (2,))], id="fence/backticks"),
    pytest.param("~~~\n[1]\n~~~\n[2]", [(12, 15, (2,))], id="fence/tildes"),
    pytest.param(
        "```python [3]\n[1]\n```\n[2]", [(22, 25, (2,))], id="fence/anything-may-follow-the-opening"
    ),
    pytest.param("```\n[1]", [], id="fence/unclosed-runs-to-the-end"),
    pytest.param("```\n[1]\n~~~\n[2]", [], id="fence/closes-only-with-the-same-three-characters"),
    pytest.param("~~~\n[1]\n```\n[2]\n~~~\n[3]", [(20, 23, (3,))], id="fence/other-fence-inside-is-code"),
    pytest.param("````\n[1]\n```\n[2]", [], id="fence/closes-only-with-a-run-at-least-as-long"),
    pytest.param("````\n[1]\n`````\n[2]", [(15, 18, (2,))], id="fence/a-longer-run-closes"),
    pytest.param("```\n[1]\n``` [2]\n[3]", [], id="fence/a-closing-line-holds-nothing-else"),
    pytest.param("```\n[1]\n```  \n[3]", [(14, 17, (3,))], id="fence/blanks-may-follow-the-closing-run"),
    pytest.param(" ```\n[1]", [], id="fence/up-to-three-spaces-before-it"),
    pytest.param("    ```\n[1]", [], id="fence/indented-code-is-off-so-four-spaces-still-fence"),
    pytest.param("a ```\n[1]", [(6, 9, (1,))], id="fence/must-start-its-line"),
    pytest.param("```a`b\n[1]", [(7, 10, (1,))], id="fence/a-backtick-fence-info-holds-no-backtick"),
    pytest.param("> ~~~\n> print(a[1])\n> ~~~\nSee [2].", [(30, 33, (2,))], id="fence/in-a-block-quote"),
    pytest.param("- step\n\n  ```\n  a[1]\n  ```\n- next [2]", [(34, 37, (2,))], id="fence/in-a-list-item"),
    pytest.param("> ```\n> a[1]\n\n[2]", [(14, 17, (2,))], id="fence/ends-with-its-block-quote"),
    pytest.param("``\n[1]", [(3, 6, (1,))], id="fence/two-backticks-are-no-fence"),
    pytest.param("a ```\n[1]\n```", [(6, 9, (1,))], id="fence/opens-even-after-an-unclosed-inline-run"),
    # A fenced block's info string (the rest of its opening line) is code, whatever it holds.
    pytest.param("```\\1. 1. [7]~~~\n[2]", [], id="fence/an-info-string-is-code-to-the-end-of-its-line"),
    pytest.param("1. 1. ~~~ [7]\n[2]", [(14, 17, (2,))], id="fence/an-info-string-is-code-in-a-nested-list"),
    # A fence-like line indented four spaces or more: it opens a fence after a blank line (indented
    # code is off), but in a paragraph it is a continuation line, its run an inline one.
    pytest.param("\n    ```\n[1]", [], id="fence/four-spaces-after-a-blank-line-open-a-fence"),
    pytest.param("a\n    ```\n[1]", [(10, 13, (1,))], id="fence/four-spaces-in-a-paragraph-continue-it"),
    # Inline code spans
    pytest.param("`[1]` [2]", [(6, 9, (2,))], id="span/code-is-not-a-marker"),
    pytest.param("`x`[1]", [(3, 6, (1,))], id="span/marker-right-after-a-span"),
    pytest.param("``a ` [1] ``", [], id="span/closes-only-with-a-run-of-the-same-length"),
    pytest.param("`` [1] `", [(3, 6, (1,))], id="span/run-without-partner-is-text"),
    pytest.param("`a\n[1]\nb` [2]", [(10, 13, (2,))], id="span/crosses-lines"),
    pytest.param("`a\\` [1] `", [(5, 8, (1,))], id="span/backslash-does-not-escape-a-backtick"),
    pytest.param("` [1] `` [2] `` [3] `", [], id="span/runs-inside-a-span-are-its-content"),
    pytest.param("`\n```\n[1]\n```\n` [2]", [(16, 19, (2,))], id="span/never-reaches-across-a-fenced-block"),
    pytest.param("`a\n\n[1] b`", [(4, 7, (1,))], id="span/never-reaches-across-a-blank-line"),
    pytest.param("# `a\n[1] b`", [(5, 8, (1,))], id="span/never-reaches-out-of-a-heading"),
    pytest.param("\\`[1]` x", [(2, 5, (1,))], id="span/an-escaped-backtick-opens-nothing"),
    pytest.param(
        "| key | use |\n|---|---|\n| `a | b [1]` |", [(33, 36, (1,))], id="span/never-reaches-across-a-cell"
    ),
    pytest.param(
        "| a | b |\n|---|---|\n| c | d | [1] |", [], id="table/a-cell-past-the-columns-is-never-shown"
    ),
    # Where a hand notion of code and CommonMark parted ways, as the reader now sees it.
    pytest.param(
        "Press the ` key to open the console [2].\n\nThen type `help` to list the commands [1].",
        [(36, 39, (2,)), (80, 83, (1,))],
        id="reader/a-lone-backtick-pairs-with-nothing-past-a-blank-line",
    ),
    pytest.param(
        "````\nprint(a[1])\n```\n[2]\n````\n[3]",
        [(30, 33, (3,))],
        id="reader/a-four-backtick-fence-is-not-closed-by-three",
    ),
]


@pytest.mark.parametrize(("text", "expected"), SCAN_CASES)
def test_scan_markers(text: str, expected: list[tuple[int, int, tuple[int, ...]]]) -> None:
    assert scan_markers(text) == [Marker(start, end, members) for start, end, members in expected]


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        pytest.param([1], "[1]", id="render/one"),
        pytest.param([3, 1], "[1, 3]", id="render/ascending"),
        pytest.param((2, 2, 1), "[1, 2]", id="render/distinct"),
    ],
)
def test_render_marker(members: list[int], expected: str) -> None:
    assert render_marker(members) == expected


def test_render_marker_needs_a_member() -> None:
    with pytest.raises(ValueError, match="at least one member"):
        render_marker([])


# Inputs that would take quadratic time (or worse) in a naive scanner. The
# benchmark times them; here they must merely finish and be right.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("[" + "1" * 10**6, [], id="adversarial/unclosed-bracket-then-a-million-digits"),
        pytest.param("[" * 10**6, [], id="adversarial/a-million-brackets"),
        pytest.param("`" * 10**6, [], id="adversarial/one-run-of-a-million-backticks"),
        pytest.param("[1," * 250_000, [], id="adversarial/unclosed-lists"),
        pytest.param(
            "[" + "1," * 250_000 + "1]", [(0, 500_003, (1,))], id="adversarial/one-marker-of-a-million-chars"
        ),
        pytest.param(
            " ".join("`" * n for n in range(1, 1001)) + " [1]",
            [(501_500, 501_503, (1,))],
            id="adversarial/runs-of-every-length-unpaired",
        ),
        pytest.param(
            "` `` " * 100_000 + "[1]", [(500_000, 500_003, (1,))], id="adversarial/many-paired-runs"
        ),
        pytest.param(
            "\n```\n[1]" * 50_000,
            [(13 + 16 * k, 16 + 16 * k, (1,)) for k in range(25_000)],
            id="adversarial/many-fences",
        ),
    ],
)
def test_adversarial_inputs_scan_correctly(
    text: str, expected: list[tuple[int, int, tuple[int, ...]]]
) -> None:
    assert [(m.start, m.end, m.members) for m in scan_markers(text)] == expected


def _as_tuples(text: str) -> list[tuple[int, int, tuple[int, ...]]]:
    return [(m.start, m.end, m.members) for m in scan_markers(text)]


# --- Property: the literal reading ------------------------------------------


@PROPERTY
@given(texts)
def test_scanner_agrees_with_the_literal_reading(text: str) -> None:
    assert _as_tuples(text) == literal_scan(text)


# The streaming engine (answers.citations.LiveDisplay) is held to the whole-text functions, the
# scanner included, on every split: tests/unit/citations/test_live.py.
