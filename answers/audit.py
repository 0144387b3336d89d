"""The citation audit: re-derive each stored trail from its raw text and report where the store disagrees."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from django.db.models import Prefetch, QuerySet

from answers.citations import RULES_VERSION
from answers.citations.trail import compute_trail
from answers.conf import conf
from answers.models import Answer, AnswerSource
from answers.pipeline.store import SOURCE_OUTCOME_FIELDS


@dataclass(frozen=True)
class AnswerAudit:
    answer_id: str  # str(uuid), as the API writes it
    differences: list[str]
    # The citation rules its trail was computed under: one older than RULES_VERSION is reported
    # apart, never checked against today's rules (they would differ by design, not by fault).
    rules_version: int = RULES_VERSION

    @property
    def older_rules(self) -> bool:
        return self.rules_version != RULES_VERSION

    @property
    def ok(self) -> bool:
        return not self.differences


def answer_differences(answer: Answer, sources: list[AnswerSource]) -> list[str]:
    """What differs between the stored trail and the one compute_trail makes again from the raw text."""
    sources = sorted(sources, key=lambda s: s.original_number)
    if answer.declined:
        return _declined_differences(answer, sources)
    numbers = [s.original_number for s in sources]
    if numbers != list(range(1, len(sources) + 1)):
        return [f"sources are numbered {numbers}, expected 1..{len(sources)}"]

    trail = compute_trail(answer.raw_text, len(sources), dialects=conf.MARKER_DIALECTS)
    differences = []
    if answer.final_text != trail.final_text:
        differences.append(
            f"final text differs: stored {_clip(answer.final_text)!r}, recomputed {_clip(trail.final_text)!r}"
        )
    if list(answer.stripped) != trail.stripped:
        differences.append(f"stripped differs: stored {answer.stripped!r}, recomputed {trail.stripped!r}")
    if answer.fallback != trail.fallback:
        differences.append(f"fallback differs: stored {answer.fallback}, recomputed {trail.fallback}")
    normalized = trail.normalized_json()
    if answer.normalized != normalized:
        differences.append(f"normalized differs: stored {answer.normalized!r}, recomputed {normalized!r}")
    markers = trail.markers_json()
    if answer.markers != markers:
        differences.append(
            f"marker decisions differ: stored {len(answer.markers)}, recomputed {len(markers)}"
            + ("" if answer.markers else " (none stored: the answer predates the per-marker record)")
        )
    for stored, expected in zip(sources, trail.sources, strict=True):
        for field in SOURCE_OUTCOME_FIELDS:
            got, want = getattr(stored, field), getattr(expected, field)
            if isinstance(want, Enum):
                want = want.value  # as stored, so the report reads 'fallback', not the enum's repr
            if got != want:
                differences.append(
                    f"source {stored.original_number}: {field} differs: stored {got!r}, recomputed {want!r}"
                )
    return differences


def _declined_differences(answer: Answer, sources: list[AnswerSource]) -> list[str]:
    """A declined answer is not finalized (its text is ANSWERS_DECLINE_TEXT, stored as written).

    What must hold: no source, no marker decision, no fallback, and its final text is its raw text.
    """
    differences = []
    if sources:
        differences.append(f"declined, but {len(sources)} sources are stored")
    if answer.final_text != answer.raw_text:
        differences.append(
            f"declined, but the final text {_clip(answer.final_text)!r} is not "
            f"the raw text {_clip(answer.raw_text)!r}"
        )
    if answer.fallback:
        differences.append("declined, but stored as a fallback")
    if answer.markers or answer.stripped or answer.normalized:
        differences.append("declined, but marker decisions are stored")
    return differences


def audit_answers(*, since: datetime | None = None, chunk_size: int = 500) -> Iterator[AnswerAudit]:
    """Audit every done answer (created at or after `since`), oldest first, in flat memory.

    An answer whose trail was computed under older citation rules is yielded unchecked, with its
    rules_version, for the caller to report apart.
    """
    queryset: QuerySet[Answer] = Answer.objects.filter(status=Answer.Status.DONE)
    if since is not None:
        queryset = queryset.filter(created_at__gte=since)
    queryset = queryset.order_by("created_at", "pk").prefetch_related(
        Prefetch("sources", queryset=AnswerSource.objects.order_by("original_number"))
    )
    for answer in queryset.iterator(chunk_size=chunk_size):
        if answer.rules_version != RULES_VERSION:
            yield AnswerAudit(answer_id=str(answer.id), differences=[], rules_version=answer.rules_version)
            continue
        yield AnswerAudit(
            answer_id=str(answer.id), differences=answer_differences(answer, list(answer.sources.all()))
        )


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
