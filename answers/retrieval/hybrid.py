"""The hybrid stage of retrieve() (ANSWERS_EMBEDDINGS=openai): the question's embedding, requested in
a thread while the lexical engine searches, finds chunks in the dense index (answers.retrieval.dense),
and reciprocal rank fusion (answers.retrieval.fusion) merges them with the engine's candidates.
What it adds to the trace is described in answers.retrieval.pipeline's docstring ("Hybrid retrieval").
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, connection, transaction

from answers.retrieval import dense
from answers.retrieval.access import AccessFilteredBackend, readable_candidates
from answers.retrieval.backends import Candidate
from answers.retrieval.embeddings import EmbeddingsClient, EmbeddingsUnavailable, get_client, question_vector
from answers.retrieval.fusion import reciprocal_rank_fusion
from answers.retrieval.types import ms_since, rounded

# Question embeddings run here, beside the lexical search (network I/O, no database).
_embedders = ThreadPoolExecutor(max_workers=8, thread_name_prefix="question-embedding")


@dataclass(frozen=True)
class Hybrid:
    """The fused candidate list and each candidate's dense similarity."""

    candidates: list[Candidate]
    similarity: dict[int, float]
    fusion: dict[int, dict[str, Any]]


@dataclass(frozen=True)
class _Embedded:
    vector: list[float] | None
    error: str | None
    ms: float  # how long the request (or the cache) took, in its own thread


Pending = tuple[EmbeddingsClient, "Future[_Embedded]"]


def _embed_question(client: EmbeddingsClient, question: str) -> _Embedded:
    started = time.perf_counter()
    try:
        vector, error = question_vector(client, question), None
    except EmbeddingsUnavailable as exc:
        vector, error = None, exc.reason
    return _Embedded(vector, error, ms_since(started))


def start_embedding(question: str) -> Pending | None:
    """The question's embedding, started in a thread so that it overlaps the lexical search;
    None when embeddings are off."""
    client = get_client()
    if client is None:
        return None
    return client, _embedders.submit(_embed_question, client, question)


def _fallback(timings: dict[str, float], reason: str | None) -> dict[str, Any]:
    """The trace's part when the retrieval stays lexical: why."""
    return {"timings_ms": timings, "dense": {"status": "fallback", "reason": reason}}


def hybrid_candidates(
    pending: Pending, lexical: list[Candidate], *, limit: int, backend: AccessFilteredBackend
) -> tuple[Hybrid | None, dict[str, Any]]:
    """Dense candidates fused with the lexical ones, and this stage's part of the trace;
    None (and the trace's part says why) when unavailable."""
    client, future = pending
    started = time.perf_counter()
    embedded_question = future.result()  # the request has its own deadline (ANSWERS_EMBEDDINGS_TIMEOUT)
    timings = {"embed": embedded_question.ms, "embed_wait": ms_since(started)}
    if embedded_question.vector is None:
        return None, _fallback(timings, embedded_question.error)
    vector = embedded_question.vector
    embedded = time.perf_counter()
    index = dense.index_for(client.dimensions)
    try:
        # A savepoint inside a caller's transaction: a failed vector query must not poison it.
        # Outside one (autocommit, as when serving) a failed statement needs no rollback, and
        # the savepoint's or transaction's two extra round trips are not paid.
        with transaction.atomic() if connection.in_atomic_block else nullcontext():
            found = index.search(vector, model=client.model, limit=limit, known=[c.chunk_id for c in lexical])
    except DatabaseError as exc:
        # PostgreSQL before the first `embed` has no vector column yet (see dense.ensure_schema).
        return None, _fallback(timings, f"dense search failed ({type(exc).__name__}); run `manage.py embed`")
    hits, similarity = found.hits, found.similarity
    fused = reciprocal_rank_fusion([[c.chunk_id for c in lexical], [h.chunk_id for h in hits]])[:limit]
    by_id = {c.chunk_id: c for c in lexical}
    # The dense index knows no access: what the asker may not read is withheld here, as in the search.
    readable, withheld = readable_candidates(backend.reader, list(found.candidates.values()))
    backend.withheld |= withheld
    by_id.update((c.chunk_id, c) for c in readable)
    kept = [f for f in fused if f.key in by_id]  # a chunk deleted since it was embedded drops out
    fusion = {
        f.key: {
            "chunk_id": f.key,
            "document_id": by_id[f.key].document_id,
            "lexical_rank": f.ranks[0],
            "dense_rank": f.ranks[1],
            "fused_rank": position,
            "dense_similarity": rounded(similarity.get(f.key, 0.0)),
        }
        for position, f in enumerate(kept, start=1)
    }
    timings["dense"] = ms_since(embedded)
    part = {
        "timings_ms": timings,
        "dense": {"status": "used", "index": index.name, "model": client.model, "candidates": len(hits)},
        "fusion": list(fusion.values()),
    }
    return Hybrid([by_id[f.key] for f in kept], similarity, fusion), part
