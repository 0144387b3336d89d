"""Where Cohere's citations put their markers in the reply's text (pure: no client, no Django).

docs/howto/providers.md: each citation names a span of the reply (`start`/`end`, code points,
and the span's `text`) and the documents backing it (`sources`, by the ids we sent). Its marker,
`[` + the distinct numbers of those ids joined by `, ` + `]` (an id naming no sent document is
written 0), goes at the span's end, moved back before the span's trailing whitespace and
sentence punctuation, with one space before it: `Emperor penguins.` citing document 1 gives
`Emperor penguins [1].` Citations placed at one point make one marker, in arrival order, each
number once. When `text[start:end]` is not the citation's `text`, the span is the first
occurrence of that text at or after `start` (else at or before it), else the end of the text,
and the citation is recorded `repaired`.

Cohere sends a reply's citations after the text they cite (the API's own example stream: every
`citation-start` after the last `content-delta`), so a marker lands inside text already
received. The `Placer` keeps the text it has until told to release it (the reader does at the
end of each content block, answers.providers.cohere_provider): text never goes out before the
markers that belong in it are known. A release before the end holds back the text's trailing
whitespace and punctuation, and any marker there, since a citation still to come may end there.
A citation whose span ends past the text received is held until that text arrives (or the
reply ends: then it is repaired). One that would go inside text already released (a citation
arriving after its block ended) goes at the first point not yet released and is recorded
`repaired`.
"""

from __future__ import annotations

import copy
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from answers.citations.scan import render_written

# The sentence punctuation a marker moves back before (with whitespace).
PUNCTUATION = frozenset(".,;:!?")


def _trailing(char: str) -> bool:
    return char.isspace() or char in PUNCTUATION


@dataclass
class Citation:
    """One citation as the provider gave it, and, once placed, where its span and marker are."""

    start: int | None
    end: int | None
    text: str | None
    ids: tuple[str | None, ...]  # its sources' ids, as sent back
    numbers: tuple[int, ...]  # the distinct source numbers of those ids, in order (0: no such document)
    span: tuple[int, int] | None = None  # the cited span in the reply's text, once placed
    point: int | None = None  # where in the reply's text its marker goes, once placed
    repaired: bool = False


def numbers_of(ids: tuple[str | None, ...], numbers: Mapping[str, int]) -> tuple[int, ...]:
    """The distinct numbers `ids` name, in order; an id naming no sent document is 0."""
    found: list[int] = []
    for source_id in ids:
        number = numbers.get(source_id, 0) if isinstance(source_id, str) else 0
        if number not in found:
            found.append(number)
    return tuple(found)


def locate(text: str, citation: Citation) -> tuple[int, int, bool]:
    """The cited span's offsets in `text`, and whether they had to be repaired."""
    start, end, cited = citation.start, citation.end, citation.text
    within = start is not None and end is not None and 0 <= start <= end <= len(text)
    if within and (not cited or text[start:end] == cited):
        return cast(int, start), cast(int, end), False
    if cited:
        origin = min(max(start or 0, 0), len(text))
        found = text.find(cited, origin)
        if found < 0:
            found = text.rfind(cited, 0, origin + len(cited))
        if found >= 0:
            return found, found + len(cited), True
    return len(text), len(text), True


def marker_point(text: str, start: int, end: int) -> int:
    """The span's end, moved back before its trailing whitespace and sentence punctuation."""
    point = end
    while point > start and _trailing(text[point - 1]):
        point -= 1
    return point


def marker(numbers: list[int]) -> str:
    """The marker placed for a citation's numbers, in the order it names them, after one space."""
    return " " + render_written(numbers)


@dataclass
class Placer:
    """The reply's text and citations as they stream in; `release()` gives the raw text out."""

    parts: list[str] = field(default_factory=list)
    length: int = 0  # code points received
    released: int = 0  # code points of the reply given out so far
    citations: list[Citation] = field(default_factory=list)  # arrival order
    pending: list[Citation] = field(default_factory=list)  # not placed yet
    markers: dict[int, list[int]] = field(default_factory=dict)  # placed, not given out: point -> numbers
    given: list[tuple[int, int, int]] = field(default_factory=list)  # (point, raw offset of "[", length)
    raw_length: int = 0

    def add_text(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.length += len(text)

    def add_citation(self, citation: Citation) -> None:
        self.citations.append(citation)
        self.pending.append(citation)

    @property
    def unreleased(self) -> int:
        return self.length - self.released

    def _text(self) -> str:
        if len(self.parts) > 1:
            self.parts = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def _place(self, text: str, final: bool) -> None:
        waiting = []
        for citation in self.pending:
            if not final and citation.end is not None and citation.end > len(text):
                waiting.append(citation)  # its text has not arrived yet
                continue
            start, end, repaired = locate(text, citation)
            point = marker_point(text, start, end)
            if point < self.released:
                point, repaired = self.released, True  # inside text already given out
            citation.span, citation.point, citation.repaired = (start, end), point, repaired
            if citation.numbers:
                merged = self.markers.setdefault(point, [])
                merged.extend(n for n in citation.numbers if n not in merged)
        self.pending = waiting

    def release(self, *, final: bool) -> str:
        """The raw text ready to go out: the reply's text up to where no marker may still land
        (all of it when `final`), with the markers placed in it."""
        text = self._text()
        self._place(text, final)
        cut = len(text)
        if not final:
            while cut > self.released and _trailing(text[cut - 1]):
                cut -= 1
        out: list[str] = []
        position = self.released
        for point in sorted(p for p in self.markers if p < cut or final):
            written = marker(self.markers.pop(point))
            out.append(text[position:point])
            self.raw_length += point - position
            self.given.append((point, self.raw_length + 1, len(written)))
            out.append(written)
            self.raw_length += len(written)
            position = point
        out.append(text[position:cut])
        self.raw_length += cut - position
        self.released = cut
        return "".join(out)

    def held(self) -> str:
        """What a final release would give out now, leaving this placer as it is (a failure's
        partial text)."""
        return copy.deepcopy(self).release(final=True)

    def records(self) -> list[dict[str, object]]:
        """Each citation as the provider gave it, with where its marker and span went in the raw
        text given out (None where that did not go out): the trail's `native` record."""
        points = [point for point, _, _ in self.given]
        shifts = [0]
        for _, _, size in self.given:
            shifts.append(shifts[-1] + size)
        marker_at = {point: at for point, at, _ in self.given}

        def raw(offset: int, after_markers_there: bool) -> int:
            index = (bisect_right if after_markers_there else bisect_left)(points, offset)
            return offset + shifts[index]

        records: list[dict[str, object]] = []
        for c in self.citations:
            span_at = None
            if c.span is not None and c.span[1] <= self.released:
                end = raw(c.span[1], False)
                span_at = [min(raw(c.span[0], True), end), end]
            records.append(
                {
                    "start": c.start,
                    "end": c.end,
                    "text": c.text,
                    "sources": list(c.ids),
                    "marker_at": marker_at.get(c.point) if c.point is not None and c.numbers else None,
                    "repaired": c.repaired,
                    "span_at": span_at,
                }
            )
        return records
