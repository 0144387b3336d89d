"""Strip (docs/citations.md, "Strip"): every marker member naming no retrieved source goes, pass after
pass, until no pass changes the text."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate, compress
from typing import Literal, Protocol

from answers.citations.blocks import Layout, mover, removals_keep_code
from answers.citations.code import code_layout
from answers.citations.draft import Draft
from answers.citations.scan import (
    MARKER,
    MARKER_CHARS,
    SHORT_MARKER,
    Marker,
    Split,
    all_in_range,
    has_candidates,
    in_range,
    is_marker_text,
    marker_members,
    ranges_in_bounds,
    render_written,
    split_at,
)


@dataclass(frozen=True)
class StripResult:
    text: str
    stripped: list[int]  # every removed member, in the order met, pass after pass
    # The last pass's cut of `text` (split_candidates(text), its removed markers joined), when the
    # pass could tell it without cutting again: finalize_citations(text, sources, cut=...) reuses it.
    cut: Split | None = field(default=None, compare=False, repr=False)


# --- Stripping -----------------------------------------------------------------


# What strip decides for one marker: its text after the pass ("" when removed) and the members
# it loses, in written order; None when it keeps them all (marker_verdict()).
Verdict = tuple[str, list[int]] | None


class StripTrace(Protocol):
    """What strip tells an observer (the trail) about each pass; strip alone passes none.

    Strip reports its verdicts: the observer reads them, it does not decide again.
    """

    def full_pass(
        self, parts: list[str], excluded: set[int], edited: list[str], verdicts: dict[str, Verdict]
    ) -> None:
        """A pass over the whole text: its split_candidates() parts, the same parts as the pass left
        them, and the verdict of each marker text the pass changed."""

    def local_pass(self, draft: Draft, markers: list[tuple[int, int, str]], verdicts: list[Verdict]) -> None:
        """A pass around the joins: the markers that formed there (start, end in draft.base, text),
        and each one's verdict."""

    def drafted(self, draft: Draft) -> None:
        """The local passes on `draft` are over: draft.text() is the next text."""


def strip_pass(
    text: str, count: int, stripped: list[int], trace: StripTrace | None = None
) -> tuple[str, list[int]]:
    """One pass over all markers of `text`; returns the new text and where each removal joined it."""
    text, joins, _, _ = _full_pass(text, count, stripped, trace, split=False)
    return text, joins


def _full_pass(
    text: str,
    count: int,
    stripped: list[int],
    trace: StripTrace | None = None,
    *,
    split: bool = True,
    layout: Layout | None = None,
) -> tuple[str, list[int], Split | None, bool]:
    """strip_pass, (if `split`) the split_candidates() of the new text where the pass can tell it without
    cutting again, and (if `split`) whether its removals surely left code where it was. `layout` is
    code_layout(text) when the caller has it."""
    old = text
    # Where code may be, the edits are kept (in `old`: start, end, length of the replacement), and
    # the chunks code was read from, to check them against.
    code = split and ("`" in old or "~" in old or "|" in old)
    if layout is None or layout.text is not old:
        layout = code_layout(old) if code and has_candidates(old) else None
    parts, excluded, offsets = split_at(text, None if layout is None else layout.regions)
    edited = parts if trace is None else parts.copy()
    verdicts: dict[str, Verdict] = {}
    edits: list[tuple[int, int, int]] | None = [] if code else None
    if not code:
        offsets = []
    elif offsets is None:
        offsets = list(accumulate(map(len, parts), initial=0))
    removed = _edit_pass(edited, excluded, count, stripped, verdicts, edits, offsets)
    if trace is not None:
        trace.full_pass(parts, excluded, edited, verdicts)
    if removed is None:
        return text, [], (edited, excluded), True
    text = "".join(edited)
    if not removed:  # markers re-rendered in place: the same candidates, the same surroundings
        return text, [], (edited, excluded), True
    if edits is None:
        joins = _joins(edited, removed)
    else:
        moved = mover(edits)
        joins = [moved(start) for start, _, size in edits if not size]
    if not split:
        return text, joins, None, False
    kept = edits is None or (
        layout is not None and removals_keep_code(old, text, edits, joins, layout, moved)
    )
    if not _joins_alone(text, joins):
        return text, joins, None, kept
    return text, joins, _joined(edited, excluded, removed), kept


def _joins(edited: list[str], removed: list[int]) -> list[int]:
    """Where each removal joined "".join(edited), the removed candidates being "" there."""
    # (Sums of the stretches between removals: most candidates stay, and a list of every end costs more.)
    joins: list[int] = []
    end = previous = 0
    for i in removed:
        end += sum(map(len, edited[previous:i]))
        joins.append(end)
        previous = i
    return joins


def _joins_alone(text: str, joins: list[int]) -> bool:
    """Whether no marker candidate of `text` reaches a join: none starts right after it, none before
    it reads up to it (its members, its closing bracket and the one character after).

    Then the removals changed no candidate of the pass but the removed ones (a
    candidate's fate depends on one character before its bracket, its own
    characters and one after), and formed none.
    """
    previous = 0
    for join in joins:
        if text.startswith("[", join):
            return False
        i = join - 1
        if i >= previous and text[i] == "]":
            i -= 1
        while i >= previous and text[i] in MARKER_CHARS:
            i -= 1
        # Past the previous join, this walk goes on as that join's did, which met no "[".
        if i >= previous and text[i] == "[":
            return False
        previous = join
    return True


def _joined(parts: list[str], excluded: set[int], removed: list[int]) -> Split:
    """The split of "".join(parts) once the (emptied) candidates at `removed` are gone, and their
    neighbours joined, when _joins_alone() holds."""
    out = parts[: removed[0]]
    for i, following in zip(removed, [*removed[1:], len(parts)], strict=True):
        out[-1] += parts[i + 1]
        out += parts[i + 2 : following]
    return out, {i - 2 * bisect_left(removed, i) for i in excluded}


def _edit_pass(
    parts: list[str],
    excluded: set[int],
    count: int,
    stripped: list[int],
    verdicts: dict[str, Verdict],
    edits: list[tuple[int, int, int]] | None = None,
    offsets: list[int] | None = None,
) -> list[int] | None:
    """Strip the markers among `parts` in place; returns the i of the removed ones (now "").

    None when no marker changed. `verdicts` receives the verdict of each marker text that changes;
    `edits` (with `offsets`, where each part starts in the text), each change: its start and end
    in the text and the length of what replaced it.
    """
    # What becomes of a marker depends on its text alone: work it out once per distinct text.
    verdicts.update(
        (written, verdict)
        for written in set(parts[1::2])
        if (verdict := written_verdict(written, count)) is not None
    )
    if not verdicts:
        return None
    removed: list[int] = []
    left: dict[int, str] = {}  # for each removed marker, the character left of where it was ("" at the start)

    def char_before(i: int) -> str:
        """The character before candidate i, as the removals to its left have left the text."""
        if parts[i - 1]:
            return parts[i - 1][-1]
        if i == 1:
            return ""
        return parts[i - 2][-1] if parts[i - 2] else left[i - 2]

    for i in compress(range(1, len(parts), 2), map(verdicts.__contains__, parts[1::2])):
        if i in excluded:
            continue
        replacement, dropped = verdicts[parts[i]]  # type: ignore[misc]  # (only changing markers are kept)
        stripped += dropped
        if replacement:
            if edits is not None and offsets is not None:
                edits.append((offsets[i], offsets[i + 1], len(replacement)))
            parts[i] = replacement
            continue
        start = offsets[i] if offsets else 0
        end = offsets[i + 1] if offsets else 0
        previous = parts[i - 1]
        char = previous[-1] if previous else char_before(i)
        taken = blanks_taken(char)
        if taken == "before":
            # The blank run before a marker never reaches past the text before it:
            # a removal leaves a non-blank character (or the text's start) on its left.
            before = previous.rstrip(BLANKS)
            start -= len(previous) - len(before)
            parts[i - 1] = before
            char = before[-1] if before else char_before(i)
        elif taken == "after":
            after = parts[i + 1].lstrip(BLANKS)
            end += len(parts[i + 1]) - len(after)
            parts[i + 1] = after
        if edits is not None:
            edits.append((start, end, 0))
        parts[i] = ""
        left[i] = char
        removed.append(i)
    return removed


BLANKS = " \t"  # what a removed marker takes with it


def blanks_taken(char_before: str) -> Literal["before", "after", ""]:
    """Which run of blanks a marker that keeps no member is removed with (docs/citations.md, "strip"),
    from the character right before it as the removals to its left have left the text ("" at the
    text's start): the run right before it; where there is none and it begins a line or the text,
    the run right after it; otherwise none (`great[9] and` becomes `great and`)."""
    if char_before and char_before in BLANKS:
        return "before"
    if char_before in ("", "\n"):
        return "after"
    return ""


def remove_markers(text: str, markers: Iterable[Marker]) -> str:
    """`text` without `markers` (markers of it, as scan_markers finds them), each removed, left to
    right, with the blanks strip removes with a marker that keeps no member (blanks_taken)."""
    parts: list[str] = []
    last = ""  # the last character of the text kept so far
    at = 0  # text[at:] is not read yet
    for marker in sorted(markers, key=lambda m: m.start):
        if marker.start < at:
            continue
        before = text[at : marker.start]
        taken = blanks_taken(before[-1] if before else last)
        if taken == "before":
            # (It never reaches past `before`: a removal leaves no blank on its left.)
            before = before.rstrip(BLANKS)
        parts.append(before)
        last = before[-1] if before else last
        at = marker.end
        if taken == "after":
            while at < len(text) and text[at] in BLANKS:
                at += 1
    parts.append(text[at:])
    return "".join(parts)


def written_verdict(written: str, count: int) -> Verdict:
    """marker_verdict() of a candidate's text (None for one that is no marker: it stays as it is).
    Answers repeat the same few short markers: each one's verdict is worked out once per source
    count (shared: callers only read it)."""
    if len(written) <= SHORT_MARKER:
        return _short_verdict(written, count)
    return _verdict(written, count)


def _verdict(written: str, count: int) -> Verdict:
    return marker_verdict(marker_members(written), count) if is_marker_text(written) else None


_short_verdict = lru_cache(maxsize=4096)(_verdict)


def marker_verdict(members: tuple[int, ...], count: int) -> Verdict:
    """What a marker becomes ("" when removed) and the members it loses; None when it keeps them all."""
    if not members or all_in_range(members, count):  # (none: a range out of bounds)
        return None
    kept = [v for v in members if in_range(v, count)]
    if len(kept) == len(members):
        return None
    return render_written(kept) if kept else "", [v for v in members if not in_range(v, count)]


def _changes_code(draft: Draft, joins: list[int]) -> bool:
    """Whether a removal may have moved code: then the next pass is a full one.

    Where code is depends, in CommonMark, on whole lines (a line a removal
    empties ends a paragraph, one it starts with "- " or "|" becomes a list item
    or a table row) and on backslashes next to backticks; a text without a
    backtick or a tilde has no code, and removals (of marker text and blanks)
    add neither; nor a text without a "|" cells a table hides (a removal at a
    row's start can change how many cells it has). Only such a text takes the
    local passes.
    """
    base = draft.base
    return bool(joins) and ("`" in base or "~" in base or "|" in base)


def _local_pass(
    draft: Draft, joins: list[int], count: int, stripped: list[int], trace: StripTrace | None = None
) -> list[int]:
    """The next pass when code boundaries did not move: only markers spanning a join are new.

    Every other marker of the text is one the previous pass left, all of whose
    members are in range, so this pass would leave it unchanged.
    """
    base = draft.base
    size = len(base)
    markers: list[tuple[int, int, str]] = []
    seen: set[int] = set()
    for join in joins:
        i = draft.before(join)
        while i >= 0 and base[i] in MARKER_CHARS:
            i = draft.before(i)
        if i < 0 or base[i] != "[" or i in seen:
            continue
        seen.add(i)
        chars = ["["]
        k = draft.at(i + 1)
        while k < size and base[k] in MARKER_CHARS:
            chars.append(base[k])
            k = draft.at(k + 1)
        if k == size or base[k] != "]":
            continue
        chars.append("]")
        left, right = draft.before(i), draft.at(k + 1)
        head = base[left] if left >= 0 else ""
        probe = head + "".join(chars) + (base[right] if right < size else "")
        match = MARKER.match(probe, len(head))
        if (
            match is not None
            and match.end() == len(head) + len(chars)
            and (match[1] is None or ranges_in_bounds(match[1]))
        ):
            markers.append((i, k + 1, match.group()))
    markers.sort()
    verdicts = [marker_verdict(marker_members(written), count) for _, _, written in markers]
    if trace is not None:
        trace.local_pass(draft, markers, verdicts)
    new_joins: list[int] = []
    for (start, end, _), verdict in zip(markers, verdicts, strict=True):
        if verdict is None:
            continue
        replacement, dropped = verdict
        stripped += dropped
        if replacement:
            draft.render(start, end, replacement)
            continue
        previous = draft.before(start)
        taken = blanks_taken(base[previous] if previous >= 0 else "")
        if taken == "before":
            blank = previous
            while blank >= 0 and base[blank] in BLANKS:
                blank = draft.before(blank)
            new_joins.append(draft.delete(blank + 1, end))
            continue
        after = draft.at(end)
        if taken == "after":
            while after < size and base[after] in BLANKS:
                after = draft.at(after + 1)
        new_joins.append(draft.delete(start, after))
    return new_joins


def strip_out_of_range_markers(
    text: str, source_count: int, trace: StripTrace | None = None, *, code: Layout | None = None
) -> StripResult:
    """Remove every marker member that is 0 or above `source_count`, pass after pass, (docs/citations.md).

    `trace` (the trail's) hears of every pass and what it found. `code` is code_layout(text) when
    the caller has it (normalize's, Normalized.code): where code is is then not read again.
    """
    stripped: list[int] = []
    while True:
        text, joins, split, kept = _full_pass(text, source_count, stripped, trace, layout=code)
        code = None
        if split is not None and kept:
            # No candidate reaches a join (_joins_alone) and code stayed: a local pass would find
            # no new marker.
            return StripResult(text, stripped, split)
        draft = Draft(text)
        # (After the full pass, it says whether code stayed; after a local pass, _changes_code.)
        while joins and kept:
            joins = _local_pass(draft, joins, source_count, stripped, trace)
            kept = not _changes_code(draft, joins)
        if draft.edits():
            split = None
        text = draft.text()
        if trace is not None:
            trace.drafted(draft)
        if not joins:
            return StripResult(text, stripped, split)
