"""One answer's citation trail, computed from its raw text: stored by the pipeline, re-checked by audit."""

from __future__ import annotations

from dataclasses import dataclass

from answers.citations import finalize_citations, scan_markers, strip_out_of_range_markers

CITED = "cited"
DROPPED = "dropped"
FALLBACK = "fallback"


@dataclass(frozen=True)
class SourceOutcome:
    """What finalize decided for one retrieved source (by its original number)."""

    original_number: int
    final_number: int | None
    status: str  # cited | dropped | fallback
    citation_count: int  # markers of the final text that cite it
    first_cited_offset: int | None  # offset in the raw text of its first marker


@dataclass(frozen=True)
class Trail:
    final_text: str
    stripped: list[int]
    fallback: bool
    sources: list[SourceOutcome]  # in retrieval order, one per retrieved source

    @property
    def renumbered(self) -> bool:
        return any(s.final_number not in (None, s.original_number) for s in self.sources)


def compute_trail(raw_text: str, source_count: int) -> Trail:
    """Strip, then finalize, exactly as docs/citations.md orders; then count and locate citations."""
    stripped = strip_out_of_range_markers(raw_text, source_count)
    numbers = list(range(1, source_count + 1))
    final = finalize_citations(stripped.text, numbers)

    first_offset: dict[int, int] = {}
    for marker in scan_markers(raw_text):
        for member in marker.members:
            if 1 <= member <= source_count:
                first_offset.setdefault(member, marker.start)

    counts: dict[int, int] = {}
    if not final.fallback:
        for marker in scan_markers(final.text):
            for member in marker.members:
                counts[member] = counts.get(member, 0) + 1

    outcomes = []
    for original in numbers:
        new = final.mapping.get(original)
        if final.fallback:
            status = FALLBACK
        elif new is None:
            status = DROPPED
        else:
            status = CITED
        outcomes.append(
            SourceOutcome(
                original_number=original,
                final_number=new,
                status=status,
                citation_count=counts.get(new, 0) if new is not None else 0,
                first_cited_offset=first_offset.get(original) if status == CITED else None,
            )
        )
    return Trail(final_text=final.text, stripped=stripped.stripped, fallback=final.fallback, sources=outcomes)
