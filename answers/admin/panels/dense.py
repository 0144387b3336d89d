"""The hybrid retrieval panel, from the stored retrieval trace: lexical, dense and fused ranks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FusionRow:
    """One candidate of a hybrid retrieval: its ranks in each list and where it ended up."""

    fused_rank: Any
    chunk_id: Any
    document_id: Any
    title: str
    lexical_rank: Any  # None: the lexical engine did not return it
    dense_rank: Any  # None: the dense search did not return it
    dense_similarity: Any
    outcome: str  # "source N", "cut by threshold", "cut by cap", or "" (a lesser chunk of a kept document)
    lacks_names: bool  # it lacks a rare name the question writes: its similarity did not count


@dataclass(frozen=True)
class DensePanel:
    status: str  # "used", "fallback", or "" (embeddings off when it was answered)
    reason: str
    index: str
    model: str
    candidates: Any
    names: list[str]  # rare names the question writes (query.rare_names); [] before they were traced
    rows: list[FusionRow]


def _entries(trace: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    value = trace.get(key)
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def dense_panel(trace: Mapping[str, Any]) -> DensePanel:
    """The stored trace's dense status and each fused candidate's ranks, laid out for the retrieval panel."""
    dense = trace.get("dense")
    dense = dense if isinstance(dense, dict) else {}
    titles: dict[Any, str] = {}
    outcome: dict[Any, str] = {}
    for entry in _entries(trace, "kept"):
        titles[entry.get("document_id")] = str(entry.get("title", ""))
        chunk_ids = entry.get("chunk_ids")
        for chunk_id in chunk_ids if isinstance(chunk_ids, list) else []:
            outcome[chunk_id] = f"source {entry.get('number')}"
    for key, label in (
        ("cut_by_threshold", "cut by threshold"),
        ("cut_by_cap", "cut by cap"),
        ("cut_as_copy", "cut as a copy"),
    ):
        for entry in _entries(trace, key):
            titles.setdefault(entry.get("document_id"), str(entry.get("title", "")))
            outcome.setdefault(entry.get("chunk_id"), label)
    rows = [
        FusionRow(
            fused_rank=entry.get("fused_rank"),
            chunk_id=entry.get("chunk_id"),
            document_id=entry.get("document_id"),
            title=titles.get(entry.get("document_id"), ""),
            lexical_rank=entry.get("lexical_rank"),
            dense_rank=entry.get("dense_rank"),
            dense_similarity=entry.get("dense_similarity"),
            outcome=outcome.get(entry.get("chunk_id"), ""),
            lacks_names=entry.get("lacks_names") is True,
        )
        for entry in _entries(trace, "fusion")
    ]
    return DensePanel(
        status=str(dense.get("status", "")),
        reason=str(dense.get("reason", "")),
        index=str(dense.get("index", "")),
        model=str(dense.get("model", "")),
        candidates=dense.get("candidates", ""),
        names=[str(n) for n in names] if isinstance(names := dense.get("names"), list) else [],
        rows=rows,
    )
