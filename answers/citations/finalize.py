"""Finalize (docs/citations.md, "Finalize"): uncited sources dropped, the rest renumbered in
first-citation order, every marker rewritten."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from answers.citations.scan import Split, in_range, marker_members, render_marker, split_candidates

T = TypeVar("T")


@dataclass(frozen=True)
class Finalized(Generic[T]):
    text: str
    references: list[T]
    mapping: dict[int, int]  # old number -> new number
    dropped: list[int]  # old numbers of uncited sources, ascending
    fallback: bool
    # split_candidates(text): the final text's cut, markers rewritten in place (for the trail).
    cut: Split | None = field(default=None, compare=False, repr=False)


def number_first_citations(mapping: dict[int, int], members: Iterable[int]) -> list[int]:
    """First-citation numbering, one marker at a time: each member `mapping` (old number -> new
    number) does not hold yet gets the next new number. Returns those members, in order.

    Finalize numbers a whole text's markers with it, the live display each settled stretch's.
    """
    numbered = []
    for member in members:
        if member not in mapping:
            mapping[member] = len(mapping) + 1
            numbered.append(member)
    return numbered


def finalize_citations(text: str, sources: Sequence[T], *, cut: Split | None = None) -> Finalized[T]:
    """Drop uncited sources, renumber the rest in first-citation order and rewrite every marker.

    `cut` is split_candidates(text) when the caller has it: strip's result carries the cut of its
    text (StripResult.cut), which spares finalize cutting it again; without it, finalize cuts.
    Raises ValueError on a member outside 1..len(sources): strip first.
    """
    count = len(sources)
    if cut is None:
        parts, excluded = split_candidates(text)
    else:
        parts, excluded = cut[0].copy(), cut[1]  # (the caller's cut stays as it was)
    if len(excluded) == len(parts) // 2:
        return Finalized(
            text, list(sources), {n: n for n in range(1, count + 1)}, [], True, (parts, excluded)
        )
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
        members = marker_members(written)
        for member in number_first_citations(mapping, members):
            if not in_range(member, count):
                raise ValueError(
                    f"the marker {written} cites a source outside 1..{count}; "
                    "strip_out_of_range_markers() must run first"
                )
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
        cut=(parts, excluded),
    )
