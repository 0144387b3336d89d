"""retrieve(): candidates → normalised scores → rerank → threshold → entity cap → sources 1..N.

What the numbers mean (all in 0..1):

- `lexical_score`: the search engine's score (on both, the rarity-weighted sum of
  the terms held plus the engine's own score in 0..1: bm25 divided by the best
  match's on SQLite, ts_rank_cd on PostgreSQL) divided by the best candidate's
  score for the same question: 1.0 is the strongest lexical match among the
  candidates, 0.5 half as strong.
- `score`: the reranker's combination (see answers.retrieval.rerank) of the
  question's informative terms the passage covers, weighted by their rarity in
  the chunks the asker may read (answers.retrieval.rarity: a term none of them holds,
  whatever closed documents hold, counts fully against every passage, unless it is
  common English, query.absent_weight),
  title and heading matches, term proximity and `lexical_score`. It never exceeds
  the weighted share of the question the passage covers: 0.5 means at most half
  of what the question is about. This is the number `ANSWERS_MIN_SCORE` is
  compared with (kept when score >= min_score); when no candidate reaches it, the
  sources are empty.

Order of the steps: the engine returns up to CANDIDATE_LIMIT chunks (one order on
both: the rarity-weighted terms held, then the engine's score; on SQLite among
bm25's best 2 x CANDIDATE_LIMIT matches, see backends); each is scored; a passage
several documents hold word for word (a section that is also a page of its own)
is kept once, in the smallest of them, the document most about it (the other
copies are cut, `cut_as_copy`); chunks under the threshold are cut; chunks are
grouped by document and documents ordered by their best chunk's score (on a tie, a page
whose title holds every term of the question comes first, the one whose title adds the fewest
other words first: "Assignment statements" before "Augmented assignment statements" for
"Please explain assignment statements.", rerank.title_excess); the first
`max_sources` documents are kept (the rest are cut by the cap), each once, with
its best chunks as its excerpt (at most EXCERPT_MAX_CHUNKS, EXCERPT_MAX_CHARS; when its title
holds every term of the question, the earliest among chunks scoring alike; shown in reading
order); they are numbered 1..N.

The trace (JSON-ready, for QA) records all of it:

    {"backend", "reranker", "query_terms", "term_weights": {term: weight (query.term_weights)},
     "min_score", "max_sources",
     "candidate_limit", "candidates": <chunks the engine returned>,
     "match": {"required", "all_required", "common_terms"} (see query.MatchPlan),
     "kept": [{"number", "document_id", "title", "chunk_ids", "score", "lexical_score"}],
     "cut_by_threshold": [{"document_id", "title", "chunk_id", "score", "lexical_score"}],
     "cut_by_cap": [{"document_id", "title", "chunk_id", "score", "lexical_score"}],
     "cut_as_copy": [{"document_id", "title", "chunk_id", "score", "lexical_score",
                      "same_as": {"document_id", "chunk_id"}}],
     "timings_ms": {"search", "rerank"}}

`cut_by_cap` lists each capped document once, with its best chunk; `cut_as_copy` each
copy cut, with the chunk kept in its place (`same_as`), whatever its score.

Hybrid retrieval (ANSWERS_EMBEDDINGS=openai): the question's embedding is requested in
a thread while the lexical engine searches (`embed` is its own time, `embed_wait` what
retrieval waited for it after the search); then the question's vector finds up to
`candidate_limit` chunks by cosine similarity (answers.retrieval.dense) beside
the engine's; reciprocal rank fusion (answers.retrieval.fusion) merges the two
lists into one of at most `candidate_limit` candidates, in fused order (which
is then the tie-break order); every candidate carries its dense similarity into
the reranker (docs/explanation/relevance.md). The trace gains

    "dense": {"status": "used", "index", "model", "candidates", "names"}
             or {"status": "fallback", "reason"} when the embeddings server failed
             (the retrieval is then exactly the lexical one),
    "fusion": [{"chunk_id", "document_id", "lexical_rank", "dense_rank", "fused_rank",
                "dense_similarity"}] for every candidate, in fused order (ranks are
              1-based; null where a list did not hold the chunk),
    "timings_ms": {"search", "embed", "embed_wait", "dense", "rerank"},

and each "kept"/"cut_by_*" entry gains the four fusion fields of its chunk. `names`: the
rare names the question writes (query.rare_names); a candidate lacking one is scored on
its lexical score alone (its `fusion` entry gains `"lacks_names": true`; its dense
similarity is still there).
With embeddings off none of this appears and the results are the lexical ones.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.db.models import Count

from answers.conf import RERANKERS, conf
from answers.models import Chunk
from answers.plugins import plugin_class
from answers.retrieval import dense
from answers.retrieval.access import ANONYMOUS, AccessFilteredBackend, Reader, readable_candidates
from answers.retrieval.backends import Candidate, backend_for
from answers.retrieval.embeddings import EmbeddingsClient, EmbeddingsUnavailable, get_client, question_vector
from answers.retrieval.fusion import reciprocal_rank_fusion
from answers.retrieval.query import holds_all, query_terms, rare_names, stem, subject_terms, term_weights
from answers.retrieval.rarity import rarity_table
from answers.retrieval.rerank import Passage, Reranker, title_excess
from answers.retrieval.types import Retrieval, RetrievedSource

CANDIDATE_LIMIT = 50
# Question embeddings run here, beside the lexical search (network I/O, no database).
_embedders = ThreadPoolExecutor(max_workers=8, thread_name_prefix="question-embedding")
EXCERPT_MAX_CHUNKS = 2
EXCERPT_MAX_CHARS = 2000
# The tie order of a page whose title does not hold every term of the question: after those that do.
NOT_NAMED = 1 << 30


@dataclass(frozen=True)
class Scored:
    candidate: Candidate
    lexical: float
    score: float


def get_reranker() -> Reranker:
    """The reranker named by ANSWERS_RERANKER: "lexical" (default), "none", or a dotted class path."""
    reranker: Reranker = plugin_class("ANSWERS_RERANKER", conf.RERANKER, RERANKERS)()
    return reranker


def _round(value: float) -> float:
    return round(value, 4)


def _entry(item: Scored, fusion: dict[int, dict[str, Any]]) -> dict[str, Any]:
    c = item.candidate
    return {
        "document_id": c.document_id,
        "title": c.title,
        "chunk_id": c.chunk_id,
        "score": _round(item.score),
        "lexical_score": _round(item.lexical),
        **_ranks(fusion, c.chunk_id),
    }


def _ranks(fusion: dict[int, dict[str, Any]], chunk_id: int) -> dict[str, Any]:
    entry = fusion.get(chunk_id)
    if entry is None:
        return {}
    return {k: entry[k] for k in ("lexical_rank", "dense_rank", "fused_rank", "dense_similarity")}


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


def _embed_question(client: EmbeddingsClient, question: str) -> _Embedded:
    started = time.perf_counter()
    try:
        vector, error = question_vector(client, question), None
    except EmbeddingsUnavailable as exc:
        vector, error = None, exc.reason
    return _Embedded(vector, error, _round((time.perf_counter() - started) * 1000))


def _start_embedding(question: str) -> tuple[EmbeddingsClient, Future[_Embedded]] | None:
    """The question's embedding, started in a thread so that it overlaps the lexical search."""
    client = get_client()
    if client is None:
        return None
    return client, _embedders.submit(_embed_question, client, question)


def _hybrid(
    pending: tuple[EmbeddingsClient, Future[_Embedded]],
    lexical: list[Candidate],
    *,
    limit: int,
    trace: dict[str, Any],
    backend: AccessFilteredBackend,
) -> Hybrid | None:
    """Dense candidates fused with the lexical ones; None (and the trace says why) when unavailable."""
    client, future = pending
    started = time.perf_counter()
    embedded_question = future.result()  # the request has its own deadline (ANSWERS_EMBEDDINGS_TIMEOUT)
    trace["timings_ms"]["embed"] = embedded_question.ms
    trace["timings_ms"]["embed_wait"] = _round((time.perf_counter() - started) * 1000)
    if embedded_question.vector is None:
        trace["dense"] = {"status": "fallback", "reason": embedded_question.error}
        return None
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
        trace["dense"] = {
            "status": "fallback",
            "reason": f"dense search failed ({type(exc).__name__}); run `manage.py embed`",
        }
        return None
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
            "dense_similarity": _round(similarity.get(f.key, 0.0)),
        }
        for position, f in enumerate(kept, start=1)
    }
    trace["dense"] = {"status": "used", "index": index.name, "model": client.model, "candidates": len(hits)}
    trace["fusion"] = list(fusion.values())
    trace["timings_ms"]["dense"] = _round((time.perf_counter() - embedded) * 1000)
    return Hybrid([by_id[f.key] for f in kept], similarity, fusion)


def _one_copy_each(scored: list[Scored]) -> tuple[list[Scored], list[tuple[Scored, Scored]]]:
    """Each passage once: of the candidates whose text several documents hold word for word,
    only those of the document with the fewest chunks stay (the page of its own, not the page
    that gathers it with others; then the better score, then the earlier candidate).

    Returns the candidates kept, in their order, and each copy cut with the candidate kept
    in its place.
    """
    groups: dict[str, list[int]] = {}
    for index, item in enumerate(scored):
        groups.setdefault(" ".join(item.candidate.text.split()), []).append(index)
    shared = [g for g in groups.values() if len({scored[i].candidate.document_id for i in g}) > 1]
    if not shared:
        return scored, []
    documents = {scored[i].candidate.document_id for g in shared for i in g}
    sizes = dict(
        Chunk.objects.filter(document_id__in=documents)
        .values("document_id")
        .annotate(chunks=Count("id"))
        .values_list("document_id", "chunks")
    )
    cut: dict[int, int] = {}  # index of a copy cut -> index of the candidate kept in its place
    for group in shared:
        keep = min(group, key=lambda i: (sizes.get(scored[i].candidate.document_id, 0), -scored[i].score, i))
        home = scored[keep].candidate.document_id
        cut.update((i, keep) for i in group if scored[i].candidate.document_id != home)
    kept = [item for index, item in enumerate(scored) if index not in cut]
    return kept, [(scored[i], scored[keep]) for i, keep in sorted(cut.items())]


def _excerpt(chunks: list[Scored], *, named: bool = False) -> tuple[str, list[int]]:
    """The document's best chunks (by score), shown in reading order.

    `named`: the document's title holds every term of the question ("What should I know about
    the execution model?"), so its chunks score alike whatever their text says, and the engine's
    order among them is noise; the earliest of those scoring alike are then taken, since a page
    opens with what it is about. Otherwise ties keep the engine's order (the chunk repeating the
    question's words first)."""
    if named:
        chunks = sorted(chunks, key=lambda s: (-s.score, s.candidate.ordinal))
    chosen = [chunks[0]]
    size = len(chunks[0].candidate.text)
    for item in chunks[1:EXCERPT_MAX_CHUNKS]:
        if size + len(item.candidate.text) > EXCERPT_MAX_CHARS:
            break
        chosen.append(item)
        size += len(item.candidate.text)
    chosen.sort(key=lambda s: s.candidate.ordinal)
    return "\n\n".join(s.candidate.text for s in chosen), [s.candidate.chunk_id for s in chosen]


def retrieve(
    question: str,
    *,
    min_score: float,
    max_sources: int,
    reranker: Reranker | None = None,
    candidate_limit: int = CANDIDATE_LIMIT,
    reader: Reader = ANONYMOUS,
) -> Retrieval:
    """The numbered sources for a question and the trace of how they were chosen.

    Only documents `reader` may read are candidates (answers.retrieval.access); the trace's
    `withheld` counts the candidate chunks removed for them (for QA, never shown to readers).
    """
    reranker = reranker or get_reranker()
    backend = AccessFilteredBackend(backend_for(), reader)
    terms = query_terms(question or "")
    trace: dict[str, Any] = {
        "backend": backend.name,
        "reranker": reranker.name,
        "query_terms": terms,
        "min_score": min_score,
        "max_sources": max_sources,
        "candidate_limit": candidate_limit,
        "candidates": 0,
        "kept": [],
        "cut_by_threshold": [],
        "cut_by_cap": [],
        "cut_as_copy": [],
        "withheld": 0,
        "timings_ms": {"search": 0.0, "rerank": 0.0},
    }
    if not terms or max_sources < 1:
        return Retrieval(sources=[], trace=trace)

    pending = _start_embedding(question)
    started = time.perf_counter()
    found = backend.search(terms, limit=candidate_limit, subjects=subject_terms(question))
    candidates = found.candidates
    # The terms' rarity over what this asker may read: a word only closed documents hold weighs
    # as a word no document holds (answers.retrieval.rarity).
    rarity = rarity_table(backend.reader, found)
    searched = time.perf_counter()
    trace["candidates"] = len(candidates)
    trace["match"] = {
        "required": found.plan.required,
        "all_required": found.plan.all_required,
        "common_terms": found.plan.common,
    }
    trace["timings_ms"]["search"] = _round((searched - started) * 1000)
    weights = term_weights(question, terms, rarity.doc_counts, rarity.total)
    trace["term_weights"] = {t: _round(w) for t, w in weights.items()}
    hybrid = (
        None
        if pending is None
        else _hybrid(pending, candidates, limit=candidate_limit, trace=trace, backend=backend)
    )
    trace["withheld"] = len(backend.withheld)
    fusion: dict[int, dict[str, Any]] = {}
    if hybrid is not None:
        candidates, fusion = hybrid.candidates, hybrid.fusion
        trace["candidates"] = len(candidates)
    reranking = time.perf_counter()
    best_raw = max((c.raw_score for c in candidates), default=0.0)
    lexical = [c.raw_score / best_raw if best_raw > 0 else 0.0 for c in candidates]
    similarity = None if hybrid is None else hybrid.similarity
    # An embedding hears "exceptions in Java" as "exceptions": a passage that lacks a rare name
    # the question writes keeps its lexical score (docs/explanation/relevance.md, "Names").
    unlifted: set[int] = set()
    if similarity is not None:
        names = rare_names(question, rarity.doc_counts, rarity.total)
        trace["dense"]["names"] = sorted(names)
        if names:
            unlifted = {c.chunk_id for c in candidates if not holds_all(names, c.title, c.heading, c.text)}
        for chunk_id in unlifted:
            fusion[chunk_id]["lacks_names"] = True
    passages = [
        Passage(
            c.title,
            c.heading,
            c.text,
            lex,
            None if similarity is None or c.chunk_id in unlifted else similarity.get(c.chunk_id, 0.0),
        )
        for c, lex in zip(candidates, lexical, strict=True)
    ]
    scores = reranker.score(terms, passages, weights)
    # Scores are kept as the trace shows them (4 decimals): the threshold reads the score a
    # reviewer sees, so a cut passage never shows the threshold's own value.
    scored = [
        Scored(c, lex, _round(min(1.0, max(0.0, s))))
        for c, lex, s in zip(candidates, lexical, scores, strict=True)
    ]
    scored, copies = _one_copy_each(scored)
    for copy, kept_instead in copies:
        same_as = {
            "document_id": kept_instead.candidate.document_id,
            "chunk_id": kept_instead.candidate.chunk_id,
        }
        trace["cut_as_copy"].append({**_entry(copy, fusion), "same_as": same_as})
    # Ties: a page the question names by its title, the fewest other title words first (the page on
    # exactly what was asked, rerank.title_excess); then the candidates' order: the engine's (best
    # first), or the fused one.
    stems = frozenset(map(stem, terms))

    def named_order(item: Scored) -> int:
        excess = title_excess(stems, item.candidate.title)  # cached per title (rerank)
        return NOT_NAMED if excess is None else excess

    ranked = sorted(enumerate(scored), key=lambda pair: (-pair[1].score, named_order(pair[1]), pair[0]))
    trace["timings_ms"]["rerank"] = _round((time.perf_counter() - reranking) * 1000)

    by_document: dict[int, list[Scored]] = {}
    for _, item in ranked:
        if item.score < min_score:
            trace["cut_by_threshold"].append(_entry(item, fusion))
            continue
        by_document.setdefault(item.candidate.document_id, []).append(item)

    sources: list[RetrievedSource] = []
    for document_chunks in by_document.values():  # insertion order: best document first
        best = document_chunks[0]
        if len(sources) >= max_sources:
            trace["cut_by_cap"].append(_entry(best, fusion))
            continue
        named = title_excess(stems, best.candidate.title) is not None
        excerpt, chunk_ids = _excerpt(document_chunks, named=named)
        number = len(sources) + 1
        sources.append(
            RetrievedSource(
                number=number,
                document_id=best.candidate.document_id,
                title=best.candidate.title,
                url=best.candidate.url,
                excerpt=excerpt,
                lexical_score=_round(best.lexical),
                score=_round(best.score),
            )
        )
        trace["kept"].append(
            {
                "number": number,
                "document_id": best.candidate.document_id,
                "title": best.candidate.title,
                "chunk_ids": chunk_ids,
                "score": _round(best.score),
                "lexical_score": _round(best.lexical),
                **_ranks(fusion, best.candidate.chunk_id),
            }
        )
    return Retrieval(sources=sources, trace=trace)
