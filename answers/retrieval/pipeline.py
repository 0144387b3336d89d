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
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count

from answers.conf import RERANKERS, conf
from answers.models import Chunk
from answers.plugins import plugin_class
from answers.retrieval.access import ANONYMOUS, AccessFilteredBackend, Reader
from answers.retrieval.backends import Candidate, backend_for
from answers.retrieval.hybrid import Hybrid, hybrid_candidates, start_embedding
from answers.retrieval.query import holds_all, query_terms, rare_names, stem, subject_terms, term_weights
from answers.retrieval.rarity import RarityTable, rarity_table
from answers.retrieval.rerank import Passage, Reranker, title_excess
from answers.retrieval.types import Retrieval, RetrievedSource, ms_since, rounded

CANDIDATE_LIMIT = 50
EXCERPT_MAX_CHUNKS = 2
EXCERPT_MAX_CHARS = 2000
# The tie order of a page whose title does not hold every term of the question: after those that do.
NOT_NAMED = 1 << 30


@dataclass(frozen=True)
class Query:
    """What every stage of one retrieval reads: the question, its terms, and the limits asked for."""

    question: str
    terms: list[str]
    min_score: float
    max_sources: int
    candidate_limit: int = CANDIDATE_LIMIT
    stems: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stems", frozenset(map(stem, self.terms)))


@dataclass(frozen=True)
class Scored:
    candidate: Candidate
    lexical: float
    score: float


@dataclass(frozen=True)
class _Searched:
    """The search stage's result: the engine's candidates and the asker's term statistics."""

    candidates: list[Candidate]
    rarity: RarityTable
    weights: dict[str, float]
    trace: dict[str, Any]  # its part of the trace


@dataclass(frozen=True)
class _Pool:
    """The candidates the reranker scores, in tie-break order (the engine's, or the fused one), each
    with the dense similarity it brings (None: lexical only, or lacking a rare name), and each one's
    fusion entry (hybrid retrieval only)."""

    candidates: list[Candidate]
    dense: list[float | None]
    fusion: dict[int, dict[str, Any]] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)  # the rare names the question writes (hybrid)


def get_reranker() -> Reranker:
    """The reranker named by ANSWERS_RERANKER: "lexical" (default), "none", or a dotted class path."""
    reranker: Reranker = plugin_class("ANSWERS_RERANKER", conf.RERANKER, RERANKERS)()
    return reranker


def _entry(item: Scored, fusion: dict[int, dict[str, Any]]) -> dict[str, Any]:
    c = item.candidate
    return {
        "document_id": c.document_id,
        "title": c.title,
        "chunk_id": c.chunk_id,
        "score": rounded(item.score),
        "lexical_score": rounded(item.lexical),
        **_ranks(fusion, c.chunk_id),
    }


def _ranks(fusion: dict[int, dict[str, Any]], chunk_id: int) -> dict[str, Any]:
    entry = fusion.get(chunk_id)
    if entry is None:
        return {}
    return {k: entry[k] for k in ("lexical_rank", "dense_rank", "fused_rank", "dense_similarity")}


def _record(trace: dict[str, Any], part: dict[str, Any]) -> None:
    """A stage's part of the trace: its keys set (a key already there keeps its place), its timings added."""
    trace["timings_ms"].update(part.get("timings_ms", {}))
    trace.update((key, value) for key, value in part.items() if key != "timings_ms")


def _opening_trace(query: Query, backend: str, reranker: str) -> dict[str, Any]:
    """The trace before any stage ran: what was asked for, and nothing found yet."""
    return {
        "backend": backend,
        "reranker": reranker,
        "query_terms": query.terms,
        "min_score": query.min_score,
        "max_sources": query.max_sources,
        "candidate_limit": query.candidate_limit,
        "candidates": 0,
        "kept": [],
        "cut_by_threshold": [],
        "cut_by_cap": [],
        "cut_as_copy": [],
        "withheld": 0,
        "timings_ms": {"search": 0.0, "rerank": 0.0},
    }


def _search(query: Query, backend: AccessFilteredBackend) -> _Searched:
    """The engine's candidates, and the question's terms weighed by their rarity over what this asker
    may read: a word only closed documents hold weighs as a word no document holds
    (answers.retrieval.rarity)."""
    started = time.perf_counter()
    found = backend.search(query.terms, limit=query.candidate_limit, subjects=subject_terms(query.question))
    rarity = rarity_table(backend.reader, found)
    searched = ms_since(started)
    weights = term_weights(query.question, query.terms, rarity.doc_counts, rarity.total)
    part = {
        "candidates": len(found.candidates),
        "match": {
            "required": found.plan.required,
            "all_required": found.plan.all_required,
            "common_terms": found.plan.common,
        },
        "timings_ms": {"search": searched},
        "term_weights": {t: rounded(w) for t, w in weights.items()},
    }
    return _Searched(found.candidates, rarity, weights, part)


def _lexical_pool(candidates: list[Candidate]) -> _Pool:
    return _Pool(candidates, [None] * len(candidates))


def _names_rule(query: Query, hybrid: Hybrid, rarity: RarityTable) -> _Pool:
    """The fused candidates with their dense similarity, except where it would mislead.

    An embedding hears "exceptions in Java" as "exceptions": a passage that lacks a rare name
    the question writes keeps its lexical score (docs/explanation/relevance.md, "Names"); its fusion entry
    says so (`lacks_names`)."""
    names = rare_names(query.question, rarity.doc_counts, rarity.total)
    unlifted: set[int] = set()
    if names:
        unlifted = {c.chunk_id for c in hybrid.candidates if not holds_all(names, c.title, c.heading, c.text)}
    for chunk_id in unlifted:
        hybrid.fusion[chunk_id]["lacks_names"] = True  # the trace's `fusion` entry
    similarity = [
        None if c.chunk_id in unlifted else hybrid.similarity.get(c.chunk_id, 0.0) for c in hybrid.candidates
    ]
    return _Pool(hybrid.candidates, similarity, hybrid.fusion, sorted(names))


def _scored(query: Query, pool: _Pool, weights: dict[str, float], reranker: Reranker) -> list[Scored]:
    """Each candidate's lexical score (its engine score over the best candidate's) and the reranker's.

    Scores are kept as the trace shows them (4 decimals): the threshold reads the score a
    reviewer sees, so a cut passage never shows the threshold's own value."""
    best_raw = max((c.raw_score for c in pool.candidates), default=0.0)
    lexical = [c.raw_score / best_raw if best_raw > 0 else 0.0 for c in pool.candidates]
    passages = [
        Passage(c.title, c.heading, c.text, lex, similarity)
        for c, lex, similarity in zip(pool.candidates, lexical, pool.dense, strict=True)
    ]
    scores = reranker.score(query.terms, passages, weights)
    return [
        Scored(c, lex, rounded(min(1.0, max(0.0, s))))
        for c, lex, s in zip(pool.candidates, lexical, scores, strict=True)
    ]


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


def _copy_entry(copy: Scored, kept_instead: Scored, fusion: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """A copy cut, as `cut_as_copy` records it: with the chunk kept in its place."""
    same_as = {"document_id": kept_instead.candidate.document_id, "chunk_id": kept_instead.candidate.chunk_id}
    return {**_entry(copy, fusion), "same_as": same_as}


def _tie_order(scored: list[Scored], stems: frozenset[str]) -> list[Scored]:
    """Best score first. Ties: a page the question names by its title, the fewest other title words
    first (the page on exactly what was asked, rerank.title_excess); then the candidates' order: the
    engine's (best first), or the fused one."""

    def named_order(item: Scored) -> int:
        excess = title_excess(stems, item.candidate.title)  # cached per title (rerank)
        return NOT_NAMED if excess is None else excess

    ranked = sorted(enumerate(scored), key=lambda pair: (-pair[1].score, named_order(pair[1]), pair[0]))
    return [item for _, item in ranked]


def _threshold(ranked: list[Scored], min_score: float) -> tuple[list[list[Scored]], list[Scored]]:
    """The ranked candidates that reach the threshold (score >= min_score) grouped by document, the
    document of the best first, each group in rank order; and those cut, in rank order."""
    by_document: dict[int, list[Scored]] = {}
    cut: list[Scored] = []
    for item in ranked:
        if item.score < min_score:
            cut.append(item)
            continue
        by_document.setdefault(item.candidate.document_id, []).append(item)
    return list(by_document.values()), cut


def _cap(documents: list[list[Scored]], max_sources: int) -> tuple[list[list[Scored]], list[Scored]]:
    """The first `max_sources` documents, and the best chunk of each document cut by the cap."""
    return documents[:max_sources], [chunks[0] for chunks in documents[max_sources:]]


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


def _numbered(
    documents: list[list[Scored]], stems: frozenset[str], fusion: dict[int, dict[str, Any]]
) -> tuple[list[RetrievedSource], list[dict[str, Any]]]:
    """The documents as sources 1..N, each with its excerpt, and the trace's `kept` entries."""
    sources: list[RetrievedSource] = []
    kept: list[dict[str, Any]] = []
    for number, chunks in enumerate(documents, start=1):
        best = chunks[0]
        c = best.candidate
        excerpt, chunk_ids = _excerpt(chunks, named=title_excess(stems, c.title) is not None)
        score, lexical = rounded(best.score), rounded(best.lexical)
        sources.append(
            RetrievedSource(
                number=number,
                document_id=c.document_id,
                title=c.title,
                url=c.url,
                excerpt=excerpt,
                lexical_score=lexical,
                score=score,
            )
        )
        kept.append(
            {
                "number": number,
                "document_id": c.document_id,
                "title": c.title,
                "chunk_ids": chunk_ids,
                "score": score,
                "lexical_score": lexical,
                **_ranks(fusion, c.chunk_id),
            }
        )
    return sources, kept


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

    The stages, in order (each named below; the module docstring says what each does): _search,
    answers.retrieval.hybrid (embeddings on), _names_rule, _scored, _one_copy_each, _tie_order,
    _threshold, _cap, _numbered.
    """
    reranker = reranker or get_reranker()
    backend = AccessFilteredBackend(backend_for(), reader)
    query = Query(question, query_terms(question or ""), min_score, max_sources, candidate_limit)
    trace = _opening_trace(query, backend.name, reranker.name)
    if not query.terms or max_sources < 1:
        return Retrieval(sources=[], trace=trace)

    pending = start_embedding(question)
    searched = _search(query, backend)
    _record(trace, searched.trace)
    hybrid: Hybrid | None = None
    if pending is not None:
        hybrid, part = hybrid_candidates(pending, searched.candidates, limit=candidate_limit, backend=backend)
        _record(trace, part)
    trace["withheld"] = len(backend.withheld)
    reranking = time.perf_counter()
    if hybrid is None:
        pool = _lexical_pool(searched.candidates)
    else:
        pool = _names_rule(query, hybrid, searched.rarity)
        trace["candidates"] = len(pool.candidates)
        trace["dense"]["names"] = pool.names
    scored, copies = _one_copy_each(_scored(query, pool, searched.weights, reranker))
    trace["cut_as_copy"] = [_copy_entry(copy, kept_instead, pool.fusion) for copy, kept_instead in copies]
    ranked = _tie_order(scored, query.stems)
    trace["timings_ms"]["rerank"] = ms_since(reranking)

    documents, below = _threshold(ranked, min_score)
    trace["cut_by_threshold"] = [_entry(item, pool.fusion) for item in below]
    documents, capped = _cap(documents, max_sources)
    trace["cut_by_cap"] = [_entry(item, pool.fusion) for item in capped]
    sources, trace["kept"] = _numbered(documents, query.stems, pool.fusion)
    return Retrieval(sources=sources, trace=trace)
