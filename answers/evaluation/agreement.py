"""The support check against reviewers (pure; docs/evaluation.md, "The support check against reviewers").

Every final source of a reviewed answer is a pair of labels: the reviewers' (flagged
`does_not_support` in the answer's latest review: unsupported) and the check's (the lowest score
among the sentences citing it under the record's `min_score`: unsupported). A final source no
sentence cites (a fallback's) has no label from the check and makes no pair. The check is scored
as a finder of what reviewers flagged: precision and recall of its "unsupported", and Cohen's kappa
for agreement beyond chance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answers.evaluation.metrics import ratio


@dataclass(frozen=True)
class Pair:
    check_unsupported: bool
    reviewer_unsupported: bool


def check_labels(record: Mapping[str, Any]) -> dict[int, bool]:
    """By final number, whether the check calls the source unsupported (the lowest score among the
    sentences citing it is under the record's min_score); sources no sentence cites are absent."""
    bar = float(record.get("min_score", 0.0))
    lowest: dict[int, float] = {}
    for sentence in record.get("sentences") or []:
        for number, score in (sentence.get("scores") or {}).items():
            key = int(number)
            lowest[key] = min(lowest.get(key, float(score)), float(score))
    return {number: score < bar for number, score in lowest.items()}


def answer_pairs(record: Mapping[str, Any], flagged: Mapping[int, bool]) -> list[Pair]:
    """One answer's pairs: `flagged` has every final source (by final number) and whether the latest
    review flagged it `does_not_support`."""
    labels = check_labels(record)
    return [Pair(labels[n], flagged[n]) for n in sorted(flagged) if n in labels]


def agreement(pairs: Sequence[Pair], *, method: str) -> dict[str, Any]:
    """The report `evaluate --agreement` prints and writes."""
    total = len(pairs)
    agree = sum(p.check_unsupported == p.reviewer_unsupported for p in pairs)
    check = sum(p.check_unsupported for p in pairs)
    reviewer = sum(p.reviewer_unsupported for p in pairs)
    both = sum(p.check_unsupported and p.reviewer_unsupported for p in pairs)
    return {
        "method": method,
        "pairs": total,
        "agree": agree,
        "agreement": ratio(agree, total),
        "kappa": kappa(total, agree, check, reviewer),
        "check_unsupported": check,
        "reviewer_unsupported": reviewer,
        "both_unsupported": both,
        "precision": ratio(both, check),
        "recall": ratio(both, reviewer),
    }


def kappa(total: int, agree: int, check: int, reviewer: int) -> float | None:
    """Cohen's kappa of two yes/no raters; None when undefined (no pairs, or chance agreement is 1)."""
    if not total:
        return None
    observed = agree / total
    expected = (check * reviewer + (total - check) * (total - reviewer)) / total**2
    if expected == 1:
        return None
    return round((observed - expected) / (1 - expected), 4)
