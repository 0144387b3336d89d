"""Retrieval: find the passages that answer a question and number their documents 1..N.

The pipeline lives in answers.retrieval.pipeline (see its docstring for what the
scores mean); this package imports it lazily so the pure modules beside it
(chunking, query, rerank, fusion) import without Django settings; dense retrieval
(embeddings, dense) is described in the pipeline's docstring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from answers.retrieval.types import Retrieval

__all__ = ["retrieve"]


def retrieve(question: str, *, min_score: float, max_sources: int) -> Retrieval:
    """Sources for a question: scored, thresholded, reranked, capped, numbered 1..N (sync)."""
    from answers.retrieval.pipeline import retrieve as _retrieve

    return _retrieve(question, min_score=min_score, max_sources=max_sources)
