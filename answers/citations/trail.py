"""One answer's citation trail, computed from its raw text: stored by the pipeline, re-checked by audit."""

from __future__ import annotations

import enum
from array import array
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Protocol

from answers.citations.draft import Draft
from answers.citations.finalize import Finalized, finalize_citations
from answers.citations.normalize import Normalized, Rewrite, normalize_markers
from answers.citations.scan import Marker, in_range, marker_members, markers_of, scan_markers
from answers.citations.strip import StripResult, StripTrace, Verdict, strip_out_of_range_markers


class SourceStatus(enum.StrEnum):
    """What finalize decided for a retrieved source (AnswerSource.Status takes its values from here)."""

    CITED = "cited"
    DROPPED = "dropped"
    FALLBACK = "fallback"


class MarkerOutcome(enum.StrEnum):
    """What became of one marker (docs: the per-marker trail record)."""

    KEPT = "kept"  # in the final text with every member (numbers may be renumbered)
    REWRITTEN = "rewritten"  # in the final text, some members stripped
    REMOVED = "removed"  # every member stripped: the marker and its blank run deleted
    UNMARKED = "unmarked"  # survived stripping, but a later removal made it text (link, code, ...)


@dataclass(frozen=True)
class SourceOutcome:
    """What finalize decided for one retrieved source (by its original number)."""

    original_number: int
    final_number: int | None
    status: SourceStatus
    citation_count: int  # markers of the final text that cite it
    first_cited_offset: int | None  # offset in the raw text of its first marker
    renumbered: bool = False  # source_renumbered(): stored on AnswerSource, read by admin and metrics


def source_renumbered(original_number: int, final_number: int | None) -> bool:
    """The rule, spelled once: a source is renumbered when it kept a number in the final text
    other than its retrieval number (an answer is renumbered when one of its sources is)."""
    return final_number is not None and final_number != original_number


@dataclass(frozen=True)
class MarkerDecision:
    """One marker of the raw text, or one that formed in a later strip pass, and what became of it."""

    raw_start: int  # raw positions of its first character and just after its last one
    raw_end: int
    written: str  # its text when found
    pass_number: int  # 1: a marker of the raw text; n > 1: formed by pass n - 1's removals
    members: tuple[int, ...]  # as written: written order, ranges expanded, repeats removed
    stripped: tuple[int, ...]  # members removed as out of range, written order
    outcome: MarkerOutcome
    final_start: int | None = None  # span in the final text (kept and rewritten only)
    final_end: int | None = None
    final: str | None = None  # its canonical text in the final text
    final_members: tuple[int, ...] = ()  # its members' final numbers, ascending
    dialect: str | None = None  # the dialect it was normalized from

    def as_json(self) -> dict[str, Any]:
        """The stored form (Answer.markers holds a list of these)."""
        return {
            "raw_start": self.raw_start,
            "raw_end": self.raw_end,
            "written": self.written,
            "pass": self.pass_number,
            "dialect": self.dialect,
            "members": list(self.members),
            "stripped": list(self.stripped),
            "outcome": self.outcome.value,
            "final_start": self.final_start,
            "final_end": self.final_end,
            "final": self.final,
            "final_members": list(self.final_members),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MarkerDecision:
        return cls(
            raw_start=data["raw_start"],
            raw_end=data["raw_end"],
            written=data["written"],
            pass_number=data["pass"],
            dialect=data["dialect"],
            members=tuple(data["members"]),
            stripped=tuple(data["stripped"]),
            outcome=MarkerOutcome(data["outcome"]),
            final_start=data["final_start"],
            final_end=data["final_end"],
            final=data["final"],
            final_members=tuple(data["final_members"]),
        )


@dataclass(frozen=True)
class Trail:
    final_text: str
    stripped: list[int]
    fallback: bool
    sources: list[SourceOutcome]  # in retrieval order, one per retrieved source
    markers: list[MarkerDecision]  # by raw_start, then pass
    # (dialect name, the text rewritten or removed) per normalize_markers() rewrite, in the
    # order met: the record of step 0.
    normalized: list[tuple[str, str]] = field(default_factory=list)

    def markers_json(self) -> list[dict[str, Any]]:
        return [marker.as_json() for marker in self.markers]

    def normalized_json(self) -> list[dict[str, str]]:
        """The stored form of `normalized` (Answer.normalized, the trail API's `normalized`)."""
        return [{"dialect": dialect, "text": text} for dialect, text in self.normalized]


def final_markers(record: list[dict[str, Any]]) -> list[Marker]:
    """The markers of the final text, from a stored record (Answer.markers), in text order."""
    found = [
        Marker(entry["final_start"], entry["final_end"], tuple(entry["final_members"]))
        for entry in record
        if entry["final_start"] is not None
    ]
    return sorted(found, key=lambda marker: marker.start)


@dataclass(frozen=True)
class Steps:
    """The three steps on one raw text, in their order (docs/citations.md, "The order of the steps")."""

    normalized: Normalized
    stripped: StripResult
    final: Finalized[int]  # against the sources numbered 1..source_count

    @property
    def cited(self) -> list[int]:
        """The original numbers of the sources the final text cites, in their final order: none when
        it cites nothing (then its references are the untouched retrieved list, which it does not cite)."""
        return [] if self.final.fallback else self.final.references


class StepsTrace(StripTrace, Protocol):
    """What run_steps tells an observer (the trail): normalize's result, then strip's passes."""

    def normalized(self, result: Normalized) -> None:
        """Normalize's result, before strip starts on its text."""


def run_steps(
    raw_text: str, source_count: int, dialects: Collection[str] | None = None, trace: StepsTrace | None = None
) -> Steps:
    """Normalize, strip, then finalize `raw_text` against sources 1..source_count, each step handing
    the next what it knows of the text (where code is, its cut), so that nothing is read twice.

    `dialects`: the dialect names normalize applies (None: all; ANSWERS_MARKER_DIALECTS).
    """
    normalized = normalize_markers(raw_text, dialects)
    if trace is not None:
        trace.normalized(normalized)
    stripped = strip_out_of_range_markers(normalized.text, source_count, trace, code=normalized.code)
    final = finalize_citations(stripped.text, list(range(1, source_count + 1)), cut=stripped.cut)
    return Steps(normalized, stripped, final)


def compute_trail(raw_text: str, source_count: int, *, dialects: Collection[str] | None = None) -> Trail:
    """Normalize, strip, then finalize, as docs/citations.md orders, recording what each step decided.

    `dialects` are the dialect names normalize applies (None: all; ANSWERS_MARKER_DIALECTS).
    Every span in the record is in the raw text as the model wrote it.
    """
    recorder = _Recorder(raw_text)
    steps = run_steps(raw_text, source_count, dialects, recorder)
    normalized, stripped, final = steps.normalized, steps.stripped, steps.final
    numbers = list(range(1, source_count + 1))
    dialect_at = {(r.start, r.end): r.dialect for r in normalized.rewrites if r.replacement}
    markers = recorder.decisions(stripped, final, dialect_at)
    first_offset = recorder.first_citations(source_count)

    counts: dict[int, int] = {}
    for decision in markers:
        for member in decision.final_members:
            counts[member] = counts.get(member, 0) + 1

    outcomes = []
    for original in numbers:
        new = final.mapping.get(original)
        if final.fallback:
            status = SourceStatus.FALLBACK
        elif new is None:
            status = SourceStatus.DROPPED
        else:
            status = SourceStatus.CITED
        outcomes.append(
            SourceOutcome(
                original_number=original,
                final_number=new,
                status=status,
                citation_count=counts.get(new, 0) if new is not None else 0,
                first_cited_offset=first_offset.get(original) if status == SourceStatus.CITED else None,
                renumbered=source_renumbered(original, new),
            )
        )
    return Trail(
        final_text=final.text,
        stripped=stripped.stripped,
        fallback=final.fallback,
        sources=outcomes,
        markers=markers,
        normalized=normalized.found,
    )


def _origin(raw_text: str, rewrites: list[Rewrite]) -> array[int]:
    """For each character of the normalized text, its position in the raw text.

    A rewritten marker's characters all come from its dialect marker: its first
    one from the dialect's first character, the rest from its last, so the
    marker's raw span is the whole dialect marker.
    """
    origin = array("q")
    copied = 0
    for rewrite in rewrites:
        origin.extend(range(copied, rewrite.start))
        if rewrite.replacement:
            origin.append(rewrite.start)
            origin.extend([rewrite.end - 1] * (len(rewrite.replacement) - 1))
        copied = rewrite.end
    origin.extend(range(copied, len(raw_text)))
    return origin


# --- Following strip's passes ------------------------------------------------------


@dataclass
class _Found:
    """A marker as the passes met it, while they run."""

    raw_start: int
    raw_end: int
    written: str
    pass_number: int
    members: tuple[int, ...]
    current: str  # its text now
    stripped: list[int] = field(default_factory=list)
    removed: bool = False
    final: Marker | None = None  # the marker it is in the final text


class _Recorder:
    """Hears strip's passes (strip.StripTrace) and keeps, per marker, where it came from in the raw text.

    It keeps the raw position of every character of the text the current pass
    works on (an array, so memory stays proportional to the text); a pass over
    the whole text rebuilds it once, and local passes read it through their
    draft, rebuilt once the draft's edits are applied. Every new marker's raw
    span comes from the raw positions of its first and last characters.
    """

    def __init__(self, raw_text: str) -> None:
        self._raw_text = raw_text
        self._size = len(raw_text)  # of the text strip starts from (normalize's, once it is known)
        # The raw position of each character of that text: None while it is the raw text itself,
        # else the map through normalize's rewrites.
        self._identity: array[int] | None = None
        self._positions: array[int] | None = None  # None: the raw text itself, unchanged
        self._passes = 0
        self._found: list[_Found] = []
        self._live: dict[tuple[int, int], _Found] = {}  # by raw span, every marker not removed

    def normalized(self, result: Normalized) -> None:
        self._size = len(result.text)
        if result.rewrites:
            self._identity = _origin(self._raw_text, result.rewrites)

    def _at(self, i: int) -> int:
        if self._positions is None:
            return i if self._identity is None else self._identity[i]
        return self._positions[i]

    def _slice(self, start: int, end: int) -> array[int]:
        if self._positions is None:
            if self._identity is None:  # the raw text's own positions, made once when needed
                self._identity = array("q", range(self._size))
            return self._identity[start:end]
        return self._positions[start:end]

    def _rendered(self, start: int, end: int, size: int) -> array[int]:
        """Positions for a marker re-rendered in place of text[start:end]: it spans their raw span."""
        return array("q", [self._at(start)] + [self._at(end - 1)] * (size - 1))

    def _meet(self, start: int, end: int, written: str) -> _Found:
        """The marker at text[start:end] of this pass: one met before if its characters are the same."""
        span = (self._at(start), self._at(end - 1) + 1)
        found = self._live.get(span)
        if found is None or found.current != written:
            found = _Found(*span, written, self._passes, marker_members(written), written)
            self._found.append(found)
            self._live[span] = found
        return found

    def _strip(self, found: _Found, verdict: Verdict) -> None:
        """Apply strip's verdict on the marker (None: it keeps every member)."""
        if verdict is None:
            return
        replacement, dropped = verdict
        found.stripped += dropped
        found.current = replacement
        if not replacement:
            found.removed = True
            del self._live[(found.raw_start, found.raw_end)]

    def full_pass(
        self, parts: list[str], excluded: set[int], edited: list[str], verdicts: dict[str, Verdict]
    ) -> None:
        self._passes += 1
        positions = array("q")
        copied = 0  # the text before this index is in `positions` already
        start = 0
        for j, (part, now) in enumerate(zip(parts, edited, strict=True)):
            end = start + len(part)
            if j % 2 and j not in excluded:
                found = self._meet(start, end, part)
                if now != part:
                    self._strip(found, verdicts[part])
            if now != part:
                positions += self._slice(copied, start)
                if j % 2:
                    if now:
                        positions += self._rendered(start, end, len(now))
                elif now:
                    # A blank run went from its start or its end.
                    kept = start if part.startswith(now) else end - len(part.lstrip(" \t"))
                    positions += self._slice(kept, kept + len(now))
                copied = end
            start = end
        if copied:
            positions += self._slice(copied, start)
            self._positions = positions

    def local_pass(self, draft: Draft, markers: list[tuple[int, int, str]], verdicts: list[Verdict]) -> None:
        self._passes += 1
        for (start, end, written), verdict in zip(markers, verdicts, strict=True):
            self._strip(self._meet(start, end, written), verdict)

    def drafted(self, draft: Draft) -> None:
        edits = draft.edits()
        if not edits:
            return
        positions = array("q")
        copied = 0
        for start, end, replacement in edits:
            positions += self._slice(copied, start)
            if replacement:
                positions += self._rendered(start, end, len(replacement))
            copied = end
        positions += self._slice(copied, len(draft.base))
        self._positions = positions

    def first_citations(self, count: int) -> dict[int, int]:
        """For each source cited in range, the raw position of the first marker (of the first pass,
        the markers of the normalized text) that cites it."""
        first: dict[int, int] = {}
        for found in self._found:
            if found.pass_number == 1:
                for member in found.members:
                    if in_range(member, count):
                        first.setdefault(member, found.raw_start)
        return first

    def decisions(
        self, stripped: StripResult, final: Finalized[int], dialect_at: dict[tuple[int, int], str]
    ) -> list[MarkerDecision]:
        """Every marker's decision, once `stripped` is strip's result and `final` finalize's."""
        stripped_text, final_text = stripped.text, final.text
        before = scan_markers(stripped_text) if stripped.cut is None else markers_of(stripped.cut)
        after = scan_markers(final_text) if final.cut is None else markers_of(final.cut)
        # Finalize rewrites each marker in place, so the markers of both texts pair up in order.
        for was, now in zip(before, after, strict=True):
            self._meet(was.start, was.end, stripped_text[was.start : was.end]).final = now
        decisions = []
        for found in self._found:
            marker = found.final
            if found.removed:
                outcome = MarkerOutcome.REMOVED
            elif marker is None:
                outcome = MarkerOutcome.UNMARKED
            else:
                outcome = MarkerOutcome.REWRITTEN if found.stripped else MarkerOutcome.KEPT
            decisions.append(
                MarkerDecision(
                    raw_start=found.raw_start,
                    raw_end=found.raw_end,
                    written=found.written,
                    pass_number=found.pass_number,
                    members=found.members,
                    stripped=tuple(found.stripped),
                    outcome=outcome,
                    final_start=None if marker is None else marker.start,
                    final_end=None if marker is None else marker.end,
                    final=None if marker is None else final_text[marker.start : marker.end],
                    final_members=() if marker is None else marker.members,
                    # A marker of the first pass that stands where a dialect marker stood came from it.
                    dialect=dialect_at.get((found.raw_start, found.raw_end))
                    if found.pass_number == 1
                    else None,
                )
            )
        decisions.sort(key=lambda d: (d.raw_start, d.pass_number))
        return decisions
