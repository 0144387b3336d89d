"""Citation markers (docs/citations.md): one scanner for strip, finalize, readers and the live display."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, chain, compress
from operator import sub
from typing import Generic, Protocol, TypeVar

from answers.citations.code import code_regions

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Marker:
    """One citation marker found by the scanner."""

    start: int  # index of '[' in the text
    end: int  # index after ']'
    members: tuple[int, ...]  # in written order, ranges expanded, repeats removed (first kept)


@dataclass(frozen=True)
class StripResult:
    text: str
    stripped: list[int]  # every removed member, in the order met, pass after pass


@dataclass(frozen=True)
class Finalized(Generic[T]):
    text: str
    references: list[T]
    mapping: dict[int, int]  # old number -> new number
    dropped: list[int]  # old numbers of uncited sources, ascending
    fallback: bool


# --- The grammar --------------------------------------------------------------

_SEP = r"[ \t]*+,[ \t]*+"
_RANGE = r"[0-9]++(?:[-\u2013][0-9]++)?+"


def _marker_pattern(ranges_group: str) -> str:
    """The marker grammar; `ranges_group` opens the group around a member list with ranges."""
    # Possessive quantifiers throughout: a failed candidate such as "[" followed by a
    # million digits must cost one look at each digit, never a backtracking search.
    return (
        r"\[(?=[ \t0-9])(?<!\\\[)"  # (fail fast on "[[[") an escaped bracket is text
        r"(?!(?<![^\n]\[)[0-9 \t,\-\u2013]*+\]:)"  # so is a link reference definition at a line start
        r"[ \t]*+(?:"
        r"[0-9]++(?:" + _SEP + r"[0-9]++)*+"  # numbers
        r"|" + ranges_group + _RANGE + r"(?:" + _SEP + _RANGE + r")*+)"  # numbers and ranges: bounds to check
        r")[ \t]*+\](?!\()"  # and a link or image is text
    )


_MARKER = re.compile(_marker_pattern("("))
# The same without that group, splitting a text into [text, candidate, text,
# candidate, ..., text]: a whole text's candidates come out with the text around
# them and without a match object each, which is most of what finalize and
# strip cost, and the parts join back into the text as they are.
_SPLIT = re.compile("(" + _marker_pattern("(?:") + ")")
_BOUNDS = re.compile(r"([0-9]++)(?:[-\u2013]([0-9]++))?+")
_MAX_RANGE_SPAN = 50
_CONTENT = frozenset("0123456789 \t,-\u2013")


def _to_int(digits: str) -> int:
    """The decimal value of `digits` (spaces and tabs around it allowed), however long.

    int() refuses strings past sys.get_int_max_str_digits(); that limit guards
    the conversion only, so a longer number is converted in halves.
    """
    try:
        return int(digits)
    except ValueError:
        digits = digits.strip(" \t")
        half = len(digits) // 2
        scale: int = 10**half
        return _to_int(digits[:-half]) * scale + _to_int(digits[-half:])


def _ints(texts: list[str]) -> list[int]:
    try:
        return list(map(int, texts))
    except ValueError:  # a number too long for int(), see _to_int
        return list(map(_to_int, texts))


def _bounds(listed: str) -> tuple[list[int], list[int]]:
    """The first and last number of each member of a list with ranges (N is N-N)."""
    pairs = _BOUNDS.findall(listed)
    return _ints([low for low, _ in pairs]), _ints([high or low for low, high in pairs])


def _ranges_in_bounds(listed: str) -> bool:
    """Whether every range N-M of a member list has N <= M and M - N < 50 (else it is text)."""
    lows, highs = _bounds(listed)
    widths: list[int] = list(map(sub, highs, lows))
    return min(widths) >= 0 and max(widths) < _MAX_RANGE_SPAN


def _members(written: str) -> tuple[int, ...]:
    """A marker's members, from its text: written order, ranges expanded, repeats removed (first kept)."""
    # Answers repeat the same few short markers: each is parsed once. Long ones are not kept.
    return _short_members(written) if len(written) <= 64 else _parse_members(written)


@lru_cache(maxsize=4096)
def _short_members(written: str) -> tuple[int, ...]:
    return _parse_members(written)


def _parse_members(written: str) -> tuple[int, ...]:
    """Parse a marker's text into its members (see _members)."""
    inner = written[1:-1]
    if "-" in inner or "\u2013" in inner:
        lows, highs = _bounds(inner)
        return tuple(dict.fromkeys(chain.from_iterable(map(range, lows, [high + 1 for high in highs]))))
    return tuple(dict.fromkeys(_ints(inner.split(","))))


# --- Where the code is ---------------------------------------------------------
#
# Code is what CommonMark says it is (answers.citations.code, one engine for the
# scanner, normalize, strip, the live display and the page's port). Markers are
# the candidates outside it.


def _code(text: str) -> list[tuple[int, int]]:
    """Where the whole of `text` is code: fenced blocks and inline code spans, in order."""
    return code_regions(text)


# --- The whole-text scanner ------------------------------------------------------


def _split(text: str) -> tuple[list[str], set[int]]:
    """`text` cut around its marker candidates, and the candidates that are not markers.

    The parts alternate text and candidate: parts[i] for odd i is a candidate,
    parts[i - 1] the text before it and parts[i + 1] the text after.
    Code is text: a candidate inside a code span or block stays in the text
    around it. The set holds the i of candidates with a range out of bounds.
    """
    excluded: set[int] = set()
    if _SPLIT.search(text) is None:  # (no candidate: where code is does not matter)
        return [text], excluded
    code = _code(text)
    parts = _split_prose(text, code) if code else _SPLIT.split(text)
    if len(parts) == 1:
        return parts, excluded
    # Each distinct candidate with a range is checked once.
    out_of_bounds = {
        written
        for written in set(parts[1::2])
        if ("-" in written or "\u2013" in written) and not _ranges_in_bounds(written[1:-1])
    }
    if out_of_bounds:
        excluded.update(i for i in range(1, len(parts), 2) if parts[i] in out_of_bounds)
    return parts, excluded


def _split_prose(text: str, code: list[tuple[int, int]]) -> list[str]:
    """_SPLIT.split(text) without the candidates inside `code` (they stay in the text around them).

    Each stretch of prose between code is split on its own, from the last
    character of the code before it: a candidate looks one character back
    (a backslash, a line start) and one on (a "(", a ":"), never contains a
    backtick or a line break, and the last character of code opens none (a
    backtick, or the end of a fence's closing line, followed by a line break).
    So a stretch has the candidates one split of the whole text finds in it,
    and cutting only the prose costs no position lookups for the candidates.
    """
    parts: list[str] = []
    copied = 0  # text[copied:] is not in `parts` yet
    prose = 0  # where the current stretch of prose starts
    for start, end in [*code, (len(text), len(text))]:
        if text.find("[", prose, start) >= 0:
            stretch = _SPLIT.split(text[prose - 1 if prose else 0 : start])
            if len(stretch) > 1:
                parts.append(text[copied:prose] + (stretch[0][1:] if prose else stretch[0]))
                parts += stretch[1:-1]
                copied = start - len(stretch[-1])
        prose = end
    parts.append(text[copied:])
    return parts


def scan_markers(text: str) -> list[Marker]:
    """Every citation marker of `text` by docs/citations.md, in order, in time linear in its length.

    Where the spec leaves room, this reading holds (and the live display, strip and
    finalize share it):

    - lines end at "\\n" only;
    - a range has no spaces inside (`[2 - 4]` is text; `[ 2-4 ]` is a marker);
    - fenced blocks are found from the lines first, and an inline code span is
      paired only within the stretch between two fenced blocks, so a line
      starting with three backticks opens a fence even after an unclosed run;
    - a fence's closing line is code to its end;
    - `\\\\[1]` is text: the bracket is preceded by a backslash, whatever
      precedes that;
    - the `(` and `:` rules look at the character right after the `]`.
    """
    parts, excluded = _split(text)
    ends = list(accumulate(map(len, parts)))
    return [
        Marker(ends[i - 1], ends[i], _members(parts[i])) for i in range(1, len(parts), 2) if i not in excluded
    ]


# --- Rendering -----------------------------------------------------------------


def render_marker(members: Iterable[int]) -> str:
    """The canonical form of a marker: its distinct members ascending, joined by ", "."""
    numbers = sorted(set(members))
    if not numbers:
        raise ValueError("a marker has at least one member")
    return "[" + ", ".join(map(str, numbers)) + "]"


def _render_written(members: list[int]) -> str:
    # Written order, not sorted: it decides first-citation order in finalize.
    return "[" + ", ".join(map(str, members)) + "]"


# --- Stripping -----------------------------------------------------------------


def _in_range(value: int, count: int) -> bool:
    return 0 < value <= count


class StripTrace(Protocol):
    """What strip tells an observer (the trail) about each pass; strip alone passes none."""

    def full_pass(self, parts: list[str], excluded: set[int], edited: list[str]) -> None:
        """A pass over the whole text: its _split() parts, and the same parts as the pass left them."""

    def local_pass(self, draft: _Draft, markers: list[tuple[int, int, str]]) -> None:
        """A pass around the joins: the markers that formed there (start, end in draft.base, text)."""

    def drafted(self, draft: _Draft) -> None:
        """The local passes on `draft` are over: draft.text() is the next text."""


def _strip_pass(
    text: str, count: int, stripped: list[int], trace: StripTrace | None = None
) -> tuple[str, list[int]]:
    """One pass over all markers of `text`; returns the new text and where each removal joined it."""
    text, joins, _ = _full_pass(text, count, stripped, trace, split=False)
    return text, joins


_Split = tuple[list[str], set[int]]


def _full_pass(
    text: str, count: int, stripped: list[int], trace: StripTrace | None = None, *, split: bool = True
) -> tuple[str, list[int], _Split | None]:
    """_strip_pass, and (if `split`) the _split() of the new text where the pass can tell it without
    cutting again."""
    parts, excluded = _split(text)
    edited = parts if trace is None else parts.copy()
    removed = _edit_pass(edited, excluded, count, stripped)
    if trace is not None:
        trace.full_pass(parts, excluded, edited)
    if removed is None:
        return text, [], (edited, excluded)
    text = "".join(edited)
    if not removed:  # markers re-rendered in place: the same candidates, the same surroundings
        return text, [], (edited, excluded)
    # A removed candidate is "": it ends where it joined. (Sums of the stretches
    # between removals: most candidates stay, and a list of every end costs more.)
    joins: list[int] = []
    end = previous = 0
    for i in removed:
        end += sum(map(len, edited[previous:i]))
        joins.append(end)
        previous = i
    if not split or not _joins_alone(text, joins):
        return text, joins, None
    return text, joins, _joined(edited, excluded, removed)


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
        while i >= previous and text[i] in _CONTENT:
            i -= 1
        # Past the previous join, this walk goes on as that join's did, which met no "[".
        if i >= previous and text[i] == "[":
            return False
        previous = join
    return True


def _joined(parts: list[str], excluded: set[int], removed: list[int]) -> _Split:
    """The split of "".join(parts) once the (emptied) candidates at `removed` are gone, and their
    neighbours joined, when _joins_alone() holds."""
    out = parts[: removed[0]]
    for i, following in zip(removed, [*removed[1:], len(parts)], strict=True):
        out[-1] += parts[i + 1]
        out += parts[i + 2 : following]
    return out, {i - 2 * bisect_left(removed, i) for i in excluded}


def _edit_pass(parts: list[str], excluded: set[int], count: int, stripped: list[int]) -> list[int] | None:
    """Strip the markers among `parts` in place; returns the i of the removed ones (now "").

    None when no marker changed.
    """
    # What becomes of a marker depends on its text alone: work it out once per distinct text.
    verdicts = {
        written: verdict
        for written in set(parts[1::2])
        if (verdict := _verdict(_members(written), count)) is not None
    }
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
        replacement, dropped = verdicts[parts[i]]
        stripped += dropped
        if replacement:
            parts[i] = replacement
            continue
        # The blank run before a marker never reaches past the text before it:
        # a removal leaves a non-blank character (or the text's start) on its left.
        before = parts[i - 1].rstrip(" \t")
        if len(before) < len(parts[i - 1]):
            parts[i - 1] = before
        elif char_before(i) in ("", "\n"):  # it begins a line: the run after it goes instead
            parts[i + 1] = parts[i + 1].lstrip(" \t")
        parts[i] = ""
        left[i] = char_before(i)
        removed.append(i)
    return removed


def _verdict(members: tuple[int, ...], count: int) -> tuple[str, list[int]] | None:
    """What a marker becomes ("" when removed) and the members it loses; None when it keeps them all."""
    if not members or (min(members) > 0 and max(members) <= count):  # (none: a range out of bounds)
        return None
    kept = [v for v in members if _in_range(v, count)]
    if len(kept) == len(members):
        return None
    return _render_written(kept) if kept else "", [v for v in members if not _in_range(v, count)]


class _Draft:
    """A text under repeated passes: a base string minus deleted spans plus re-rendered markers.

    After the first pass a removal can only create a marker around the point
    where it joined the text (unless it changed where code is, see
    _changes_code). Later passes therefore look only there and edit this
    overlay, so nested markers such as `[9[9[9]]]` cost time linear in the
    text instead of one full copy per pass.
    """

    def __init__(self, base: str) -> None:
        self.base = base
        self._dead: dict[int, int] = {}  # start -> end of each maximal deleted span
        self._dead_end: dict[int, int] = {}  # end -> start
        self._renders: dict[int, tuple[int, str]] = {}  # start -> (end, replacement)

    def before(self, i: int) -> int:
        """Index of the live character before boundary `i`; -1 at the start."""
        return self._dead_end.get(i, i) - 1

    def at(self, i: int) -> int:
        """Index of the live character at or after boundary `i`; len(base) at the end."""
        return self._dead.get(i, i)

    def _forget_spans(self, start: int, end: int) -> None:
        i = start
        while i < end:
            span_end = self._dead.pop(i, None)
            if span_end is None:
                i += 1
            else:
                del self._dead_end[span_end]
                i = span_end

    def delete(self, start: int, end: int) -> int:
        """Delete `base[start:end]` (deleted spans inside included); return the merged span's start."""
        self._forget_spans(start, end)
        merged_start = self._dead_end.pop(start, start)
        if merged_start != start:
            del self._dead[merged_start]
        merged_end = self._dead.pop(end, end)
        if merged_end != end:
            del self._dead_end[merged_end]
        self._dead[merged_start] = merged_end
        self._dead_end[merged_end] = merged_start
        return merged_start

    def render(self, start: int, end: int, replacement: str) -> None:
        self._forget_spans(start, end)
        self._renders[start] = (end, replacement)

    def edits(self) -> list[tuple[int, int, str]]:
        """Each deleted span (as "") and re-rendered marker: (start, end, replacement), in order."""
        return sorted(
            [(s, e, "") for s, e in self._dead.items()] + [(s, *r) for s, r in self._renders.items()]
        )

    def text(self) -> str:
        if not self._dead and not self._renders:
            return self.base
        out: list[str] = []
        cursor = 0
        for start, end, replacement in self.edits():
            out += (self.base[cursor:start], replacement)
            cursor = end
        out.append(self.base[cursor:])
        return "".join(out)


def _changes_code(draft: _Draft, joins: list[int]) -> bool:
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
    draft: _Draft, joins: list[int], count: int, stripped: list[int], trace: StripTrace | None = None
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
        while i >= 0 and base[i] in _CONTENT:
            i = draft.before(i)
        if i < 0 or base[i] != "[" or i in seen:
            continue
        seen.add(i)
        chars = ["["]
        k = draft.at(i + 1)
        while k < size and base[k] in _CONTENT:
            chars.append(base[k])
            k = draft.at(k + 1)
        if k == size or base[k] != "]":
            continue
        chars.append("]")
        left, right = draft.before(i), draft.at(k + 1)
        head = base[left] if left >= 0 else ""
        probe = head + "".join(chars) + (base[right] if right < size else "")
        match = _MARKER.match(probe, len(head))
        if (
            match is not None
            and match.end() == len(head) + len(chars)
            and (match[1] is None or _ranges_in_bounds(match[1]))
        ):
            markers.append((i, k + 1, match.group()))
    markers.sort()
    if trace is not None:
        trace.local_pass(draft, markers)
    new_joins: list[int] = []
    for start, end, written in markers:
        members = _members(written)
        kept = [v for v in members if _in_range(v, count)]
        if len(kept) == len(members):
            continue
        stripped += [v for v in members if not _in_range(v, count)]
        if kept:
            draft.render(start, end, _render_written(kept))
            continue
        previous = blank = draft.before(start)
        while blank >= 0 and base[blank] in " \t":
            blank = draft.before(blank)
        if blank != previous:
            new_joins.append(draft.delete(blank + 1, end))
            continue
        after = draft.at(end)
        if previous < 0 or base[previous] == "\n":  # it begins a line: the run after it goes
            while after < size and base[after] in " \t":
                after = draft.at(after + 1)
        new_joins.append(draft.delete(start, after))
    return new_joins


def strip_out_of_range_markers(text: str, source_count: int, trace: StripTrace | None = None) -> StripResult:
    """Remove every marker member that is 0 or above `source_count`, pass after pass, (docs/citations.md).

    `trace` (the trail's) hears of every pass and what it found.
    """
    global _handoff
    stripped: list[int] = []
    while True:
        text, joins, split = _full_pass(text, source_count, stripped, trace)
        draft = _Draft(text)
        while joins and not _changes_code(draft, joins):
            joins = _local_pass(draft, joins, source_count, stripped, trace)
        if draft.edits():
            split = None
        text = draft.text()
        if trace is not None:
            trace.drafted(draft)
        if not joins:
            _handoff = (text, split) if split is not None else None
            return StripResult(text, stripped)


# --- Finalizing ------------------------------------------------------------------
#
# Finalize always follows strip, on the very string strip returned; strip has
# cut that text already (its last pass's parts, with the removed markers
# joined), so it hands the cut on instead of finalize cutting it again: the
# text it was made for (compared by identity, so nothing but strip's own
# result matches) and the split. One slot, the last strip's; a miss only costs
# the cut.
_handoff: tuple[str, _Split] | None = None


def _split_for_finalize(text: str) -> _Split:
    handoff = _handoff
    if handoff is not None and handoff[0] is text:
        parts, excluded = handoff[1]
        return parts.copy(), excluded
    return _split(text)


def finalize_citations(text: str, sources: Sequence[T]) -> Finalized[T]:
    """Drop uncited sources, renumber the rest in first-citation order and rewrite every marker.

    Raises ValueError on a member outside 1..len(sources): strip first.
    """
    count = len(sources)
    parts, excluded = _split_for_finalize(text)
    if len(excluded) == len(parts) // 2:
        return Finalized(text, list(sources), {n: n for n in range(1, count + 1)}, [], True)
    kept_as_is = {i: parts[i] for i in excluded}
    markers: list[str | None] = [*parts[1::2]]
    for i in excluded:
        markers[i // 2] = None
    # Sources are numbered in the order their markers first appear; a marker
    # written again adds nothing new, so each distinct marker text is worked
    # out once, in order of first appearance, and then looked up.
    mapping: dict[int, int] = {}
    rendered: dict[str, str] = {}
    for written in dict.fromkeys(markers):
        if written is None:
            continue
        members = _members(written)
        for member in members:
            if member not in mapping:
                if not _in_range(member, count):
                    raise ValueError(
                        f"the marker {written} cites a source outside 1..{count}; "
                        "strip_out_of_range_markers() must run first"
                    )
                mapping[member] = len(mapping) + 1
        rendered[written] = render_marker(mapping[m] for m in members)
    parts[1::2] = map(rendered.get, parts[1::2], parts[1::2])
    for i, written in kept_as_is.items():
        parts[i] = written
    return Finalized(
        text="".join(parts),
        references=[sources[old - 1] for old in mapping],
        mapping=mapping,
        dropped=[n for n in range(1, count + 1) if n not in mapping],
        fallback=False,
    )
