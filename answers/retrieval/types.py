"""Plain data that retrieval hands to the pipeline and the providers (no ORM objects)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RetrievedSource:
    """One numbered source: a distinct document and the excerpt the model is shown."""

    number: int  # 1..N in retrieval order; the `references` event and the prompt use it
    document_id: int | None
    title: str
    url: str  # http(s) or site-relative, or "" when the document has no safe URL
    excerpt: str
    lexical_score: float  # the backend's score normalised to 0..1
    score: float  # the final score after reranking, 0..1 (compared with ANSWERS_MIN_SCORE)


@dataclass(frozen=True)
class Retrieval:
    """What retrieve() returns: the numbered sources and a JSON-ready trace for QA."""

    sources: list[RetrievedSource]
    trace: dict[str, Any] = field(default_factory=dict)


def rounded(value: float) -> float:
    """A score or a time as the retrieval trace records it (4 decimals)."""
    return round(value, 4)


def ms_since(started: float) -> float:
    """Milliseconds since `started` (a time.perf_counter()), as the trace records them."""
    return rounded((time.perf_counter() - started) * 1000)
