"""Property tests of answers.citations: the properties of docs/citations.md, and literal readings agree."""

from __future__ import annotations

from hypothesis import given

from answers.citations import (
    finalize_citations,
    render_marker,
    scan_markers,
    strip_out_of_range_markers,
)
from tests.fixtures.citation_texts import PROPERTY, source_counts, texts
from tests.fixtures.commonmark import code_brackets

# --- Literal readings of the spec, written for clarity, not speed ----------------


def _members_of(content: str) -> tuple[int, ...] | None:
    values: list[int] = []
    for part in content.split(","):
        part = part.strip(" \t")
        dash = next((d for d in "-\u2013" if d in part), None)
        bounds = part.split(dash) if dash else [part]
        if len(bounds) > 2 or not all(b and b.isascii() and b.isdigit() for b in bounds):
            return None
        low, high = int(bounds[0]), int(bounds[-1])
        if not (low <= high and high - low < 50):
            return None
        values.extend(range(low, high + 1))
    return tuple(dict.fromkeys(values))


def literal_scan(text: str) -> list[tuple[int, int, tuple[int, ...]]]:
    code = code_brackets(text)  # CommonMark decides what is code: markdown-it-py renders the text
    found = []
    for start, char in enumerate(text):
        if char != "[" or start in code:
            continue
        close = text.find("]", start)
        if close < 0:
            continue
        members = _members_of(text[start + 1 : close])
        after = text[close + 1 : close + 2]
        at_line_start = start == 0 or text[start - 1] == "\n"
        if (
            members is None
            or (start > 0 and text[start - 1] == "\\")
            or after == "("
            or (at_line_start and after == ":")
        ):
            continue
        found.append((start, close + 1, members))
    return found


def literal_strip(text: str, count: int) -> tuple[str, list[int]]:
    stripped: list[int] = []
    while True:
        markers = literal_scan(text)
        changed = False
        shift = 0  # how far the removals and re-renders so far moved the text
        for start, end, members in markers:
            start, end = start + shift, end + shift
            kept = [m for m in members if 1 <= m <= count]
            if len(kept) == len(members):
                continue
            changed = True
            stripped += [m for m in members if not 1 <= m <= count]
            if kept:
                new = "[" + ", ".join(map(str, kept)) + "]"
                text = text[:start] + new + text[end:]
                shift += len(new) - (end - start)
                continue
            before = start
            while before > 0 and text[before - 1] in " \t":
                before -= 1
            after = end
            if before == start and (start == 0 or text[start - 1] == "\n"):
                while after < len(text) and text[after] in " \t":
                    after += 1
            text = text[:before] + text[after:]
            shift -= after - before
        if not changed:
            return text, stripped


def _as_tuples(text: str) -> list[tuple[int, int, tuple[int, ...]]]:
    return [(m.start, m.end, m.members) for m in scan_markers(text)]


def _outside_markers(text: str) -> list[str]:
    pieces, cursor = [], 0
    for marker in scan_markers(text):
        pieces.append(text[cursor : marker.start])
        cursor = marker.end
    return [*pieces, text[cursor:]]


# --- The scanner --------------------------------------------------------------


@PROPERTY
@given(texts)
def test_scanner_agrees_with_the_literal_reading(text: str) -> None:
    assert _as_tuples(text) == literal_scan(text)


# The streaming engine (answers.citations.LiveDisplay) is held to the whole-text functions, the
# scanner included, on every split: tests/unit/test_live_display.py.


# --- strip ----------------------------------------------------------------------


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


# --- finalize ---------------------------------------------------------------------


def _finalized(text: str, count: int) -> tuple[str, list[str]]:
    sources = [f"s{n}" for n in range(1, count + 1)]
    final = finalize_citations(strip_out_of_range_markers(text, count).text, sources)
    return final.text, final.references


@PROPERTY
@given(texts, source_counts)
def test_finalize_is_idempotent(text: str, count: int) -> None:
    final_text, references = _finalized(text, count)
    again = finalize_citations(final_text, references)
    assert again.text == final_text
    assert again.references == references
    assert again.mapping == {n: n for n in range(1, len(references) + 1)}
    assert again.dropped == []


@PROPERTY
@given(texts, source_counts)
def test_every_final_marker_is_in_range_and_every_reference_cited(text: str, count: int) -> None:
    sources = [f"s{n}" for n in range(1, count + 1)]
    final = finalize_citations(strip_out_of_range_markers(text, count).text, sources)
    markers = scan_markers(final.text)
    cited = {m for marker in markers for m in marker.members}
    assert all(1 <= m <= len(final.references) for m in cited)
    if final.fallback:
        assert markers == []
        assert final.references == sources
    else:
        assert cited == set(range(1, len(final.references) + 1))
        assert sorted([*final.mapping, *final.dropped]) == list(range(1, count + 1))
        assert [final.references[new - 1] for new in final.mapping.values()] == [
            sources[old - 1] for old in final.mapping
        ]


@PROPERTY
@given(texts, source_counts)
def test_finalize_changes_only_the_markers(text: str, count: int) -> None:
    stripped = strip_out_of_range_markers(text, count).text
    final = finalize_citations(stripped, [f"s{n}" for n in range(1, count + 1)])
    assert _outside_markers(final.text) == _outside_markers(stripped)
    for marker in scan_markers(final.text):
        assert final.text[marker.start : marker.end] == render_marker(marker.members)
