"""The marker grammar and the whole-text scanner (docs/citations.md, "Markers"): what strip, finalize,
normalize, the live display and the readers share."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, chain
from operator import sub

from answers.citations.code import code_regions


@dataclass(frozen=True, slots=True)
class Marker:
    """One citation marker found by the scanner."""

    start: int  # index of '[' in the text
    end: int  # index after ']'
    members: tuple[int, ...]  # in written order, ranges expanded, repeats removed (first kept)


# --- The grammar --------------------------------------------------------------

SEP = r"[ \t]*+,[ \t]*+"
RANGE = r"[0-9]++(?:[-\u2013][0-9]++)?+"


def _marker_pattern(ranges_group: str) -> str:
    """The marker grammar; `ranges_group` opens the group around a member list with ranges."""
    # Possessive quantifiers throughout: a failed candidate such as "[" followed by a
    # million digits must cost one look at each digit, never a backtracking search.
    return (
        r"\[(?=[ \t0-9])(?<!\\\[)"  # (fail fast on "[[[") an escaped bracket is text
        r"(?!(?<![^\n]\[)[0-9 \t,\-\u2013]*+\]:)"  # so is a link reference definition at a line start
        r"[ \t]*+(?:"
        r"[0-9]++(?:" + SEP + r"[0-9]++)*+"  # numbers
        r"|" + ranges_group + RANGE + r"(?:" + SEP + RANGE + r")*+)"  # numbers and ranges: bounds to check
        r")[ \t]*+\](?!\()"  # and a link or image is text
    )


MARKER = re.compile(_marker_pattern("("))
# The candidates: what MARKER's context allows, around any member characters. Splitting a text with
# it gives [text, candidate, text, candidate, ..., text]: a whole text's candidates come out with
# the text around them and without a match object each, which is most of what finalize and strip
# cost, and the parts join back into the text as they are. Which candidates are markers (MARKER's
# member list, ranges in bounds) is then decided once per distinct candidate text (is_marker_text);
# the simpler pattern splits faster, and every marker is a candidate.
_SPLIT = re.compile(
    r"(\[(?=[ \t0-9])(?<!\\\[)(?!(?<![^\n]\[)[0-9 \t,\-\u2013]*+\]:)[0-9 \t,\-\u2013]*+\](?!\())"
)
_BOUNDS = re.compile(r"([0-9]++)(?:[-\u2013]([0-9]++))?+")
_MAX_RANGE_SPAN = 50
MEMBER_CHARS = "0123456789 \t,-\u2013"  # what a member list is made of
MARKER_CHARS = frozenset(MEMBER_CHARS)
# Marker texts up to this long are kept parsed (marker_members); a longer one may hold numbers
# whose conversion costs their square, so a caller that can leave it to strip does.
SHORT_MARKER = 64


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


def ranges_in_bounds(listed: str) -> bool:
    """Whether every range N-M of a member list has N <= M and M - N < 50 (else it is text)."""
    lows, highs = _bounds(listed)
    widths: list[int] = list(map(sub, highs, lows))
    return min(widths) >= 0 and max(widths) < _MAX_RANGE_SPAN


def marker_members(written: str) -> tuple[int, ...]:
    """A marker's members, from its text: written order, ranges expanded, repeats removed (first kept)."""
    # Answers repeat the same few short markers: each is parsed once. Long ones are not kept.
    return _short_members(written) if len(written) <= SHORT_MARKER else _parse_members(written)


@lru_cache(maxsize=4096)
def _short_members(written: str) -> tuple[int, ...]:
    return _parse_members(written)


def member_bounds(member: str) -> tuple[int, int] | None:
    """The first and last number of one member of a list (N is N-N; blanks around it allowed), or
    None when it is no number or range."""
    found = _BOUNDS.fullmatch(member.strip(" \t"))
    if found is None:
        return None
    low, high = _ints([found[1], found[2] or found[1]])
    return low, high


def _parse_members(written: str) -> tuple[int, ...]:
    """Parse a marker's text into its members (see marker_members)."""
    inner = written[1:-1]
    if "-" in inner or "\u2013" in inner:
        lows, highs = _bounds(inner)
        return tuple(dict.fromkeys(chain.from_iterable(map(range, lows, [high + 1 for high in highs]))))
    return tuple(dict.fromkeys(_ints(inner.split(","))))


# --- The whole-text scanner ------------------------------------------------------


# A text cut around its marker candidates (split_candidates()): the parts, and the candidates that
# are not markers.
Split = tuple[list[str], set[int]]


def has_candidates(text: str) -> bool:
    """Whether `text` holds a marker candidate anywhere (code not considered)."""
    return _SPLIT.search(text) is not None


def split_candidates(text: str, code: list[tuple[int, int]] | None = None) -> tuple[list[str], set[int]]:
    """`text` cut around its marker candidates, and the candidates that are not markers.

    The parts alternate text and candidate: parts[i] for odd i is a candidate
    (a bracket of member characters where a marker may stand), parts[i - 1]
    the text before it and parts[i + 1] the text after. The set holds the i
    of candidates that are not markers: inside code (a code span or block),
    or whose content is no member list (`[1 2]`, a range out of bounds).
    `code` is code_regions(text) when the caller has it.
    """
    parts, excluded, _ = split_at(text, code)
    return parts, excluded


def split_at(
    text: str, code: list[tuple[int, int]] | None = None
) -> tuple[list[str], set[int], list[int] | None]:
    """split_candidates(text, code), and where each part starts in `text` (with len(text) last) when
    working that out took it (None otherwise).

    The whole text is cut at once, code and all: a candidate looks one
    character back (a backslash, a line start) and one on (a "(", a ":"),
    never contains a backtick, a "|" or a line break, and code neither starts
    nor ends inside one (a span starts and ends with a backtick, a fenced
    block at a line's start and end, hidden cells after a "|" and at a line's
    end). So the candidates outside code are those a cut of the prose alone
    finds, and a candidate inside code is one whose start is.
    """
    excluded: set[int] = set()
    if not has_candidates(text):  # (no candidate: where code is does not matter)
        return [text], excluded, None
    parts = _SPLIT.split(text)
    if len(parts) == 1:
        return parts, excluded, None
    offsets = None
    if code is None:
        code = code_regions(text)
    # (Most code holds no bracket: only the rest is looked up.)
    bracketed = [(start, end) for start, end in code if text.find("[", start, end) >= 0]
    if bracketed:
        offsets = list(accumulate(map(len, parts), initial=0))
        for start, end in bracketed:
            i = bisect_left(offsets, start)
            i += 1 - i % 2  # (a candidate: odd)
            while i < len(parts) and offsets[i] < end:
                excluded.add(i)
                i += 2
    # Each distinct candidate text is judged once.
    not_markers = {written for written in set(parts[1::2]) if not is_marker_text(written)}
    if not_markers:
        excluded.update(i for i in range(1, len(parts), 2) if parts[i] in not_markers)
    return parts, excluded, offsets


def is_marker_text(written: str) -> bool:
    """Whether a candidate (a bracket of member characters, its context allowing a marker) is a
    marker: its content a member list of the grammar, every range in bounds."""
    if len(written) > SHORT_MARKER:
        return _is_marker_text(written)
    return _short_marker_text(written)


def _is_marker_text(written: str) -> bool:
    found = MARKER.fullmatch(written)
    return found is not None and (found[1] is None or ranges_in_bounds(found[1]))


# Answers repeat the same few short candidates: each is judged once.
_short_marker_text = lru_cache(maxsize=4096)(_is_marker_text)


def scan_markers(text: str) -> list[Marker]:
    """Every citation marker of `text` by docs/citations.md, in order, in time linear in its length.

    Where the spec leaves room, the readings docs/citations.md lists ("The
    project's readings where the contract is silent") hold here, and the live
    display, strip and finalize share them.
    """
    return markers_of(split_candidates(text))


def markers_of(cut: Split) -> list[Marker]:
    """The markers of a text, from its split_candidates() cut."""
    parts, excluded = cut
    ends = list(accumulate(map(len, parts)))
    return [
        Marker(ends[i - 1], ends[i], marker_members(parts[i]))
        for i in range(1, len(parts), 2)
        if i not in excluded
    ]


# --- Rendering -----------------------------------------------------------------


def render_marker(members: Iterable[int]) -> str:
    """The canonical form of a marker: its distinct members ascending, joined by ", "."""
    numbers = sorted(set(members))
    if not numbers:
        raise ValueError("a marker has at least one member")
    return "[" + ", ".join(map(str, numbers)) + "]"


def render_written(members: list[int]) -> str:
    """A marker of `members` in the order given, joined by ", " (strip's re-rendering, a provider's
    marker of its native citations): written order, not sorted, decides first-citation order."""
    return "[" + ", ".join(map(str, members)) + "]"


def in_range(value: int, count: int) -> bool:
    """Whether a member names one of `count` sources (1..count): the one in-range rule."""
    return 0 < value <= count


def all_in_range(members: Sequence[int], count: int) -> bool:
    """Whether a marker's members (at least one) all name one of `count` sources."""
    # (1..count has no gap: its least and greatest members decide.)
    return in_range(min(members), count) and in_range(max(members), count)
