"""A run's `metrics` over its results' data (pure; docs/evaluation.md, "What is measured").

Rates are floats in [0, 1] rounded to 4 decimals, null when their denominator is 0. An item is
*answered* when it neither declined nor failed; the citation rates are over answered items.
Latency percentiles are nearest-rank over the items that report a latency.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Data = Mapping[str, Any]

# The metrics' names, in the order the table shows them.
COUNTS = ("items", "answered", "declined", "failed")
RATES = (
    "right_first",
    "retrieval_recall",
    "cited_recall",
    "citation_recall",
    "citation_precision",
    "decline_precision",
    "decline_recall",
    "false_decline_rate",
    "fallback_rate",
)
OTHERS = ("latency_p50_ms", "latency_p95_ms", "prompt_tokens", "completion_tokens")
NAMES = (*COUNTS, *RATES, *OTHERS)
# The run list's headline columns (docs/evaluation.md, "Reading a comparison").
HEADLINE = ("right_first", "decline_precision", "decline_recall", "citation_precision", "citation_recall")


def ratio(numerator: float, denominator: float) -> float | None:
    return None if not denominator else round(numerator / denominator, 4)


def _mean(values: Sequence[float | bool | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return ratio(sum(present), len(present))


def _sum(items: Sequence[Data], key: str) -> int:
    return sum(int(d.get(key) or 0) for d in items)


def _count(items: Sequence[Data], test: Callable[[Data], bool]) -> int:
    return sum(1 for d in items if test(d))


def answered(data: Data) -> bool:
    return not data.get("declined") and not data.get("failed")


def percentile(values: Sequence[float], share: float) -> float | None:
    """Nearest-rank percentile (`share` in (0, 1]); None without values."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(1, math.ceil(share * len(ordered))) - 1], 1)


def _tokens(items: Sequence[Data], key: str) -> int | None:
    reported = [int(d[key]) for d in items if d.get(key) is not None]
    return sum(reported) if reported else None


def run_metrics(items: Sequence[Data]) -> dict[str, Any]:
    """Every metric of a run from its results' data, in NAMES order."""
    said = [d for d in items if answered(d)]
    declined = [d for d in items if d.get("declined")]
    expect = [d for d in items if d.get("expect_decline")]
    not_expect = [d for d in items if not d.get("expect_decline")]
    latencies = [float(d["latency_ms"]) for d in items if d.get("latency_ms") is not None]
    return {
        "items": len(items),
        "answered": len(said),
        "declined": len(declined),
        "failed": _count(items, lambda d: bool(d.get("failed"))),
        "right_first": _mean([d.get("right_first") for d in items]),
        "retrieval_recall": _mean([d.get("retrieval_recall") for d in items]),
        "cited_recall": _mean([d.get("cited_recall") for d in items]),
        "citation_recall": ratio(_sum(said, "supported_sentences"), _sum(said, "sentences")),
        "citation_precision": ratio(_sum(said, "supported_citations"), _sum(said, "citations")),
        "decline_precision": ratio(_count(declined, lambda d: bool(d.get("expect_decline"))), len(declined)),
        "decline_recall": ratio(_count(expect, lambda d: bool(d.get("declined"))), len(expect)),
        "false_decline_rate": ratio(_count(not_expect, lambda d: bool(d.get("declined"))), len(not_expect)),
        "fallback_rate": ratio(_count(said, lambda d: bool(d.get("fallback"))), len(said)),
        "latency_p50_ms": percentile(latencies, 0.5),
        "latency_p95_ms": percentile(latencies, 0.95),
        "prompt_tokens": _tokens(items, "prompt_tokens"),
        "completion_tokens": _tokens(items, "completion_tokens"),
    }


def format_metric(name: str, value: Any) -> str:
    """A metric as the table and admin show it: rates as percentages, null as a dash."""
    if value is None:
        return "—"
    if name in RATES:
        return f"{float(value) * 100:.1f}%"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def metric_rows(
    metrics: Mapping[str, Any], baseline: Mapping[str, Any] | None = None
) -> list[tuple[str, str, str]]:
    """(name, value, the baseline's value or "") for every metric, as the table and admin show them."""
    return [
        (
            name,
            format_metric(name, metrics.get(name)),
            format_metric(name, baseline.get(name)) if baseline else "",
        )
        for name in NAMES
    ]
