"""Storage of answers: create (with sources), heartbeat, complete (the pair and every outcome), fail, reap,
and the support record computed after `done`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from answers import db, metrics, selectors
from answers.citations import RULES_VERSION
from answers.citations.trail import compute_trail, final_markers
from answers.conf import conf
from answers.conversations.services import TurnInFlight, TurnPlan, turn_claim
from answers.failures import ErrorKind
from answers.models import Answer, AnswerSource
from answers.pipeline.keys import Idempotency
from answers.providers.base import Provider
from answers.providers.prompt import Prompt
from answers.rendering import render_answer_html
from answers.retrieval.types import Retrieval, RetrievedSource
from answers.support.record import summarize

# What finalize decides for each source: the names of AnswerSource's fields and of the
# trail's SourceOutcome alike, copied from one to the other and stored by store_source_outcomes.
SOURCE_OUTCOME_FIELDS = ("final_number", "status", "citation_count", "first_cited_offset", "renumbered")

# What completing an answer writes.
_COMPLETED_FIELDS = [
    "raw_text",
    "final_text",
    "stripped",
    "fallback",
    "markers",
    "normalized",
    "html",
    "rules_version",
    "truncated",
    "usage",
    "native",
    "status",
    "first_piece_ms",
    "generation_ms",
    "total_ms",
    "finished_at",
]

STALE_MESSAGE = "The answer was interrupted: the server writing it stopped."
DELETED_MESSAGE = "The answer was deleted while it was being written."

T = TypeVar("T")


async def run_db(fn: Callable[..., T], **kwargs: Any) -> T:
    """A pipeline step's database work: a few at a time per process, connection given back after."""
    return await db.run_db(fn, gate="pipeline", size=conf.PIPELINE_DB_WORKERS, **kwargs)


class AnswerDeleted(Exception):
    """The answer being written no longer exists (deleted in admin meanwhile)."""

    def __init__(self, answer_id: uuid.UUID) -> None:
        super().__init__(f"answer {answer_id} no longer exists")
        self.answer_id = answer_id


def answer_create(
    *,
    question: str,
    asker_id: int | None,
    delivery: str,
    provider: Provider,
    prompt: Prompt,
    retrieval: Retrieval,
    min_score: float,
    max_sources: int,
    retrieval_ms: float,
    idempotency: Idempotency | None = None,
    declined: bool = False,
    plan: TurnPlan | None = None,
    origin: str = Answer.Origin.READER,
) -> Answer:
    """Step 2: the answer (streaming) and one AnswerSource per retrieved source, in one transaction.

    `declined`: no source reached the threshold and the provider will not be called (flow.py).
    `plan`: the turn it is (answers.conversations.services): its conversation is created (a first
    turn) or locked and checked again (a follow-up, TurnInFlight, TurnOvertaken or TurnLimitReached) here.
    """
    plan = plan or TurnPlan()
    now = timezone.now()
    try:
        with transaction.atomic():
            conversation_id, turn = turn_claim(plan, asker_id=asker_id)
            answer = Answer.objects.create(
                conversation_id=conversation_id,
                turn=turn,
                standalone_question=plan.standalone_question,
                rewrite=plan.rewrite,
                history=plan.history.record() if plan.history is not None else None,
                question=question,
                asker_id=asker_id,
                asked_signed_in=asker_id is not None,
                delivery=delivery,
                origin=origin,
                status=Answer.Status.STREAMING,
                provider=provider.name,
                model=provider.model,
                prompt_version=prompt.version,
                min_score=min_score,
                max_sources=max_sources,
                retrieval_trace=retrieval.trace,
                retrieval_ms=retrieval_ms,
                declined=declined,
                heartbeat_at=now,
                idempotency_key=idempotency.key if idempotency else "",
                idempotency_scope=idempotency.scope if idempotency else "",
            )
            AnswerSource.objects.bulk_create([_source_row(answer, source) for source in retrieval.sources])
    except IntegrityError:
        if not plan.follow_up or (
            idempotency is not None
            and Answer.objects.filter(
                idempotency_scope=idempotency.scope, idempotency_key=idempotency.key
            ).exists()
        ):
            raise  # the idempotency key's: ask_once replays the first attempt
        # Another follow-up took this turn number first (answer_conversation_turn_unique).
        raise TurnInFlight from None

    metrics.stage_times({"retrieval": retrieval_ms})
    metrics.turn_started(answer)
    return answer


def _source_row(answer: Answer, source: RetrievedSource) -> AnswerSource:
    return AnswerSource(
        answer=answer,
        original_number=source.number,
        document_id=source.document_id,
        title=source.title,
        url=source.url,
        excerpt=source.excerpt,
        lexical_score=source.lexical_score,
        rerank_score=source.score,
    )


def heartbeat(answer_id: uuid.UUID) -> None:
    Answer.objects.filter(id=answer_id, status=Answer.Status.STREAMING).update(heartbeat_at=timezone.now())


def answer_complete(
    *,
    answer_id: uuid.UUID,
    raw_text: str,
    first_piece_ms: float | None,
    generation_ms: float,
    total_ms: float,
    truncated: bool = False,
    quotes: Mapping[int, list[str]] | None = None,
    usage: dict[str, int] | None = None,
    native: list[dict[str, object]] | None = None,
) -> Answer:
    """Step 5-6: strip, finalize and persist the pair and every source's outcome at once.

    `truncated`, `quotes` (by original source number), `usage` and `native` are what the
    provider reported besides the text (answers.providers.base.Generation).

    Returns the answer with its sources loaded (selectors.with_sources()).
    """
    with transaction.atomic():
        locked = Answer.objects.select_for_update().prefetch_related(selectors.with_sources())
        answer = locked.get(id=answer_id)
        if answer.status != Answer.Status.STREAMING:
            return answer  # failed meanwhile (reaped as stale): that verdict was already published
        sources = {s.original_number: s for s in answer.sources.all()}
        trail = compute_trail(raw_text, len(sources), dialects=conf.MARKER_DIALECTS)
        markers = trail.markers_json()
        # Rendered once, here (before the first write: on SQLite that takes the database's lock),
        # so no read renders it again: a maximal answer's takes about a second.
        answer.html = render_answer_html(
            trail.final_text,
            reference_count=sum(1 for outcome in trail.sources if outcome.final_number is not None),
            markers=final_markers(markers) or None,
            turn=answer.turn,
        )
        answer.raw_text = raw_text
        answer.final_text = trail.final_text
        answer.stripped = trail.stripped
        answer.fallback = trail.fallback
        answer.markers = markers
        answer.normalized = trail.normalized_json()
        answer.rules_version = RULES_VERSION
        answer.truncated = truncated
        answer.usage = usage
        answer.native = list(native or [])
        answer.status = Answer.Status.DONE
        answer.first_piece_ms = first_piece_ms
        answer.generation_ms = generation_ms
        answer.total_ms = total_ms
        answer.finished_at = timezone.now()
        answer.save(update_fields=_COMPLETED_FIELDS)
        for outcome in trail.sources:
            source = sources[outcome.original_number]
            for name in SOURCE_OUTCOME_FIELDS:
                setattr(source, name, getattr(outcome, name))
        extra: tuple[str, ...] = ()
        if quotes:
            for number, passages in quotes.items():
                if number in sources:
                    sources[number].quotes = list(passages)
            extra = ("quotes",)
        store_source_outcomes(list(sources.values()), extra=extra)
    metrics.answer_done(answer, trail)
    return answer


def answer_decline(*, answer_id: uuid.UUID, text: str, total_ms: float) -> Answer:
    """A declined answer done: `text` (ANSWERS_DECLINE_TEXT) is its raw and final text, as written.

    Nothing is finalized: it has no sources and, by answers.checks (E034), no marker, so there is
    no decision to record (and no fallback: there is no source to fall back to).
    """
    with transaction.atomic():
        answer = (
            Answer.objects.select_for_update().prefetch_related(selectors.with_sources()).get(id=answer_id)
        )
        if answer.status != Answer.Status.STREAMING:
            return answer  # failed meanwhile (reaped as stale): that verdict was already published
        answer.raw_text = text
        answer.final_text = text
        answer.stripped = []
        answer.fallback = False
        answer.markers = []
        answer.normalized = []
        answer.truncated = False
        answer.rules_version = RULES_VERSION  # what audit_citations checks it against
        answer.status = Answer.Status.DONE
        answer.first_piece_ms = None
        answer.generation_ms = None
        answer.total_ms = total_ms
        answer.finished_at = timezone.now()
        answer.save(update_fields=_COMPLETED_FIELDS)
    metrics.answer_declined(answer)
    return answer


def store_source_outcomes(sources: list[AnswerSource], *, extra: tuple[str, ...] = ()) -> None:
    """Each source's SOURCE_OUTCOME_FIELDS (and the `extra` fields named), one UPDATE per row
    sent at once (executemany: one round trip on psycopg).

    bulk_update() would do it in one statement, but building its CASE WHEN
    expressions cost about a tenth of the server's CPU per answer under load
    (bench/bench_concurrency.py).
    """
    if not sources:
        return
    names = (*SOURCE_OUTCOME_FIELDS, *extra)
    fields = [field for field in AnswerSource._meta.concrete_fields if field.name in names]
    quote = connection.ops.quote_name
    sql = "UPDATE {} SET {} WHERE {} = %s".format(  # noqa: S608 (names from the model, values as parameters)
        quote(AnswerSource._meta.db_table),
        ", ".join(f"{quote(field.column)} = %s" for field in fields),
        quote(AnswerSource._meta.pk.column),
    )
    rows = [
        [field.get_db_prep_save(getattr(source, field.attname), connection) for field in fields] + [source.pk]
        for source in sources
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def answer_fail(
    *,
    answer_id: uuid.UUID,
    raw_text: str,
    kind: ErrorKind,
    message: str,
    truncated: bool,
    first_piece_ms: float | None,
    generation_ms: float,
    total_ms: float,
) -> Answer:
    """The answer as failed, with the raw text that arrived and why; AnswerDeleted if it is gone.

    In a transaction of its own: when the database refuses the text, the caller can still
    store the failure without it (in a test's transaction too: PostgreSQL aborts the whole
    transaction on an error outside a savepoint).
    """
    with transaction.atomic():
        updated = Answer.objects.filter(id=answer_id).update(
            status=Answer.Status.FAILED,
            raw_text=raw_text,
            error_kind=kind,
            error_message=message,
            truncated=truncated,
            first_piece_ms=first_piece_ms,
            generation_ms=generation_ms,
            total_ms=total_ms,
            finished_at=timezone.now(),
        )
    answer = Answer.objects.filter(id=answer_id).first() if updated else None
    if answer is None:
        raise AnswerDeleted(answer_id)
    metrics.answer_failed(answer)
    return answer


def answer_support(
    *,
    answer_id: uuid.UUID,
    record: dict[str, Any],
    dropped: Collection[int] | None = None,
    coverage: Mapping[str, Any] | None = None,
) -> bool:
    """Store a done answer's support record and the counts the admin filters on; False if not done.

    `dropped`: the original numbers of its dropped sources, when the caller has them (else read).
    `coverage`: its coverage record (answers.support.coverage), computed with it, and its flag.
    """
    if dropped is None:
        dropped = set(
            AnswerSource.objects.filter(answer_id=answer_id, status=AnswerSource.Status.DROPPED).values_list(
                "original_number", flat=True
            )
        )
    summary = summarize(record, dropped)
    updated = Answer.objects.filter(id=answer_id, status=Answer.Status.DONE).update(
        support=record,
        unsupported_count=summary.unsupported,
        grounded_uncited_count=summary.grounded_uncited,
        **(
            {}
            if coverage is None
            else {"coverage": dict(coverage), "may_not_address": bool(coverage.get("flag"))}
        ),
    )
    return bool(updated)


@dataclass(frozen=True)
class Reaped:
    """An answer the reaper failed, and the delivery path (Answer.Delivery) whose listeners to tell."""

    answer_id: uuid.UUID
    delivery: str


def answer_reap_stale(
    *, older_than: timedelta | None = None, clock: Callable[[], datetime] = timezone.now
) -> list[Reaped]:
    """Fail in-flight answers silent for `older_than` (ANSWERS_STALE_AFTER); return them, oldest first.

    A live process beats every few seconds (conf.HEARTBEAT_INTERVAL), so only
    answers whose process died, or whose loop was stuck that long, are reaped.
    Storage only: the caller tells each one's listeners through the publisher of its
    delivery (answers.reaper.reap_stale), since the process that ran that publisher is gone.
    `clock` is the time it reaps at (tests pass a fake clock's).
    """
    cutoff = clock() - (older_than if older_than is not None else timedelta(seconds=conf.STALE_AFTER))
    in_flight = [Answer.Status.PENDING, Answer.Status.STREAMING]
    stale = list(
        Answer.objects.filter(status__in=in_flight, heartbeat_at__lt=cutoff)
        .order_by("created_at")
        .values_list("id", "delivery", "provider", "origin")
    )
    reaped = []
    for answer_id, delivery, provider, origin in stale:
        updated = Answer.objects.filter(id=answer_id, status__in=in_flight, heartbeat_at__lt=cutoff).update(
            status=Answer.Status.FAILED,
            error_kind=ErrorKind.STALE,
            error_message=STALE_MESSAGE,
            finished_at=clock(),
        )
        if not updated:
            continue  # it finished, or beat, meanwhile
        reaped.append(Reaped(answer_id=answer_id, delivery=delivery))
        metrics.answer_finished(
            status=Answer.Status.FAILED, provider=provider, delivery=delivery, origin=origin
        )
    return reaped
