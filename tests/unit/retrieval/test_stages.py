"""retrieve()'s stages one by one (answers/retrieval/pipeline.py): what each keeps, what each cuts,
and in which order, as the sources a reader is shown and the trace QA reads."""

from __future__ import annotations

import pytest

from answers.retrieval.backends import Candidate
from answers.retrieval.pipeline import (
    EXCERPT_MAX_CHARS,
    Query,
    Scored,
    _cap,
    _excerpt,
    _numbered,
    _threshold,
    _tie_order,
)
from answers.retrieval.query import query_terms

TITLES = {1: "Exceptions", 2: "The raise statement", 3: "The try statement", 4: "Errors"}


def scored(
    document: int, chunk: int, score: float, *, ordinal: int = 0, text: str = "", title: str = ""
) -> Scored:
    candidate = Candidate(
        chunk_id=chunk,
        document_id=document,
        ordinal=ordinal,
        title=title or TITLES.get(document, f"Page {document}"),
        url=f"/doc/{document}",
        heading="",
        text=text or f"chunk {chunk}",
        raw_score=score,
    )
    return Scored(candidate, lexical=score, score=score)


def chunk_ids(items: list[Scored]) -> list[int]:
    return [item.candidate.chunk_id for item in items]


# (min_score, scores of chunks 10, 11, 12, 13 in rank order, chunks kept, chunks cut)
THRESHOLD_TABLE = [
    (0.25, [0.9, 0.5, 0.25, 0.2], [10, 11, 12], [13]),  # a score equal to the threshold is kept
    (0.0, [0.9, 0.5, 0.1, 0.0], [10, 11, 12, 13], []),  # no threshold: everything stays
    (0.95, [0.9, 0.5, 0.1, 0.0], [], [10, 11, 12, 13]),  # none reaches it: no sources (a decline)
    (0.5, [0.5001, 0.5, 0.4999, 0.3], [10, 11], [12, 13]),
]


@pytest.mark.parametrize(("min_score", "scores", "kept", "cut"), THRESHOLD_TABLE)
def test_the_threshold_keeps_what_reaches_it_and_cuts_the_rest_in_rank_order(
    min_score: float, scores: list[float], kept: list[int], cut: list[int]
) -> None:
    ranked = [
        scored(document, chunk, s)
        for document, chunk, s in zip([1, 2, 1, 3], [10, 11, 12, 13], scores, strict=True)
    ]
    documents, below = _threshold(ranked, min_score)
    assert sorted(chunk_ids([item for chunks in documents for item in chunks])) == sorted(kept)
    assert chunk_ids(below) == cut


def test_the_threshold_groups_chunks_by_document_best_document_first() -> None:
    ranked = [
        scored(2, 20, 0.9),
        scored(1, 10, 0.8),
        scored(2, 21, 0.7),
        scored(3, 30, 0.6),
        scored(1, 11, 0.5),
    ]
    documents, _ = _threshold(ranked, 0.0)
    assert [chunk_ids(chunks) for chunks in documents] == [[20, 21], [10, 11], [30]]


# (documents found, max_sources, documents kept, documents cut by the cap)
CAP_TABLE = [
    (4, 2, [1, 2], [3, 4]),
    (4, 4, [1, 2, 3, 4], []),
    (2, 5, [1, 2], []),  # fewer than the cap: all of them
    (3, 1, [1], [2, 3]),
    (0, 3, [], []),
]


@pytest.mark.parametrize(("found", "max_sources", "kept", "capped"), CAP_TABLE)
def test_the_cap_keeps_the_first_n_distinct_documents_and_lists_each_other_once(
    found: int, max_sources: int, kept: list[int], capped: list[int]
) -> None:
    # Each document has two chunks: the cap counts documents, not chunks.
    documents = [
        [scored(d, d * 10, 1 - d / 10), scored(d, d * 10 + 1, 0.5 - d / 10)] for d in range(1, found + 1)
    ]
    within, cut = _cap(documents, max_sources)
    assert [chunks[0].candidate.document_id for chunks in within] == kept
    assert len({chunks[0].candidate.document_id for chunks in within}) == len(kept)
    # A capped document is listed once, with its best chunk.
    assert [(item.candidate.document_id, item.candidate.chunk_id) for item in cut] == [
        (d, d * 10) for d in capped
    ]


def stems_of(question: str) -> frozenset[str]:
    return Query(question, query_terms(question), min_score=0.0, max_sources=5).stems


# (question, titles of candidates scoring alike in the engine's order, titles in the order retrieved)
TIE_TABLE = [
    (
        "Please explain assignment statements.",
        ["Augmented assignment statements", "Assignment statements"],
        ["Assignment statements", "Augmented assignment statements"],
    ),
    (
        "Please explain assignment statements.",
        ["Simple statements", "Augmented assignment statements"],  # only the second is named
        ["Augmented assignment statements", "Simple statements"],
    ),
    (
        "How do I raise an exception?",
        ["Built-in functions", "The standard library"],  # neither is named: the engine's order
        ["Built-in functions", "The standard library"],
    ),
]


@pytest.mark.parametrize(("question", "titles", "expected"), TIE_TABLE)
def test_on_a_tie_the_page_named_by_the_question_comes_first_the_fewest_other_title_words_first(
    question: str, titles: list[str], expected: list[str]
) -> None:
    candidates = [scored(i, i, 0.6, title=title) for i, title in enumerate(titles, start=1)]
    assert [item.candidate.title for item in _tie_order(candidates, stems_of(question))] == expected


def test_a_better_score_wins_over_a_named_title() -> None:
    candidates = [
        scored(1, 1, 0.5, title="Assignment statements"),
        scored(2, 2, 0.7, title="Simple statements"),
    ]
    ranked = _tie_order(candidates, stems_of("Please explain assignment statements."))
    assert [item.candidate.document_id for item in ranked] == [2, 1]


def test_sources_are_numbered_from_one_each_with_its_best_chunks_in_reading_order() -> None:
    documents = [
        [scored(1, 12, 0.9, ordinal=5, text="later"), scored(1, 10, 0.8, ordinal=1, text="earlier")],
        [scored(2, 20, 0.7, ordinal=0, text="only")],
    ]
    sources, kept = _numbered(documents, stems_of("How do I raise an exception?"), fusion={})
    assert [(s.number, s.document_id, s.score) for s in sources] == [(1, 1, 0.9), (2, 2, 0.7)]
    assert sources[0].excerpt == "earlier\n\nlater"
    assert [(k["number"], k["chunk_ids"]) for k in kept] == [(1, [10, 12]), (2, [20])]


# (chunks as (ordinal, score, length), named, ordinals shown)
EXCERPT_TABLE = [
    ([(3, 0.9, 10), (1, 0.8, 10), (0, 0.7, 10)], False, [1, 3]),  # the best two, in reading order
    ([(3, 0.9, 10), (1, 0.9, 10), (0, 0.9, 10)], False, [1, 3]),  # ties: the engine's order
    ([(3, 0.9, 10), (1, 0.9, 10), (0, 0.9, 10)], True, [0, 1]),  # named: the earliest of those alike
    ([(3, 0.9, EXCERPT_MAX_CHARS), (1, 0.8, 10)], False, [3]),  # a second chunk past the bound: not shown
]


@pytest.mark.parametrize(("chunks", "named", "ordinals"), EXCERPT_TABLE)
def test_an_excerpt_holds_the_best_chunks_within_its_bounds(
    chunks: list[tuple[int, float, int]], named: bool, ordinals: list[int]
) -> None:
    items = [scored(1, 100 + o, s, ordinal=o, text=f"{o}".ljust(length, "x")) for o, s, length in chunks]
    excerpt, ids = _excerpt(items, named=named)
    assert ids == [100 + o for o in ordinals]
    assert excerpt == "\n\n".join(
        item.candidate.text for o in ordinals for item in items if item.candidate.ordinal == o
    )
