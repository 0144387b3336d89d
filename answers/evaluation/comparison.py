"""Two runs of a set compared item by item, and the gates a CI job sets (pure; docs/evaluation.md).

A regression is an item (matched by its question) whose `right_first` went true → false, whose
decline stopped matching `expect_decline`, or whose `cited_recall` or citation recall (its supported
sentences over its sentences, answered items only) fell by more than DROP; an improvement is the
reverse. An item can be both (better cited, say, but no longer first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answers.evaluation.metrics import NAMES, answered

Data = Mapping[str, Any]
DROP = 0.2


@dataclass(frozen=True)
class Change:
    what: str
    before: Any
    after: Any
    worse: bool

    def describe(self) -> str:
        return f"{self.what}: {_show(self.before)} → {_show(self.after)}"


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def item_citation_recall(data: Data) -> float | None:
    """An answered item's supported sentences over its sentences (None otherwise)."""
    sentences = data.get("sentences")
    if not answered(data) or not sentences:
        return None
    return float(data.get("supported_sentences") or 0) / float(sentences)


def _decline_matches(data: Data) -> bool:
    return bool(data.get("declined")) == bool(data.get("expect_decline"))


def item_changes(before: Data, after: Data) -> list[Change]:
    """What changed for one item between two runs, in the rule's order."""
    changes: list[Change] = []
    first = before.get("right_first"), after.get("right_first")
    if None not in first and first[0] != first[1]:
        changes.append(Change("right_first", first[0], first[1], worse=not first[1]))
    if _decline_matches(before) != _decline_matches(after):
        matches = _decline_matches(after)
        changes.append(Change("declined", before.get("declined"), after.get("declined"), not matches))
    for what, read in (
        ("cited_recall", lambda d: d.get("cited_recall")),
        ("citation_recall", item_citation_recall),
    ):
        old, new = read(before), read(after)
        # Rounded as the rates are: a change of exactly DROP is not more than DROP.
        if old is not None and new is not None and round(abs(new - old), 4) > DROP:
            changes.append(Change(what, old, new, new < old))
    return changes


def compare(
    current: Sequence[Data], baseline: Sequence[Data]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(regressions, improvements) of `current` against `baseline`, each naming its item by question and
    both runs' answer ids; items in only one of the runs are not compared."""
    earlier = {d["question"]: d for d in baseline}
    regressions: list[dict[str, Any]] = []
    improvements: list[dict[str, Any]] = []
    for after in current:
        before = earlier.get(after["question"])
        if before is None:
            continue
        changes = item_changes(before, after)
        for worse, out in ((True, regressions), (False, improvements)):
            picked = [c.describe() for c in changes if c.worse == worse]
            if picked:
                out.append(
                    {
                        "question": after["question"],
                        "answer_id": after.get("answer_id"),
                        "compare_answer_id": before.get("answer_id"),
                        "changes": picked,
                    }
                )
    return regressions, improvements


class GateError(ValueError):
    """A `--fail-under` that names no metric or no number (a usage error)."""


def parse_gate(text: str) -> tuple[str, float]:
    """`METRIC=VALUE` as (metric, value)."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or name not in NAMES:
        raise GateError(f"--fail-under {text!r}: name a metric ({', '.join(NAMES)}) as METRIC=VALUE")
    try:
        return name, float(raw)
    except ValueError:
        raise GateError(f"--fail-under {text!r}: {raw!r} is not a number") from None


def failed_gates(metrics: Mapping[str, Any], gates: Sequence[tuple[str, float]]) -> list[str]:
    """Each gate the metrics miss, said as a sentence; a null metric misses its gate."""
    missed = []
    for name, bar in gates:
        value = metrics.get(name)
        if value is None:
            missed.append(f"{name} is null (under {bar:g})")
        elif float(value) < bar:
            missed.append(f"{name} = {value} is under {bar:g}")
    return missed
