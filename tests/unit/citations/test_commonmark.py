"""The citation core held against CommonMark: on generated Markdown replies, what the
reader sees in the rendered answer is what the trail decided, at `done` and on every stream."""

from __future__ import annotations

from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import answers.citations.code as code_module
import answers.citations.strip as strip_module
from answers.citations import LiveDisplay, normalize_markers, strip_out_of_range_markers
from answers.citations.code import code_regions, code_tail
from answers.citations.markdown import Parsed, code_and_blocks
from answers.citations.trail import compute_trail, final_markers
from answers.rendering import render_answer_html
from tests.fixtures.citation_texts import markdown_replies, split_at, stream_cuts, texts, with_dialects
from tests.fixtures.commonmark import foreign_code_lines, linked_numbers, plain_marker

# Thousands of replies: CommonMark's corners (lists, quotes, tables, fences) come up rarely each.
MANY = settings(max_examples=1000, deadline=None, derandomize=True)


def _rendered(reply: str, count: int) -> tuple[str, str, int, bool]:
    """The final text, its HTML as the `done` event and the permalink give it, the number of final
    references, and whether the answer fell back."""
    trail = compute_trail(reply, count)
    references = count if trail.fallback else sum(1 for s in trail.sources if s.final_number is not None)
    html = render_answer_html(
        trail.final_text, reference_count=references, markers=final_markers(trail.markers_json())
    )
    return trail.final_text, html, references, trail.fallback


@MANY
@given(markdown_replies, st.integers(min_value=0, max_value=4))
def test_no_marker_is_shown_as_plain_text(reply: str, count: int) -> None:
    _, html, _, _ = _rendered(reply, count)
    assert plain_marker(html) is None, html


@MANY
@given(markdown_replies, st.integers(min_value=0, max_value=4))
def test_nothing_inside_code_is_rewritten(reply: str, count: int) -> None:
    _, html, _, _ = _rendered(reply, count)
    # Code is the reply's own text, or text that a removal of prose joined into code (strip may
    # merge two backtick runs, docs/citations.md): never text finalize renumbered.
    stripped = strip_out_of_range_markers(normalize_markers(reply).text, count).text
    assert foreign_code_lines(html, (reply, stripped)) == [], html


@MANY
@given(markdown_replies, st.integers(min_value=0, max_value=4))
def test_every_final_reference_is_linked_from_the_text(reply: str, count: int) -> None:
    _, html, references, fallback = _rendered(reply, count)
    assert linked_numbers(html) == (set() if fallback else set(range(1, references + 1))), html


@settings(max_examples=600, deadline=None, derandomize=True)
@given(markdown_replies, st.integers(min_value=0, max_value=4), stream_cuts)
def test_the_stream_displays_what_done_shows(reply: str, count: int, cuts: list[int]) -> None:
    final_text, _, _, _ = _rendered(reply, count)
    live = LiveDisplay(count)
    shown = "".join(live.feed(piece).display for piece in split_at(reply, cuts)) + live.close().display
    assert shown == final_text


# --- The shortcuts of answers/citations/{code,blocks}.py against the plain way (same results, less work) ---

_replies_in_a_row = st.lists(markdown_replies, min_size=1, max_size=4).map("\n\n".join)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.one_of(_replies_in_a_row, texts))
def test_code_is_where_one_parse_of_the_whole_text_puts_it(text: str) -> None:
    # Only the chunks that may hold blocks are parsed (all at once); plain paragraphs are paired alone.
    assert code_regions(text) == code_and_blocks(Parsed(text))[0]


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.one_of(_replies_in_a_row, texts), st.integers(min_value=0, max_value=4))
def test_strip_skips_a_pass_only_where_it_would_change_nothing(text: str, count: int) -> None:
    shortcut = strip_out_of_range_markers(text, count)
    with patch.object(strip_module, "removals_keep_code", lambda *_: False):
        full = strip_out_of_range_markers(text, count)
    assert (shortcut.text, shortcut.stripped) == (full.text, full.stripped)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.one_of(_replies_in_a_row, texts))
def test_a_one_paragraph_tail_is_what_the_parse_says(text: str) -> None:
    if code_module.one_paragraph(text):
        with patch.object(code_module, "one_paragraph", lambda _: False):
            parsed = code_tail(text)
        assert code_tail(text) == parsed


# Markdown replies with dialect markers and footnote definitions among their lines, after a
# paragraph's line or a blank one, before indented lines, lists and fences.
_with_definitions = st.lists(
    st.tuples(
        st.one_of(
            markdown_replies,
            st.sampled_from(
                [
                    "[^1]: a source",
                    "[^2]: `x` y",
                    "[^3]: a | b",
                    "x [1\u2020a]",
                    "\u30101\u3011 and [[2]]",
                    "- [^1]: z",
                    "    indented [1]",
                    "  ```\n  a[1]\n  ```",
                ]
            ),
        ),
        st.sampled_from(["\n", "\n", "\n\n"]),
    ),
    max_size=6,
).map(lambda pieces: "".join(piece + after for piece, after in pieces))


# Lines around footnote definitions whose removal may reshape blocks: lists, quotes, fences and
# indented lines a list could take in, lines that cannot interrupt a paragraph, setext underlines.
_definition_lines = st.lists(
    st.sampled_from(
        [
            "[^1]: x", "[^2]: y", "", "", "- a `b", "1. a", "> a `b`", "a `b`", "c` d", "  ```",
            "```", "~~~", "foo [1]", "    more `x`", "  b `c`", "2. z `w`", "===", "---", "a | b",
            "|--|--|", "x [9]",
        ]
    ),
    max_size=10,
).map("\n".join)  # fmt: skip


@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    st.one_of(_with_definitions, _definition_lines, with_dialects, texts),
    st.integers(min_value=0, max_value=4),
)
def test_normalize_hands_strip_the_code_of_its_text(text: str, count: int) -> None:
    # Where its rewrites moved no code, normalize tells strip where code is in its output.
    normalized = normalize_markers(text)
    if normalized.code is not None:
        assert normalized.code.text is normalized.text
        assert normalized.code.regions == code_regions(normalized.text)
    handed = strip_out_of_range_markers(normalized.text, count, code=normalized.code)
    alone = strip_out_of_range_markers(normalized.text, count)
    assert (handed.text, handed.stripped) == (alone.text, alone.stripped)


@pytest.mark.parametrize(
    ("text", "handed"),
    [
        pytest.param("para `a`\n[^1]: x\nmore", True, id="a-paragraph-continued"),
        pytest.param("See `a` [^1].\n\n[^1]: one\n[^2]: two\n", True, id="a-list-of-definitions-at-the-end"),
        pytest.param("`a`\n\n[^1]: x\n\n- b", True, id="between-blank-lines-before-an-unindented-block"),
        pytest.param(
            "- a\n\n[^1]: x\n\n  ```\nfoo\n  ```", False, id="a-list-would-take-the-indented-fence-in"
        ),
        pytest.param(
            "- a `b\n\n[^1]: x\n[^2]: y\n    more `x`", False, id="the-stretch-goes-whole-then-a-list-goes-on"
        ),
        pytest.param("`a`\n\n[^1]: x\n2. z", False, id="a-line-that-could-not-interrupt-it-may-start-a-list"),
        pytest.param("a `b` [1\u2020x|y]", False, id="a-dagger-holding-a-pipe"),
    ],
)
def test_normalize_hands_on_the_code_only_where_its_rewrites_moved_none(text: str, handed: bool) -> None:
    normalized = normalize_markers(text)
    assert (normalized.code is not None) == handed
    if normalized.code is not None:
        assert normalized.code.regions == code_regions(normalized.text)
