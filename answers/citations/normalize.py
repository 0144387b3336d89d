"""Marker dialects per docs/citations.md ("normalize_markers"): rewritten into markers in one pass."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import lru_cache
from heapq import heapify, heappop, heapreplace

from answers.citations.blocks import Layout, lines_removed_keep_code
from answers.citations.code import code_layout, code_regions
from answers.citations.scan import RANGE, SEP, ranges_in_bounds

# The table's order is the order in which the dialects are tried at a position.
DIALECTS = ("footnote-definition", "double", "fullwidth", "dagger", "dagger-indexed", "label", "footnote")


@dataclass(frozen=True)
class Rewrite:
    """One dialect marker: where it stood in the input, and what stands there in the output."""

    dialect: str
    start: int  # in the input
    end: int
    replacement: str  # "[M]", or "" for a removed footnote definition line


@dataclass(frozen=True)
class Normalized:
    text: str
    found: list[tuple[str, str]]  # (dialect name, the exact text rewritten or removed), in the order met
    rewrites: list[Rewrite] = field(default_factory=list)  # the same, with positions (for the trail)
    # code_layout(text) when normalize could tell it from the input's without reading `text` again
    # (its rewrites moved no code): strip_out_of_range_markers(text, n, code=...) takes it.
    code: Layout | None = field(default=None, compare=False, repr=False)


# --- The grammar --------------------------------------------------------------
#
# Each dialect's forms are grouped by the bracket that opens them: one pattern
# per opening bracket starts with that literal, so the engine skips to the next
# one as fast as it finds a character (a class of three brackets is ten times
# slower). Possessive quantifiers keep a failed candidate, such as
# "[citation:" and a million digits, to one look at each character. The
# backslash and "(" refusals live in the patterns, so a form refused by them
# lets the next dialect try at the same position; the code refusal and the
# range bounds are judged after the match.


def _members(group: str) -> str:
    """A member list M, captured in `group`: exactly the bracket content of a canonical marker."""
    return rf"(?P<{group}>[ \t]*+{RANGE}(?:{SEP}{RANGE})*+[ \t]*+)"


SQUARE, LENTICULAR, FULLWIDTH = "[", "\u3010", "\uff3b"
_LABELS = "citation|cite|sources|source|reference|ref|document|doc|id"  # the longer of two first
_NO_LINK = r"(?!\()"
_M_START = r"[ \t0-9]"
# What follows the opening bracket, per dialect and bracket: a gate (what the
# next characters must be, checked first: a canonical marker fails every gate
# at once, before any dialect's grammar is tried) and the form.
_FORMS: dict[str, dict[str, tuple[str, str]]] = {
    # At a line start (no backslash can precede it); the rest of the line and its break go too.
    "footnote-definition": {SQUARE: (r"\^", r"\^(?<![^\n]\[\^)[0-9]++\^?+\]:[^\n]*+\n?+")},
    # [[M]], or [[L S M]] with a label as in `label` ([[Source: 3]], [[ source : 3 ]]).
    "double": {
        SQUARE: (
            r"\[",
            r"\[(?:[ \t]*+(?ai:(?>"
            + _LABELS
            + r"))[ \t]*+(?::[ \t]*+)?+)?+"
            + _members("m_double")
            + r"\]\]"
            + _NO_LINK,
        )
    },
    "fullwidth": {
        LENTICULAR: (
            "[\u3010 \t0-9]",
            "(?:\u3010" + _members("m_fw_double") + "\u3011\u3011|" + _members("m_fw") + "\u3011)" + _NO_LINK,
        ),
        FULLWIDTH: (_M_START, _members("m_fw_square") + "\uff3d" + _NO_LINK),
    },
    # Only the opening of a dagger marker: where its text T ends is looked up by
    # _Closes, since a pattern scanning T from each opening of a long line would
    # take time quadratic in the line.
    "dagger": {
        LENTICULAR: (_M_START, _members("m_dagger_lenticular") + "\u2020"),
        SQUARE: ("[ \t0-9,\\-\u2013]*+\u2020", _members("m_dagger") + "\u2020"),
    },
    # OpenAI's file-search marker: message and result index, no source number of ours.
    # (Its text T is looked up by _Closes, as a dagger's.)
    "dagger-indexed": {LENTICULAR: ("[0-9]", "[0-9]++:[0-9]++\u2020")},
    "label": {
        SQUARE: (
            "[ \t]*+[A-Za-z]",
            rf"[ \t]*+(?ai:(?>{_LABELS}))[ \t]*+(?::[ \t]*+)?+{_members('m_label')}\]{_NO_LINK}",
        )
    },
    "footnote": {
        SQUARE: (r"\^", r"\^(?P<m_footnote>[0-9]++)\^?+\]" + _NO_LINK),
        LENTICULAR: (r"\^", r"\^(?P<m_footnote_lenticular>[0-9]++)\^?+\u3011" + _NO_LINK),  # Kimi's 【^1^】
    },
}
_GROUP = {name: name.replace("-", "_") for name in DIALECTS}  # a group name is an identifier
_DAGGER = "\u2020"
_DAGGER_T_ENDS = {LENTICULAR: re.compile("[\u3011\n]"), SQUARE: re.compile(r"[\]\n]")}
_DAGGER_CLOSE = {LENTICULAR: "\u3011", SQUARE: "]"}


@dataclass(frozen=True)
class _Dialects:
    """The forms some dialects open with one bracket, in one pattern tried in table order."""

    names: tuple[str, ...]
    opening: str
    pattern: re.Pattern[str]
    kinds: dict[int, tuple[str, tuple[int, ...]]]  # a dialect's group -> its name and its M groups

    def after(self, name: str) -> _Dialects | None:
        """The dialects to try where `name` was refused."""
        later = self.names[self.names.index(name) + 1 :]
        return _dialects(later, self.opening) if later else None


@lru_cache(maxsize=128)
def _dialects(names: tuple[str, ...], opening: str) -> _Dialects | None:
    names = tuple(name for name in names if opening in _FORMS[name])
    if not names:
        return None
    gates = "|".join(dict.fromkeys(_FORMS[name][opening][0] for name in names))
    forms = "|".join(f"(?P<{_GROUP[name]}>{_FORMS[name][opening][1]})" for name in names)
    bracket = re.escape(opening)
    pattern = re.compile(rf"{bracket}(?={gates})(?<!\\{bracket})(?:{forms})")  # a backslash before it: text
    groups = pattern.groupindex
    members = {name: re.compile(_FORMS[name][opening][1]).groupindex for name in names}
    kinds = {groups[_GROUP[name]]: (name, tuple(groups[g] for g in members[name])) for name in names}
    return _Dialects(names, opening, pattern, kinds)


def dialect_selection(dialects: Collection[str] | None) -> tuple[str, ...]:
    """The dialects named (all when None), in DIALECTS' order; ValueError on an unknown name."""
    if dialects is None:
        return DIALECTS
    unknown = set(dialects).difference(DIALECTS)
    if unknown:
        raise ValueError(f"unknown marker dialects: {', '.join(sorted(unknown))}")
    return tuple(name for name in DIALECTS if name in dialects)


# --- The scan -------------------------------------------------------------------


class _Closes:
    """Where each dagger's text T ends: the next closing bracket or line break.

    Remembers the last answer per bracket: openings come left to right, so each
    character is looked at once, however many openings share a line.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._last: dict[str, tuple[int, int]] = {}

    def end(self, opening: str, after: int) -> int:
        """End of the dagger marker whose T starts at `after`; -1 when it has none."""
        start, stop = self._last.get(opening, (1, 0))
        if not start <= after <= stop:
            found = _DAGGER_T_ENDS[opening].search(self._text, after)
            stop = found.start() if found else len(self._text)
            self._last[opening] = (after, stop)
        if stop == len(self._text) or self._text[stop] != _DAGGER_CLOSE[opening]:
            return -1
        if self._text.startswith("(", stop + 1):
            return -1  # a link
        return stop + 1


class _Scan:
    """The rules that judge a dialect marker once a pattern matched: code, range bounds, dagger ends."""

    def __init__(self, text: str) -> None:
        self.text = text
        # Where code is, on the text as the model wrote it.
        self.layout = code_layout(text)
        self.code = code_regions(text) if self.layout is None else self.layout.regions
        self.code_starts = [start for start, _ in self.code]
        self.closes = _Closes(text)

    def code_at(self, start: int) -> tuple[int, int] | None:
        """The code span or block that text[start] is in, if any."""
        k = bisect_right(self.code_starts, start) - 1
        if k >= 0 and self.code[k][1] > start:
            return self.code[k]
        return None

    def judge(self, match: re.Match[str], name: str, groups: tuple[int, ...]) -> tuple[int, str] | None:
        """The end of the dialect marker `match` found and what replaces it; None when refused."""
        start, end = match.span()
        replacement = ""  # a footnote definition goes
        if name == "dagger-indexed":
            end = self.closes.end(self.text[start], end)
            if end < 0:
                return None
            replacement = "[0]"  # names no source of ours: strip removes it, and the trail records it
        elif groups:
            members = next(filter(None, map(match.group, groups)))
            if ("-" in members or "\u2013" in members) and not ranges_in_bounds(members):
                return None  # an M with a range out of bounds is no member list
            if name == "dagger":
                end = self.closes.end(self.text[start], end)
                if end < 0:
                    return None
            replacement = "[" + members + "]"
        if self.code and self.code_at(start) is not None:
            return None  # (only where it starts matters: a dagger's T or a definition's line may hold code)
        return end, replacement

    def retry(self, start: int, dialects: _Dialects, refused: str) -> tuple[str, tuple[int, str]] | None:
        """The dialect after `refused` in order that matches at `start` and that the rules let through."""
        later = dialects.after(refused)
        while later is not None:
            match = later.pattern.match(self.text, start)
            if match is None:
                return None
            name, groups = later.kinds[match.lastindex or 0]
            verdict = self.judge(match, name, groups)
            if verdict is not None:
                return name, verdict
            later = later.after(name)
        return None


class _Stream:
    """The candidates of one opening bracket, in order; restartable further on."""

    def __init__(self, dialects: _Dialects, text: str) -> None:
        self.dialects = dialects
        self.kinds = dialects.kinds
        self._text = text
        self._matches = dialects.pattern.finditer(text)
        self.match = next(self._matches, None)

    def following(self, at: int | None) -> re.Match[str] | None:
        """The next candidate: the one after the current, or the first from `at` on."""
        if at is not None:
            self._matches = self.dialects.pattern.finditer(self._text, at)
        self.match = next(self._matches, None)
        return self.match


def _streams(text: str, names: tuple[str, ...]) -> list[_Stream]:
    streams = []
    # Dagger forms cost a look at every canonical marker: only where a dagger may be.
    chosen = names if _DAGGER in text else tuple(name for name in names if name != "dagger")
    for opening in (SQUARE, LENTICULAR, FULLWIDTH):
        dialects = _dialects(chosen, opening) if opening in text else None
        if dialects is not None:
            streams.append(_Stream(dialects, text))
    return streams


def normalize_markers(text: str, dialects: Collection[str] | None = None) -> Normalized:
    """Rewrite the marker dialects of `text` (all, or those named in `dialects`) into canonical markers.

    One pass, left to right, in time linear in the length of the text. Where
    the spec leaves room, this reading holds (and the rest of the core shares
    it): lines end at "\\n" only, so a dagger's T may hold a "\\r"; a dialect
    marker is refused when its first character is in code (a code span or
    block as scan_markers finds them); the code its text holds after that (in
    a dagger's T, on a footnote definition's line) refuses nothing.
    """
    # One stream per opening bracket, merged in order of position (no two
    # streams have a candidate at the same position).
    heap = [
        (s.match.start(), n, s) for n, s in enumerate(_streams(text, dialect_selection(dialects))) if s.match
    ]
    if not heap:
        return Normalized(text, [])
    heapify(heap)
    scan = _Scan(text)
    out: list[str] = []
    found: list[tuple[str, str]] = []
    rewrites: list[Rewrite] = []
    done = 0  # where the text not yet copied to `out` starts
    while heap:
        start, n, stream = heap[0]
        match = stream.match
        assert match is not None  # a stream leaves the heap with its last candidate
        at: int | None = None  # where the stream goes on: None for its next candidate
        if start >= done:
            name, groups = stream.kinds[match.lastindex or 0]
            verdict = scan.judge(match, name, groups)
            if verdict is None and (retried := scan.retry(start, stream.dialects, name)) is not None:
                name, verdict = retried
            if verdict is not None:
                done_at, replacement = verdict
                out += (text[done:start], replacement)
                found.append((name, text[start:done_at]))
                rewrites.append(Rewrite(name, start, done_at, replacement))
                done = done_at
                if match.end() > done:  # a shorter dialect after a refused one: finditer() went past it
                    at = done
            elif scan.code and (code := scan.code_at(start)) is not None:
                at = code[1]  # refused inside code: nothing that starts in it is a dialect marker
            elif text.find(stream.dialects.opening, start + 1, match.end()) >= 0:
                at = start + 1  # refused: the scan moves one character on, to what finditer() skipped
        elif match.end() > done:  # inside a dagger's T, rewritten already
            at = done
        following = stream.following(at)
        if following is None:
            heappop(heap)
        else:
            heapreplace(heap, (following.start(), n, stream))
    out.append(text[done:])
    return _normalized(text, "".join(out), found, rewrites, scan.layout)


def _normalized(
    text: str, result: str, found: list[tuple[str, str]], rewrites: list[Rewrite], layout: Layout | None
) -> Normalized:
    """normalize_markers(text)'s result, with its code where the input's `layout` tells it."""
    if layout is None or not moves_no_code(text, rewrites):
        return Normalized(result, found, rewrites)
    return Normalized(
        result,
        found,
        rewrites,
        layout.moved(result, [(r.start, r.end, len(r.replacement)) for r in rewrites]),
    )


_MAY_MOVE_CODE = re.compile("[`|\r]")


def moves_no_code(text: str, rewrites: list[Rewrite]) -> bool:
    """Whether `rewrites` of `text` leave code where it was, only moved along.

    A rewrite never starts in code. A dialect marker holding no backtick, "|"
    or line break changes no code span, table cell or line; footnote
    definitions, whole lines, change none where blocks.lines_removed_keep_code
    says so.
    """
    definitions = []
    for rewrite in rewrites:
        if _MAY_MOVE_CODE.search(text, rewrite.start, rewrite.end):
            return False
        if rewrite.dialect == "footnote-definition":
            definitions.append((rewrite.start, rewrite.end))
        elif text.find("\n", rewrite.start, rewrite.end) >= 0:
            return False
    return not definitions or lines_removed_keep_code(text, definitions)
