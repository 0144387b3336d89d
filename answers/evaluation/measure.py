"""One result's `data` (pure; docs/evaluation.md, "What is measured"), read from what the pipeline
stored: the answer's trail (sources, their final numbers, fallback, stripped, normalized), its
support record, its timings and the provider's usage. Nothing here re-derives a decision.

Document keys: a source's key is its url, else its document's ingest key (answers.evaluation.selectors
reads them); an expected key is compared through `canonical` (the key of the document it names, so
an item may name a document by its ingest key or its url alike).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answers.evaluation.jsonl import ItemSpec
from answers.support.record import SUPPORTED


@dataclass(frozen=True)
class StoredSource:
    original_number: int
    final_number: int | None  # None when dropped (or not finalized: a failed answer)
    key: str


@dataclass(frozen=True)
class StoredAnswer:
    """An answer of a run as stored: what its result is measured from."""

    answer_id: str
    done: bool  # False: it failed
    declined: bool
    fallback: bool
    stripped: int  # members removed (the trail's `stripped`)
    normalized: int  # markers rewritten (the trail's `normalized`)
    support: Mapping[str, Any] | None  # the support record; None until computed
    total_ms: float | None
    usage: Mapping[str, Any] | None
    error: str
    sources: Sequence[StoredSource]  # in retrieval order


def item_data(
    item: ItemSpec,
    answer: StoredAnswer | None,
    *,
    canonical: Mapping[str, str] | None = None,
    error: str = "",
) -> dict[str, Any]:
    """The result of asking `item`: `answer` is None when the pipeline stored none (`error` says why)."""
    canonical = canonical or {}
    expected = {canonical.get(key, key) for key in item.expected_documents}
    failed = answer is None or not answer.done
    declined = answer is not None and answer.done and answer.declined
    sources = list(answer.sources) if answer is not None else []
    retrieved = [s.key for s in sorted(sources, key=lambda s: s.original_number)]
    references = [] if failed else _references(sources)
    usage = answer.usage if answer is not None and answer.usage else {}
    return {
        "question": item.question,
        "answer_id": answer.answer_id if answer is not None else None,
        "declined": declined,
        "expect_decline": item.expect_decline,
        "expected_documents": list(item.expected_documents),
        "retrieved": retrieved,
        "references": references,
        "right_first": _right_first(item, expected, references, failed or declined),
        "retrieval_recall": _recall(expected, retrieved),
        "cited_recall": _recall(expected, references),
        "fallback": bool(answer is not None and answer.fallback),
        "stripped": answer.stripped if answer is not None else 0,
        "normalized": answer.normalized if answer is not None else 0,
        **support_counts(answer.support if answer is not None and not failed else None),
        "latency_ms": _round(answer.total_ms, 1) if answer is not None else None,
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "failed": failed,
        "error": (answer.error if answer is not None else error) if failed else "",
    }


def _references(sources: Sequence[StoredSource]) -> list[str]:
    final = sorted((s for s in sources if s.final_number is not None), key=lambda s: s.final_number or 0)
    return [s.key for s in final]


def _right_first(item: ItemSpec, expected: set[str], references: list[str], missed: bool) -> bool | None:
    """references[0] is expected; None with nothing expected, or a decline expected; False when the
    answer declined or failed."""
    if not expected or item.expect_decline:
        return None
    if missed:
        return False
    return bool(references) and references[0] in expected


def _recall(expected: set[str], found: Sequence[str]) -> float | None:
    if not expected:
        return None
    return round(len(expected & set(found)) / len(expected), 4)


def support_counts(record: Mapping[str, Any] | None) -> dict[str, int | None]:
    """From a support record: its sentences and those supported; its (sentence, cited source) pairs and
    those scoring at least the record's min_score. All None without a record."""
    if record is None:
        return {
            "sentences": None,
            "supported_sentences": None,
            "citations": None,
            "supported_citations": None,
        }
    sentences = list(record.get("sentences") or [])
    bar = float(record.get("min_score", 0.0))
    scores = [float(score) for sentence in sentences for score in (sentence.get("scores") or {}).values()]
    return {
        "sentences": len(sentences),
        "supported_sentences": sum(sentence.get("verdict") == SUPPORTED for sentence in sentences),
        "citations": len(scores),
        "supported_citations": sum(score >= bar for score in scores),
    }


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
