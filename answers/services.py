"""The answer pipeline: retrieve, persist, publish, generate, finalize, persist, publish.

One `ask()` serves both delivery paths (JSON and SSE); they differ only in
whether events are published and whether the caller waits for generation.
Nothing here knows about HTTP.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from asgiref.sync import sync_to_async
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from answers import db, events, selectors
from answers.citations.trail import compute_trail
from answers.conf import conf
from answers.models import Answer, AnswerSource
from answers.providers import get_provider
from answers.providers.base import Provider, ProviderError
from answers.providers.prompt import Prompt, build_prompt
from answers.retrieval import retrieve
from answers.retrieval.types import Retrieval, RetrievedSource

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Deltas are coalesced to one per interval: with `references` and `done`, an answer stores
# at most 10 events per second of generation (event storage cost; BENCHMARKS.md).
DELTA_INTERVAL_SECONDS = 0.15

INTERNAL_ERROR = "internal"
CANCELLED = "cancelled"
SHUTDOWN = "shutdown"
STORAGE_ERROR = "storage"
STALE = "stale"


class IdempotencyConflict(Exception):
    """An Idempotency-Key was used before for a different request."""

    def __init__(self, answer_id: uuid.UUID) -> None:
        super().__init__("This Idempotency-Key was already used for a different question.")
        self.answer_id = answer_id


@dataclass(frozen=True)
class Idempotency:
    """A client's Idempotency-Key, scoped to who asked (one user's keys never meet another's)."""

    key: str
    scope: str

    @classmethod
    def for_asker(cls, key: str, asker_id: int | None) -> Idempotency:
        return cls(key=key, scope=f"user:{asker_id}" if asker_id is not None else "anonymous")


class Retriever(Protocol):
    """Step 1; answers.retrieval.retrieve by default (a seam for other retrieval strategies)."""

    def __call__(self, question: str, *, min_score: float, max_sources: int) -> Retrieval: ...


@dataclass(frozen=True)
class Started:
    """An answer that exists (with its sources) and is ready for generation."""

    answer: Answer  # as created: status streaming
    prompt: Prompt
    publish: bool
    started_at: float  # time.monotonic() when the question arrived

    @property
    def answer_id(self) -> uuid.UUID:
        return self.answer.id


# Every generation in flight in this process, by answer: kept referenced so the event
# loop cannot drop them, awaited by idempotent retries, finished or failed on shutdown.
_in_flight: dict[uuid.UUID, asyncio.Task[Answer]] = {}
_shutting_down = False


async def ask(
    *,
    question: str,
    asker_id: int | None,
    delivery: str,
    provider: Provider | None = None,
    retriever: Retriever | None = None,
    idempotency: Idempotency | None = None,
) -> Answer:
    """Answer a question. JSON: returns the finished (done or failed) answer, sources loaded.

    SSE: returns as soon as the answer and its sources exist and the
    `references` event is published; generation goes on in the background
    whether or not anyone listens.

    With `idempotency`, a retried request gets the answer its first attempt
    created (waiting for it to finish on the JSON path) instead of a second one;
    the returned answer then has `replayed = True`.
    """
    if idempotency is not None:
        existing = await sync_to_async(_answer_for_key)(idempotency)
        if existing is not None:
            return await _replay(existing, question=question, delivery=delivery)
    provider = provider or get_provider()
    try:
        # A burst of questions takes database connections a few at a time, each given back
        # before the provider writes: hundreds in flight never exceed max_connections.
        async with db.semaphore("pipeline", conf.PIPELINE_DB_WORKERS):
            started = await answer_start(
                question=question,
                asker_id=asker_id,
                delivery=delivery,
                provider=provider,
                retriever=retriever,
                idempotency=idempotency,
            )
    except IntegrityError:
        # A concurrent retry with the same key created the answer first.
        existing = await sync_to_async(_answer_for_key)(idempotency) if idempotency else None
        if existing is None:
            raise
        return await _replay(existing, question=question, delivery=delivery)
    generation = answer_generate(started=started, provider=provider)
    if delivery == Answer.Delivery.SSE:
        # A task of its own, so a client that disconnects does not stop it; in a fresh context,
        # because the request's (asgiref's executor for its thread) ends with the 202.
        task = asyncio.get_running_loop().create_task(generation, context=contextvars.Context())
        _in_flight[started.answer_id] = task
        task.add_done_callback(lambda _: _in_flight.pop(started.answer_id, None))
        return started.answer
    # The JSON path generates within the request: a client that goes away cancels it, and the
    # answer is stored as failed (cancelled) with the text that arrived.
    current = asyncio.current_task()
    assert current is not None
    _in_flight[started.answer_id] = current
    try:
        return await generation
    finally:
        _in_flight.pop(started.answer_id, None)


async def run_db(fn: Callable[..., T], **kwargs: Any) -> T:
    """A pipeline step's database work: a few at a time per process, connection given back after."""
    return await db.run_db(fn, gate="pipeline", size=conf.PIPELINE_DB_WORKERS, **kwargs)


def _answer_for_key(idempotency: Idempotency) -> Answer | None:
    return Answer.objects.filter(idempotency_scope=idempotency.scope, idempotency_key=idempotency.key).first()


async def _replay(existing: Answer, *, question: str, delivery: str) -> Answer:
    """The first attempt's answer, for a retry: finished first on the JSON path."""
    if existing.question != question or existing.delivery != delivery:
        raise IdempotencyConflict(existing.id)
    answer = existing
    if delivery == Answer.Delivery.JSON:
        answer = await _wait_finished(existing)
    answer.replayed = True  # type: ignore[attr-defined]
    return answer


async def _wait_finished(answer: Answer) -> Answer:
    """Wait for an in-flight answer: its task when this process runs it, else the database."""
    deadline = time.monotonic() + conf.PROVIDER_TIMEOUT + conf.STALE_AFTER
    while answer.status in (Answer.Status.PENDING, Answer.Status.STREAMING) and time.monotonic() < deadline:
        task = _in_flight.get(answer.id)
        if task is not None:
            await asyncio.wait([task], timeout=max(0.0, deadline - time.monotonic()))
        else:
            await asyncio.sleep(0.2)
        answer = await sync_to_async(Answer.objects.get)(id=answer.id)
    # As the JSON path returns an answer: with its sources.
    return await run_db(selectors.answer_trail_get, answer_id=answer.id) or answer


async def wait_for_background() -> None:
    """Wait for every generation in flight in this process (tests)."""
    while _in_flight:
        await asyncio.gather(*list(_in_flight.values()), return_exceptions=True)


def is_shutting_down() -> bool:
    return _shutting_down


def begin_shutdown() -> None:
    """From now on, interrupted answers are failed as `shutdown`, and /healthz says 503."""
    global _shutting_down
    _shutting_down = True


async def shutdown(*, grace: float) -> list[uuid.UUID]:
    """Let in-flight answers finish within `grace` seconds, then fail the rest (stored and published).

    Returns the ids of the answers it had to fail.
    """
    begin_shutdown()
    pending = set(_in_flight.values())
    if pending:
        logger.info("shutdown: waiting up to %.1f s for %d answer(s) in flight", grace, len(pending))
        _, pending = await asyncio.wait(pending, timeout=grace)
    interrupted = [answer_id for answer_id, task in list(_in_flight.items()) if task in pending]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
        logger.warning("shutdown: %d answer(s) did not finish in time and were marked failed", len(pending))
    return interrupted


async def answer_start(
    *,
    question: str,
    asker_id: int | None,
    delivery: str,
    provider: Provider,
    retriever: Retriever | None = None,
    idempotency: Idempotency | None = None,
) -> Started:
    """Steps 1-3: retrieve, persist the answer and its sources, publish `references` (SSE).

    One trip to a worker thread for all three, which gives its database connection back after.
    """
    return await sync_to_async(db.releasing(_start))(
        question=question,
        asker_id=asker_id,
        delivery=delivery,
        provider=provider,
        retriever=retriever or retrieve,
        idempotency=idempotency,
    )


def _start(
    *,
    question: str,
    asker_id: int | None,
    delivery: str,
    provider: Provider,
    retriever: Retriever,
    idempotency: Idempotency | None,
) -> Started:
    started_at = time.monotonic()
    min_score, max_sources = conf.MIN_SCORE, conf.MAX_SOURCES
    retrieval = retriever(question, min_score=min_score, max_sources=max_sources)
    retrieval_ms = (time.monotonic() - started_at) * 1000
    prompt = build_prompt(question, retrieval.sources)
    answer = _answer_create(
        question=question,
        asker_id=asker_id,
        delivery=delivery,
        provider=provider,
        prompt=prompt,
        retrieval=retrieval,
        min_score=min_score,
        max_sources=max_sources,
        retrieval_ms=retrieval_ms,
        idempotency=idempotency,
    )
    publish = delivery == Answer.Delivery.SSE
    if publish:
        events.publish_references(answer.id, retrieval.sources)
    return Started(answer=answer, prompt=prompt, publish=publish, started_at=started_at)


def _answer_create(
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
) -> Answer:
    now = timezone.now()
    with transaction.atomic():
        answer = Answer.objects.create(
            question=question,
            asker_id=asker_id,
            delivery=delivery,
            status=Answer.Status.STREAMING,
            provider=provider.name,
            model=provider.model,
            prompt_version=prompt.version,
            min_score=min_score,
            max_sources=max_sources,
            retrieval_trace=retrieval.trace,
            retrieval_ms=retrieval_ms,
            heartbeat_at=now,
            idempotency_key=idempotency.key if idempotency else "",
            idempotency_scope=idempotency.scope if idempotency else "",
        )
        AnswerSource.objects.bulk_create([_source_row(answer, source) for source in retrieval.sources])
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


@dataclass
class _Progress:
    """What generation has produced so far: kept whether it ends well or not."""

    started_at: float = field(default_factory=time.monotonic)
    pieces: list[str] = field(default_factory=list)
    first_piece_ms: float | None = None

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started_at) * 1000


async def answer_generate(*, started: Started, provider: Provider) -> Answer:
    """Steps 4-7: stream the provider, finalize, persist the pair, publish `done` or `error`.

    Whatever happens, the answer ends `done` or `failed`, with the raw text
    received so far. While it runs, a heartbeat tells reap_stale_answers it is alive.
    """
    beat = asyncio.get_running_loop().create_task(_beat(started.answer_id))
    try:
        return await _generate(started=started, provider=provider)
    finally:
        beat.cancel()


async def _beat(answer_id: uuid.UUID) -> None:
    while True:
        await asyncio.sleep(conf.HEARTBEAT_INTERVAL)
        try:
            await run_db(_heartbeat, answer_id=answer_id)
        except DatabaseError:
            logger.warning("answer %s: heartbeat not stored", answer_id, exc_info=True)


async def _generate(*, started: Started, provider: Provider) -> Answer:
    progress = _Progress()
    deltas = _DeltaPublisher(started.answer_id) if started.publish else None
    try:
        async for piece in provider.stream(started.prompt):
            if not piece:
                continue
            if progress.first_piece_ms is None:
                progress.first_piece_ms = progress.elapsed_ms
            progress.pieces.append(piece)
            if deltas is not None:
                await deltas.add(piece)
        if deltas is not None:
            await deltas.close()
    except ProviderError as exc:
        # The provider may have received more than it yielded; keep the longer text.
        raw = exc.partial_text if len(exc.partial_text) > len(progress.text) else progress.text
        return await _fail(
            started, deltas, progress, exc.kind, exc.message, raw_text=raw, truncated=exc.truncated
        )
    except asyncio.CancelledError:
        kind, message = (
            (SHUTDOWN, "The server stopped before the answer was finished.")
            if _shutting_down
            else (CANCELLED, "The answer was interrupted before it finished.")
        )
        await _fail(started, deltas, progress, kind, message)
        raise
    except Exception:
        logger.exception("answer %s: generation failed", started.answer_id)
        return await _fail(
            started, deltas, progress, INTERNAL_ERROR, "Something went wrong while writing the answer."
        )

    try:
        answer = await run_db(
            _answer_complete,
            answer_id=started.answer_id,
            raw_text=progress.text,
            first_piece_ms=progress.first_piece_ms,
            generation_ms=progress.elapsed_ms,
            total_ms=(time.monotonic() - started.started_at) * 1000,
        )
    except DatabaseError:
        # The finalized pair could not be stored: keep what arrived, as a failed answer.
        logger.exception("answer %s: storing the finished answer failed", started.answer_id)
        return await _fail(started, deltas, progress, STORAGE_ERROR, "The answer could not be saved.")
    if started.publish and answer.status == Answer.Status.DONE:
        await sync_to_async(events.publish_done)(answer)
    return answer


def _heartbeat(answer_id: uuid.UUID) -> None:
    Answer.objects.filter(id=answer_id, status=Answer.Status.STREAMING).update(heartbeat_at=timezone.now())


def _answer_complete(
    *,
    answer_id: uuid.UUID,
    raw_text: str,
    first_piece_ms: float | None,
    generation_ms: float,
    total_ms: float,
) -> Answer:
    """Step 5-6: strip, finalize and persist the pair and every source's outcome at once.

    Returns the answer with its sources loaded (selectors.with_sources()).
    """
    with transaction.atomic():
        locked = Answer.objects.select_for_update().prefetch_related(selectors.with_sources())
        answer = locked.get(id=answer_id)
        if answer.status != Answer.Status.STREAMING:
            return answer  # failed meanwhile (reaped as stale): that verdict was already published
        sources = {s.original_number: s for s in answer.sources.all()}
        trail = compute_trail(raw_text, len(sources))
        answer.raw_text = raw_text
        answer.final_text = trail.final_text
        answer.stripped = trail.stripped
        answer.fallback = trail.fallback
        answer.status = Answer.Status.DONE
        answer.first_piece_ms = first_piece_ms
        answer.generation_ms = generation_ms
        answer.total_ms = total_ms
        answer.finished_at = timezone.now()
        answer.save(update_fields=_COMPLETED_FIELDS)
        for outcome in trail.sources:
            source = sources[outcome.original_number]
            source.final_number = outcome.final_number
            source.status = outcome.status
            source.citation_count = outcome.citation_count
            source.first_cited_offset = outcome.first_cited_offset
        _store_outcomes(list(sources.values()))
    return answer


_COMPLETED_FIELDS = [
    "raw_text",
    "final_text",
    "stripped",
    "fallback",
    "status",
    "first_piece_ms",
    "generation_ms",
    "total_ms",
    "finished_at",
]
_OUTCOME_FIELDS = ["final_number", "status", "citation_count", "first_cited_offset"]


def _store_outcomes(sources: list[AnswerSource]) -> None:
    """Each source's outcome, one UPDATE per row sent at once (executemany: one round trip on psycopg).

    bulk_update() would do it in one statement, but building its CASE WHEN
    expressions cost about a tenth of the server's CPU per answer under load
    (bench/bench_concurrency.py).
    """
    if not sources:
        return
    fields = [field for field in AnswerSource._meta.concrete_fields if field.name in _OUTCOME_FIELDS]
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


async def _fail(
    started: Started,
    deltas: _DeltaPublisher | None,
    progress: _Progress,
    kind: str,
    message: str,
    *,
    raw_text: str | None = None,
    truncated: bool = False,
) -> Answer:
    raw_text = progress.text if raw_text is None else raw_text
    if deltas is not None:
        # The deltas must still add up to the raw text that is kept.
        await deltas.close(final_text=raw_text)
    answer = await run_db(
        _answer_fail,
        answer_id=started.answer_id,
        raw_text=raw_text,
        kind=kind,
        message=message,
        truncated=truncated,
        first_piece_ms=progress.first_piece_ms,
        generation_ms=progress.elapsed_ms,
        total_ms=(time.monotonic() - started.started_at) * 1000,
    )
    if started.publish:
        await sync_to_async(events.publish_error)(answer.id, message)
    return answer


def _answer_fail(
    *,
    answer_id: uuid.UUID,
    raw_text: str,
    kind: str,
    message: str,
    truncated: bool,
    first_piece_ms: float | None,
    generation_ms: float,
    total_ms: float,
) -> Answer:
    Answer.objects.filter(id=answer_id).update(
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
    return Answer.objects.get(id=answer_id)


class _DeltaPublisher:
    """Coalesces provider pieces into at most ~10 `delta` events a second.

    The concatenation of the published deltas is exactly the raw text.
    """

    def __init__(
        self,
        answer_id: uuid.UUID,
        *,
        interval: float = DELTA_INTERVAL_SECONDS,
        send: Callable[[uuid.UUID, str], Awaitable[Any]] | None = None,
    ) -> None:
        self._answer_id = answer_id
        self._interval = interval
        self._send = send or sync_to_async(events.publish_delta)
        self._pending: list[str] = []
        self._sent_chars = 0
        self._last_sent = 0.0
        self._timer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def add(self, piece: str) -> None:
        self._pending.append(piece)
        wait = self._last_sent + self._interval - time.monotonic()
        if wait <= 0:
            await self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().create_task(self._flush_later(wait))

    async def _flush_later(self, wait: float) -> None:
        await asyncio.sleep(wait)
        self._timer = None
        await self._flush()

    async def _flush(self) -> None:
        async with self._lock:
            if not self._pending:
                return
            text = "".join(self._pending)
            self._pending.clear()
            self._last_sent = time.monotonic()
            self._sent_chars += len(text)
            await self._send(self._answer_id, text)

    async def close(self, final_text: str | None = None) -> None:
        """Publish whatever is pending; with `final_text`, publish what it adds beyond the sent text."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if final_text is not None:
            async with self._lock:
                self._pending = [final_text[self._sent_chars :]] if len(final_text) > self._sent_chars else []
        await self._flush()


def answer_reap_stale(*, older_than: timedelta | None = None) -> list[uuid.UUID]:
    """Fail in-flight answers silent for `older_than` (ANSWERS_STALE_AFTER); tell their listeners.

    A live process beats every few seconds (conf.HEARTBEAT_INTERVAL), so only
    answers whose process died, or whose loop was stuck that long, are reaped.
    """
    cutoff = timezone.now() - (older_than if older_than is not None else timedelta(seconds=conf.STALE_AFTER))
    in_flight = [Answer.Status.PENDING, Answer.Status.STREAMING]
    stale = list(
        Answer.objects.filter(status__in=in_flight, heartbeat_at__lt=cutoff)
        .order_by("created_at")
        .values_list("id", "delivery")
    )
    message = "The answer was interrupted: the server writing it stopped."
    reaped = []
    for answer_id, delivery in stale:
        updated = Answer.objects.filter(id=answer_id, status__in=in_flight, heartbeat_at__lt=cutoff).update(
            status=Answer.Status.FAILED, error_kind=STALE, error_message=message, finished_at=timezone.now()
        )
        if not updated:
            continue  # it finished, or beat, meanwhile
        reaped.append(answer_id)
        if delivery == Answer.Delivery.SSE:
            events.publish_error(answer_id, message)
    return reaped
