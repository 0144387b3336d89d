"""Read queries shared by the API, the pages, the event streams and admin."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import DatabaseError
from django.db.models import Count, Max, Min, Prefetch, Q

from answers.citations import scan_markers
from answers.citations.trail import final_markers
from answers.conf import conf
from answers.excerpts import quote_spans, readable
from answers.models import Answer, AnswerSource, Chunk, Document, Feedback
from answers.providers.extractive import compose_answer
from answers.rendering import render_answer_html
from answers.retrieval.access import (
    NOTHING_WITHHELD,
    Redaction,
    reader_for,
    unreadable_documents,
    withheld_reference,
)
from answers.retrieval.backends import NoSearchBackend
from answers.retrieval.pipeline import retrieve
from answers.retrieval.query import STOPWORDS, WEAK_TERMS, stem, tokenize
from answers.retrieval.types import RetrievedSource
from answers.support.passages import best_passage
from answers.support.sentences import split_sentences


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
    A deleted user's answers stay signed-in answers with no asker: staff only.
    """
    row = Answer.objects.filter(id=answer_id).values("asker_id", "asked_signed_in").first()
    if row is None:
        return Access.MISSING
    return _access(asker_id=row["asker_id"], signed_in=row["asked_signed_in"], user=user)


def _access(*, asker_id: int | None, signed_in: bool, user: Any) -> Access:
    return Access.READ if _may_read(asker_id=asker_id, signed_in=signed_in, user=user) else Access.MISSING


def answer_readable_by(*, answer_id: uuid.UUID, user: Any) -> bool:
    return answer_access(answer_id=answer_id, user=user) is Access.READ


def _may_read(*, asker_id: int | None, signed_in: bool, user: Any) -> bool:
    if not signed_in:
        return True
    if user is None or not user.is_authenticated:
        return False
    return bool(user.is_staff or (asker_id is not None and user.pk == asker_id))


TRAIL_PERMISSION = "answers.view_trail"


def may_read_trails(user: Any) -> bool:
    """The QA reviewers' permission (superusers have it too): the trail API and the admin answer pages
    both ask this, so a reviewer and staff without it get the same answer from both. Staff status alone
    is not enough (it only lets one sign in to admin)."""
    return bool(
        user is not None and user.is_authenticated and user.is_active and user.has_perm(TRAIL_PERMISSION)
    )


# What reading an answer (API object, page, feedback) never needs, only its trail: a maximal
# answer's marker record alone is megabytes of JSON to decode (bench/RESULTS_hostile.md).
TRAIL_ONLY_FIELDS = ("raw_text", "markers", "normalized", "retrieval_trace")
# Loaded only by the reads that show them (the page: one query each): a maximal answer's html is
# over a megabyte, its support record a tenth of one.
LARGE_FIELDS = ("html", "support")


def answer_get_with_access(*, answer_id: uuid.UUID, user: Any) -> tuple[Answer | None, Access]:
    """The answer with its sources (None unless `user` may read it), and what `user` may do.

    Without its trail's records nor its large fields (loaded if touched): answer_trail_get has them.
    """
    deferred = Answer.objects.defer(*TRAIL_ONLY_FIELDS, *LARGE_FIELDS)
    answer = deferred.prefetch_related(with_sources()).filter(id=answer_id).first()
    if answer is None:
        return None, Access.MISSING
    access = _access(asker_id=answer.asker_id, signed_in=answer.asked_signed_in, user=user)
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


def answer_outcome_get(*, answer_id: uuid.UUID) -> Answer | None:
    """The answer with its sources, as its outcome (`done` or `error` payload) reads it: without the
    trail's records (a marker flood's `markers` run to megabytes) nor its raw text, loaded if touched."""
    deferred = Answer.objects.defer("raw_text", "markers", "normalized")
    return deferred.prefetch_related(with_sources()).filter(id=answer_id).first()


def answer_sources_get(*, answer_id: uuid.UUID) -> Answer | None:
    """The answer's sources and retrieval trace only (what answer_redaction reads), whoever asks:
    a stream's redaction is decided without loading the answer's text and records."""
    only = Answer.objects.only("id", "retrieval_trace")
    return only.prefetch_related(with_sources()).filter(id=answer_id).first()


def sees_every_source(user: Any) -> bool:
    """Staff and QA reviewers read every source of every answer they may read, withheld or not."""
    return bool(
        user is not None
        and user.is_authenticated
        and user.is_active
        and (user.is_staff or may_read_trails(user))
    )


def answer_redaction(*, answer: Answer, user: Any) -> Redaction:
    """Which of the answer's sources `user` may no longer read (their document's access changed, or it
    was deleted, after the answer): those are shown as `{"number", "withheld": true}` to them."""
    if sees_every_source(user):
        return NOTHING_WITHHELD
    ids = {s.document_id for s in answer.sources.all() if s.document_id is not None}
    # The trace keeps each source's document id after a delete cleared the source's (stored events carry it).
    kept = (answer.retrieval_trace or {}).get("kept") or []
    ids |= {int(k["document_id"]) for k in kept if isinstance(k, dict) and k.get("document_id") is not None}
    return Redaction(frozenset(unreadable_documents(reader_for(user), ids)), deleted=True)


def reference_payload(
    source: AnswerSource | RetrievedSource, number: int, redaction: Redaction = NOTHING_WITHHELD
) -> dict[str, Any]:
    """A numbered source as clients see it: in `references`, `done`, the API and the pages."""
    payload = {
        "number": number,
        "document_id": source.document_id,
        "title": source.title,
        "url": source.url,
        "excerpt": source.excerpt,
    }
    return withheld_reference(payload) if redaction.withholds(source.document_id) else payload


def answer_references(answer: Answer, redaction: Redaction = NOTHING_WITHHELD) -> list[dict[str, Any]]:
    """Done: the final references in final order. Otherwise: every retrieved source, retrieval order."""
    sources = sorted(answer.sources.all(), key=lambda s: s.original_number)
    if answer.status != Answer.Status.DONE:
        return [reference_payload(s, s.original_number, redaction) for s in sources]
    final = sorted((s for s in sources if s.final_number is not None), key=lambda s: s.final_number or 0)
    return [reference_payload(s, s.final_number or 0, redaction) for s in final]


def answer_quotes(answer: Answer, redaction: Redaction = NOTHING_WITHHELD) -> dict[str, list[str]]:
    """Done: the native-citation quotes of each final source that has any, by final number (as a string)."""
    if answer.status != Answer.Status.DONE:
        return {}
    return {
        str(s.final_number): list(s.quotes)
        for s in sorted(answer.sources.all(), key=lambda s: s.final_number or 0)
        if s.final_number is not None and s.quotes and not redaction.withholds(s.document_id)
    }


def source_passages(answer: Answer) -> dict[int, list[tuple[int, int]]]:
    """Done: by final number, the spans of each source's excerpt that back the answer.

    Its native-citation quotes found in the excerpt, and the passages the support record
    names for the sentences that cite it; until the record is computed (it comes after
    `done`), the excerpt's sentence that best matches each sentence citing it (the record's
    own fallback, answers.support.passages), so the live page and the permalink mark the
    same passage from the start.
    """
    if answer.status != Answer.Status.DONE:
        return {}
    spans: dict[int, list[tuple[int, int]]] = {}
    excerpts: dict[int, str] = {}
    for source in answer.sources.all():
        if source.final_number is not None:
            spans[source.final_number] = quote_spans(source.excerpt, source.quotes or [])
            excerpts[source.final_number] = source.excerpt
    if answer.support is not None:
        for sentence in answer.support.get("sentences", []):
            for number, span in (sentence.get("passages") or {}).items():
                if int(number) in spans and len(span) == 2:
                    spans[int(number)].append((int(span[0]), int(span[1])))
    elif not answer.fallback:
        for sentence in split_sentences(answer.final_text):
            for number in sentence.cited:
                if number in excerpts and not spans[number]:
                    passage = best_passage(sentence, excerpts[number])
                    if passage is not None:
                        spans[number].append(passage)
    return {number: found for number, found in spans.items() if found}


def same_passages(references: list[dict[str, Any]]) -> dict[int, int]:
    """By number, the earlier source whose excerpt reads the same (the same passage under two titles):
    the Sources list shows it once, naming both."""
    first: dict[str, int] = {}
    same: dict[int, int] = {}
    for ref in references:
        if ref.get("withheld"):
            continue  # a source this reader may no longer read shows nothing to compare
        text = readable(ref["excerpt"])[0]
        if not text:
            continue
        if text in first:
            same[ref["number"]] = first[text]
        else:
            first[text] = ref["number"]
    return same


def answer_done_payload(*, answer: Answer, redaction: Redaction = NOTHING_WITHHELD) -> dict[str, Any]:
    """The `done` event: the finalized pair, equal to what GET /api/answers/<id>/ returns,
    plus `html`: the final text rendered and sanitized by the server, markers linked to their source
    (`#source-N`, or in a conversation's turn T > 1 `#turn-T-source-N`: rendering.source_anchor).
    `truncated`: the provider stopped at its length limit (the page says the answer was cut short).
    `quotes`: the native-citation quotes of the final sources, by final number (the page marks them).
    `declined`: no source reached the threshold; the text is ANSWERS_DECLINE_TEXT, `references` empty.
    """
    references = answer_references(answer, redaction)
    return {
        "text": answer.final_text,
        "references": references,
        "fallback": answer.fallback,
        "declined": answer.declined,
        "truncated": answer.truncated,
        "quotes": answer_quotes(answer, redaction),
        # By final number, the spans of each excerpt that back the answer, and the sources whose
        # excerpt is an earlier one's (the page marks the first, and names the second beside it).
        "passages": {str(n): [list(span) for span in spans] for n, spans in source_passages(answer).items()},
        "same_passage": {str(n): earlier for n, earlier in same_passages(references).items()},
        "html": answer_html(answer, reference_count=len(references)),
    }


def answer_html(answer: Answer, *, reference_count: int, turn: int | None = None) -> str:
    """A done answer's final text as sanitized HTML: stored when it was completed (answer.html), or
    rendered for an answer stored before the html was (`reference_count`: its final references).

    `turn`: whose source anchors its links point at (answers.rendering.source_anchor); the stored
    html has its own turn's, so another (a follow-up shown on its own permalink: 1) renders anew.
    """
    turn = answer.turn if turn is None else turn
    if not answer.final_text or (answer.html and turn == answer.turn):
        return answer.html
    return render_answer_html(
        answer.final_text,
        reference_count=reference_count,
        markers=final_markers(answer.markers) or None,
        turn=turn,
    )


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


def feedback_current(*, answer: Answer, user: Any, client: str) -> dict[str, Any]:
    """What this reader last sent on `answer`: the verdict (or None) and the flagged sources, by final number.

    A reader is the signed-in user, or for an anonymous reader the client hash (answers.feedback).
    """
    signed_in = user is not None and user.is_authenticated
    reader = Q(user=user) if signed_in else Q(user__isnull=True, client=client) & ~Q(client="")
    verdict: dict[str, Any] | None = None
    flags: list[dict[str, Any]] = []
    for row in (
        Feedback.objects.filter(reader, answer=answer).select_related("source").order_by("created_at", "id")
    ):
        if row.source is None:
            verdict = {"verdict": row.verdict, "comment": row.comment, "created_at": row.created_at}
        elif row.source.final_number is not None:
            flags.append(
                {"source": row.source.final_number, "comment": row.comment, "created_at": row.created_at}
            )
    flags.sort(key=lambda flag: flag["source"])
    return {"verdict": verdict, "flags": flags}
