"""The coverage panel: which of the question's terms the answer covers (answers.support.coverage)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from answers.models import Answer


@dataclass(frozen=True)
class CoveragePanel:
    """The question's terms as the coverage record (Answer.coverage) judged them."""

    state: str  # "none" (not done), "pending" (not computed yet), "declined", "ready"
    terms: list[dict[str, Any]] = field(default_factory=list)  # {"term", "covered", "key"}
    flag: bool = False
    missing_key: list[str] = field(default_factory=list)


def coverage_panel(answer: Answer) -> CoveragePanel:
    """What the admin shows of the coverage record: read as stored, never recomputed."""
    if answer.status != Answer.Status.DONE:
        return CoveragePanel(state="none")
    record = answer.coverage
    if not isinstance(record, dict):
        return CoveragePanel(state="pending")
    covered = {str(t) for t in record.get("covered") or []}
    key = {str(t) for t in record.get("key") or []}
    terms = [
        {"term": str(t), "covered": str(t) in covered, "key": str(t) in key}
        for t in record.get("terms") or []
    ]
    return CoveragePanel(
        state="declined" if answer.declined else "ready",
        terms=terms,
        flag=bool(record.get("flag")),
        missing_key=[str(t["term"]) for t in terms if t["key"] and not t["covered"]],
    )
