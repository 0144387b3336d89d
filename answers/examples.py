"""The first screen's example questions: questions about documents spread over the public corpus,
each checked to be answered from its own document first (retrieval and the extractive answerer, run
offline), remembered per corpus version. A service, not a selector: it runs retrieval and composes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import DatabaseError
from django.db.models import Count, Max, Min, Q

from answers.citations import scan_markers
from answers.conf import conf
from answers.models import Chunk, Document
from answers.providers.extractive import compose_answer
from answers.retrieval.backends import NoSearchBackend
from answers.retrieval.pipeline import retrieve
from answers.retrieval.query import STOPWORDS, WEAK_TERMS, stem, tokenize


@dataclass(frozen=True)
class FirstScreen:
    """What the ask page tells a newcomer: how much the answers are drawn from, and what to ask."""

    documents: int
    last_updated: datetime | None
    examples: list[str]


EXAMPLE_QUESTIONS = 4
EXAMPLE_TITLE_MAX = 80
EXAMPLE_CANDIDATES = 5  # documents looked at per example
# Whether a document's example question retrieves it first, per corpus version (see _answers_well).
_answered_well: dict[tuple[Any, ...], bool] = {}


def first_screen_get(*, examples: int = EXAMPLE_QUESTIONS) -> FirstScreen:
    """The corpus's size and last update, and up to `examples` questions about documents spread over it.

    Deterministic and cheap whatever the corpus's size: one aggregate query, then for each example
    a primary-key lookup (the first few documents at or after one of `examples` evenly spaced ids)
    and a check of that document's chunks and of what its question retrieves (remembered until
    the corpus changes); so the same corpus always offers the same questions, they range over
    its topics, and each is answered from its own document first.
    Public documents only: the page is everyone's, and an example question would show a closed
    document's title to anyone.
    """
    public = Document.objects.filter(access=Document.Access.PUBLIC)
    corpus = _corpus_stats()
    titles: dict[int, str] = {}
    if corpus["documents"]:
        low, high = corpus["low"], corpus["high"]
        for index in range(examples):
            at = low + (high - low + 1) * (2 * index + 1) // (2 * examples)
            candidates = public.filter(pk__gte=at).order_by("pk").values_list("pk", "title")
            for pk, title in candidates[:EXAMPLE_CANDIDATES]:
                if pk not in titles and offers_example(pk, title.strip(), corpus):
                    titles[pk] = title.strip()
                    break
    questions = list(dict.fromkeys(example_question(title) for title in titles.values()))
    return FirstScreen(documents=corpus["documents"], last_updated=corpus["last_updated"], examples=questions)


def _corpus_stats() -> dict[str, Any]:
    """The public corpus (the first screen is everyone's): its size, last update and id range."""
    return (
        Document.objects.filter(access=Document.Access.PUBLIC)
        .order_by()
        .aggregate(documents=Count("pk"), last_updated=Max("updated_at"), low=Min("pk"), high=Max("pk"))
    )


def offers_example(document_id: int, title: str, corpus: dict[str, Any] | None = None) -> bool:
    """Whether the first screen may offer the document's example question (see first_screen_get)."""
    return _good_example(document_id, title) and _answers_well(document_id, title, corpus or _corpus_stats())


def _good_example(document_id: int, title: str) -> bool:
    """A title short enough for a button, whose words the document's own text uses.

    A question is answered from what a document's passages say, not from its title: a
    document titled "Interaction with dynamic features" whose text never says "dynamic" gets
    no cited answer to a question about dynamic features, so it makes no example.
    """
    words = [w for w in tokenize(title) if w not in STOPWORDS and w not in WEAK_TERMS]
    if not words or len(title) > EXAMPLE_TITLE_MAX:
        return False
    # Compared by the start a word shares with its stem: "properties" finds "property" too.
    found = Q()
    for word in words:
        base = stem(word)
        shared = next((i for i, (a, b) in enumerate(zip(word, base, strict=False)) if a != b), len(base))
        found &= Q(text__icontains=word[: max(shared, 1)])
    return Chunk.objects.filter(found, document_id=document_id).exists()


def _answers_well(document_id: int, title: str, corpus: dict[str, Any]) -> bool:
    """Asked, the document's example question is answered citing the document first.

    Checked offline: the sources retrieval finds over ANSWERS_MIN_SCORE, and the extractive
    answer composed from them (answers.providers.extractive, deterministic, no model call).
    A title shared with a longer page's section ("The for statement" is also a section of
    "Compound statements") may rank that page first, and a document whose best passages are
    grammar has nothing to quote: such questions are not offered.
    """
    version = (corpus["documents"], corpus["last_updated"], corpus["low"], corpus["high"], conf.MIN_SCORE)
    key = (*version, document_id, title)
    known = _answered_well.get(key)
    if known is not None:
        return known
    question = example_question(title)
    try:
        sources = retrieve(question, min_score=conf.MIN_SCORE, max_sources=conf.MAX_SOURCES).sources
    except (DatabaseError, NoSearchBackend):
        return False
    markers = scan_markers(compose_answer(question, sources))
    by_number = {s.number: s.document_id for s in sources}
    well = bool(markers) and by_number.get(markers[0].members[0]) == document_id
    if any(k[: len(version)] != version for k in _answered_well):
        _answered_well.clear()  # the corpus changed: forget what the old one answered
    _answered_well[key] = well
    return well


def example_question(title: str) -> str:
    """A question about a document, from its title: "The with statement" asks about "the with statement".

    A title in sentence case loses its capital ("Coroutines" → "coroutines"); one in title case or
    starting with a name keeps it as written ("Format String Syntax", "pdb — The Python Debugger").
    """
    first, *rest = title.split() or [""]
    if first[:1].isupper() and first[1:].islower() and not any(w[:1].isupper() for w in rest):
        title = title[0].lower() + title[1:]
    return f"What should I know about {title}?"
