"""Read queries shared by the API, the pages, the event streams and admin."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Max, Min, Prefetch, Q

from answers.citations.trail import final_markers
from answers.excerpts import quote_spans
from answers.models import Answer, AnswerSource, Chunk, Document
from answers.rendering import render_answer_html
from answers.retrieval.query import STOPWORDS, WEAK_TERMS, stem, tokenize
from answers.retrieval.types import RetrievedSource


class Access(enum.Enum):
    """What a user may do with an answer id: read it, or nothing (as if it did not exist)."""

    READ = "read"
    MISSING = "missing"


def parse_answer_id(raw: str) -> uuid.UUID | None:
    """The answer id in its one accepted form, or None (every surface then answers as for a missing
    answer): the UUID as the API writes it, lowercase with hyphens (36 characters), nothing else
    (no uppercase, no hyphenless, braced or `urn:uuid:` spelling). The pages' and streams' routes
    take the same form (Django's `uuid` path converter)."""
    try:
        parsed = uuid.UUID(raw)
    except (TypeError, ValueError, AttributeError):
        return None
    return parsed if str(parsed) == raw else None


def answer_access(*, answer_id: uuid.UUID, user: Any) -> Access:
    """Signed-in askers' answers: them and staff. Anonymous answers: whoever holds the id.

    Anyone else, signed in or not, learns nothing: the answer is as missing (a 404 everywhere).
    """
    row = Answer.objects.filter(id=answer_id).values("asker_id").first()
    return Access.MISSING if row is None else _access(asker_id=row["asker_id"], user=user)


def _access(*, asker_id: int | None, user: Any) -> Access:
    return Access.READ if _may_read(asker_id=asker_id, user=user) else Access.MISSING


def answer_readable_by(*, answer_id: uuid.UUID, user: Any) -> bool:
    return answer_access(answer_id=answer_id, user=user) is Access.READ


def _may_read(*, asker_id: int | None, user: Any) -> bool:
    if asker_id is None:
        return True
    return bool(user is not None and user.is_authenticated and (user.is_staff or user.pk == asker_id))


TRAIL_PERMISSION = "answers.view_trail"


def may_read_trails(user: Any) -> bool:
    """The QA reviewers' permission (superusers have it too): the trail API and the admin answer pages
    both ask this, so a reviewer and staff without it get the same answer from both. Staff status alone
    is not enough (it only lets one sign in to admin)."""
    return bool(
        user is not None and user.is_authenticated and user.is_active and user.has_perm(TRAIL_PERMISSION)
    )


def answer_get_with_access(*, answer_id: uuid.UUID, user: Any) -> tuple[Answer | None, Access]:
    """The answer with its sources (None unless `user` may read it), and what `user` may do."""
    answer = answer_trail_get(answer_id=answer_id)
    if answer is None:
        return None, Access.MISSING
    access = _access(asker_id=answer.asker_id, user=user)
    return (answer if access is Access.READ else None), access


def answer_get(*, answer_id: uuid.UUID, user: Any) -> Answer | None:
    """The answer with its sources, or None when it does not exist or `user` may not read it."""
    return answer_get_with_access(answer_id=answer_id, user=user)[0]


def with_sources() -> Prefetch[Any]:
    """Load an answer's sources with it, in retrieval order."""
    return Prefetch("sources", queryset=AnswerSource.objects.order_by("original_number"))


def answer_trail_get(*, answer_id: uuid.UUID) -> Answer | None:
    """The answer with its sources in retrieval order, whoever asks (callers check access)."""
    return Answer.objects.prefetch_related(with_sources()).filter(id=answer_id).first()


def reference_payload(source: AnswerSource | RetrievedSource, number: int) -> dict[str, Any]:
    """A numbered source as clients see it: in `references`, `done`, the API and the pages."""
    return {
        "number": number,
        "document_id": source.document_id,
        "title": source.title,
        "url": source.url,
        "excerpt": source.excerpt,
    }


def answer_references(answer: Answer) -> list[dict[str, Any]]:
    """Done: the final references in final order. Otherwise: every retrieved source, retrieval order."""
    sources = sorted(answer.sources.all(), key=lambda s: s.original_number)
    if answer.status != Answer.Status.DONE:
        return [reference_payload(s, s.original_number) for s in sources]
    final = sorted((s for s in sources if s.final_number is not None), key=lambda s: s.final_number or 0)
    return [reference_payload(s, s.final_number or 0) for s in final]


def answer_quotes(answer: Answer) -> dict[str, list[str]]:
    """Done: the native-citation quotes of each final source that has any, by final number (as a string)."""
    if answer.status != Answer.Status.DONE:
        return {}
    return {
        str(s.final_number): list(s.quotes)
        for s in sorted(answer.sources.all(), key=lambda s: s.final_number or 0)
        if s.final_number is not None and s.quotes
    }


def source_passages(answer: Answer) -> dict[int, list[tuple[int, int]]]:
    """Done: by final number, the spans of each source's excerpt that back the answer.

    Its native-citation quotes found in the excerpt, and the passages the support record
    names for the sentences that cite it (once the record is computed).
    """
    if answer.status != Answer.Status.DONE:
        return {}
    spans: dict[int, list[tuple[int, int]]] = {}
    for source in answer.sources.all():
        if source.final_number is not None:
            spans[source.final_number] = quote_spans(source.excerpt, source.quotes or [])
    for sentence in (answer.support or {}).get("sentences", []):
        for number, span in (sentence.get("passages") or {}).items():
            if int(number) in spans and len(span) == 2:
                spans[int(number)].append((int(span[0]), int(span[1])))
    return {number: found for number, found in spans.items() if found}


def answer_done_payload(*, answer: Answer) -> dict[str, Any]:
    """The `done` event: the finalized pair, equal to what GET /api/answers/<id>/ returns,
    plus `html`: the final text rendered and sanitized by the server, markers linked to their source
    (`#source-N`, or in a conversation's turn T > 1 `#turn-T-source-N`: rendering.source_anchor).
    `truncated`: the provider stopped at its length limit (the page says the answer was cut short).
    `quotes`: the native-citation quotes of the final sources, by final number (the page marks them).
    """
    references = answer_references(answer)
    return {
        "text": answer.final_text,
        "references": references,
        "fallback": answer.fallback,
        "truncated": answer.truncated,
        "quotes": answer_quotes(answer),
        "html": render_answer_html(
            answer.final_text,
            reference_count=len(references),
            markers=final_markers(answer.markers) or None,
            turn=answer.turn,
        ),
    }


@dataclass(frozen=True)
class FirstScreen:
    """What the ask page tells a newcomer: how much the answers are drawn from, and what to ask."""

    documents: int
    last_updated: datetime | None
    examples: list[str]


EXAMPLE_QUESTIONS = 4
EXAMPLE_TITLE_MAX = 80
EXAMPLE_CANDIDATES = 3  # documents looked at per example


def first_screen_get(*, examples: int = EXAMPLE_QUESTIONS) -> FirstScreen:
    """The corpus's size and last update, and up to `examples` questions about documents spread over it.

    Deterministic and cheap whatever the corpus's size: one aggregate query, then for each example
    a primary-key lookup (the first few documents at or after one of `examples` evenly spaced ids)
    and a check of that document's chunks; so the same corpus always offers the same questions,
    and they range over its topics.
    """
    corpus = Document.objects.order_by().aggregate(
        documents=Count("pk"), last_updated=Max("updated_at"), low=Min("pk"), high=Max("pk")
    )
    titles: dict[int, str] = {}
    if corpus["documents"]:
        low, high = corpus["low"], corpus["high"]
        for index in range(examples):
            at = low + (high - low + 1) * (2 * index + 1) // (2 * examples)
            candidates = Document.objects.filter(pk__gte=at).order_by("pk").values_list("pk", "title")
            for pk, title in candidates[:EXAMPLE_CANDIDATES]:
                if pk not in titles and _good_example(pk, title.strip()):
                    titles[pk] = title.strip()
                    break
    questions = list(dict.fromkeys(example_question(title) for title in titles.values()))
    return FirstScreen(documents=corpus["documents"], last_updated=corpus["last_updated"], examples=questions)


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


def example_question(title: str) -> str:
    """A question about a document, from its title: "The with statement" asks about "the with statement".

    A title in sentence case loses its capital ("Coroutines" → "coroutines"); one in title case or
    starting with a name keeps it as written ("Format String Syntax", "pdb — The Python Debugger").
    """
    first, *rest = title.split() or [""]
    if first[:1].isupper() and first[1:].islower() and not any(w[:1].isupper() for w in rest):
        title = title[0].lower() + title[1:]
    return f"What should I know about {title}?"
