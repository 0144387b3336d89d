"""Strip (answers/citations/strip.py): the table of cases by hand, deep nesting, huge numbers, and the
properties (the literal pass-by-pass reading, nothing out of range left, idempotent)."""

from __future__ import annotations

import pytest
from hypothesis import given

from answers.citations import (
    scan_markers,
    strip_out_of_range_markers,
)
from answers.citations.strip import remove_markers, strip_pass
from tests.fixtures.citation_literal import literal_strip
from tests.fixtures.citation_texts import PROPERTY, source_counts, texts

# (text, source count, text after, stripped members)
STRIP_CASES = [
    # The spec's examples
    pytest.param("Foo [9].", 1, "Foo.", [9], id="strip/removes-the-blank-run-before"),
    pytest.param("[9] Foo", 1, "Foo", [9], id="strip/else-the-blank-run-after"),
    pytest.param("a [9] [8] b", 1, "a b", [9, 8], id="strip/each-removal-on-the-text-left-by-the-last"),
    pytest.param("[3, 9, 1]", 3, "[3, 1]", [9], id="strip/keeps-some-members-rerendered"),
    # Kept byte for byte
    pytest.param("[1]", 1, "[1]", [], id="strip/in-range-untouched"),
    pytest.param("[ 01 ,1 ]", 1, "[ 01 ,1 ]", [], id="strip/untouched-byte-for-byte"),
    pytest.param("`[9]` [9]", 1, "`[9]`", [9], id="strip/code-span-untouched"),
    pytest.param("```\n[9]\n```\n[9]", 1, "```\n[9]\n```\n", [9], id="strip/fenced-block-untouched"),
    pytest.param("[9](x) [9]: y", 1, "[9](x): y", [9], id="strip/link-untouched"),
    # Which members go
    pytest.param("[0]", 3, "", [0], id="strip/zero-is-out-of-range"),
    pytest.param("x [0, 2]", 3, "x [2]", [0], id="strip/zero-removed-from-a-list"),
    pytest.param("[2-4]", 3, "[2, 3]", [4], id="strip/range-rerendered-as-numbers"),
    pytest.param("[3, 5, 1, 2]", 2, "[1, 2]", [3, 5], id="strip/stripped-in-written-order"),
    pytest.param("[2, 9, 1]", 2, "[2, 1]", [9], id="strip/rerendered-in-written-order-not-sorted"),
    pytest.param(
        "[99999999999999999999] x",
        5,
        "x",
        [99999999999999999999],
        id="strip/number-beyond-64-bits",
    ),
    pytest.param("[1]", 0, "", [1], id="strip/no-sources-strips-everything"),
    # The blank run
    pytest.param("a\t[9]\tb", 1, "a\tb", [9], id="strip/tab-run-before"),
    pytest.param("a  \t [9]x", 1, "ax", [9], id="strip/whole-run-before"),
    pytest.param("x[9]y", 1, "xy", [9], id="strip/no-run-on-either-side"),
    pytest.param("[9]", 1, "", [9], id="strip/marker-alone"),
    pytest.param("a [9]\n[8] b", 1, "a\nb", [9, 8], id="strip/newline-is-not-a-blank"),
    pytest.param("[9][1]", 1, "[1]", [9], id="strip/adjacent-marker-kept"),
    pytest.param("[1] [9] [8]", 1, "[1]", [9, 8], id="strip/run-before-each-in-turn"),
    # Repeated passes
    pytest.param("[[9]1]", 1, "[1]", [9], id="passes/removal-closes-a-new-marker"),
    pytest.param("[2[9]]", 2, "[2]", [9], id="passes/new-marker-in-range-is-kept"),
    pytest.param("[9[9[9]]]", 1, "", [9, 9, 9], id="passes/one-pass-per-nesting-level"),
    pytest.param("[9[9]] tail", 1, "tail", [9, 9], id="passes/next-pass-judges-blanks-anew"),
    pytest.param(" [9[9]][9]", 1, "", [9, 9, 9], id="passes/later-pass-takes-the-run-before"),
    pytest.param(
        "[9]```\n[5]\n```\n[7]\n```",
        1,
        "```\n\n```\n\n```",
        [9, 5, 7],
        id="passes/removal-starts-a-fence-line",
    ),
    pytest.param("x``[9]` [5] `", 1, "x``` `", [9, 5], id="passes/removal-merges-backtick-runs"),
    pytest.param("\\ [9][1]", 1, "\\[1]", [9], id="passes/removal-escapes-the-next-marker"),
    pytest.param("a\n[9] [1]: x", 1, "a\n[1]: x", [9], id="passes/removal-makes-a-reference-definition"),
    pytest.param("[1][9] (x)", 1, "[1] (x)", [9], id="passes/a-marker-not-starting-a-line-goes-alone"),
    pytest.param(
        "[9]\n    ```\n[1] [8]",
        1,
        "\n    ```\n[1]",
        [9, 8],
        id="passes/removal-ends-a-paragraph-so-a-four-space-line-opens-a-fence",
    ),
    pytest.param("[9]```py [1]", 1, "```py [1]", [9], id="passes/removal-puts-a-marker-in-an-info-string"),
    pytest.param("great[9] and", 1, "great and", [9], id="reader/no-two-words-joined"),
    pytest.param(
        "> ~~~\n> print(a[1])\n> ~~~\nSee [4].",
        3,
        "> ~~~\n> print(a[1])\n> ~~~\nSee.",
        [4],
        id="reader/code-in-a-quoted-fence-is-not-touched",
    ),
]


@pytest.mark.parametrize(("text", "count", "expected_text", "expected_stripped"), STRIP_CASES)
def test_strip_out_of_range_markers(
    text: str, count: int, expected_text: str, expected_stripped: list[int]
) -> None:
    result = strip_out_of_range_markers(text, count)
    assert (result.text, result.stripped) == (expected_text, expected_stripped)


def test_adversarial_nesting_strips_one_level_per_pass() -> None:
    result = strip_out_of_range_markers("[9" * 20_000 + "]" * 20_000, 1)
    assert result.text == ""
    assert result.stripped == [9] * 20_000


def test_adversarial_huge_number_is_its_value() -> None:
    (marker,) = scan_markers("[" + "9" * 5000 + "]")
    assert marker.members == (10**5000 - 1,)
    assert strip_out_of_range_markers("a [" + "9" * 5000 + "]", 3).stripped == [10**5000 - 1]


# --- Properties ---------------------------------------------------------------


@PROPERTY
@given(texts, source_counts)
def test_strip_agrees_with_the_literal_pass_by_pass_reading(text: str, count: int) -> None:
    result = strip_out_of_range_markers(text, count)
    assert (result.text, result.stripped) == literal_strip(text, count)


@PROPERTY
@given(texts, source_counts)
def test_strip_leaves_no_member_out_of_range_and_is_idempotent(text: str, count: int) -> None:
    once = strip_out_of_range_markers(text, count)
    assert all(1 <= m <= count for marker in scan_markers(once.text) for m in marker.members)
    twice = strip_out_of_range_markers(once.text, count)
    assert twice.text == once.text
    assert twice.stripped == []


@PROPERTY
@given(texts)
def test_removing_every_marker_by_hand_is_strips_first_pass_with_no_source(text: str) -> None:
    # remove_markers (the history's marker-free text, the extractive answerer's quotes) removes
    # each marker with the blanks strip takes: one rule, strip.blanks_taken.
    assert remove_markers(text, scan_markers(text)) == strip_pass(text, 0, [])[0]
