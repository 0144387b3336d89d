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
from typing import Any, Protocol

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone

from answers import events
from answers.conf import conf
from answers.models import Answer, AnswerSource
from answers.providers import get_provider
from answers.providers.base import Provider, ProviderError
from answers.providers.prompt import Prompt, build_prompt
from answers.retrieval import retrieve
from answers.retrieval.types import Retrieval, RetrievedSource
from answers.trail import compute_trail

logger = logging.getLogger(__name__)

# How often the in-flight answer proves it is alive (reap_stale_answers reads it).
HEARTBEAT_SECONDS = 5.0
# At most this many delta events per second per answer (event storage cost).
DELTA_INTERVAL_SECONDS = 0.1

INTERNAL_ERROR = "internal"
CANCELLED = "cancelled"


class Retriever(Protocol):
    """Step 1; answers.retrieval.retrieve by default (a seam for other retrieval strategies)."""

    def __call__(self, question: str, *, min_score: float, max_sources: int) -> Retrieval: ...


@dataclass(frozen=True)
class Started:
    """An answer that exists (with its sources) and is ready for generation."""

    answer_id: uuid.UUID
    prompt: Prompt
    publish: bool
    started_at: float  # time.monotonic() when the question arrived


# Background generations are kept referenced so the event loop cannot drop them.
_background: set[asyncio.Task[Answer]] = set()


async def ask(
    *,
    question: str,
    asker_id: int | None,
    delivery: str,
    provider: Provider | None = None,
    retriever: Retriever | None = None,
) -> Answer:
    """Answer a question. JSON: returns the finished (done or failed) answer.

    SSE: returns as soon as the answer and its sources exist and the
    `references` event is published; generation goes on in the background
    whether or not anyone listens.
    """
    provider = provider or get_provider()
    started = await answer_start(
        question=question, asker_id=asker_id, delivery=delivery, provider=provider, retriever=retriever
    )
    generation = answer_generate(started=started, provider=provider)
    if delivery == Answer.Delivery.SSE:
        # A fresh context: the request's own (asgiref's executor for its thread, when a sync
        # middleware wrapped the view) is gone once the 202 is sent, and the task outlives it.
        task = asyncio.get_running_loop().create_task(generation, context=contextvars.Context())
        _background.add(task)
        task.add_done_callback(_background.discard)
        return await sync_to_async(Answer.objects.get)(id=started.answer_id)
    return await generation


async def wait_for_background() -> None:
    """Wait for every background generation started in this process (tests, shutdown)."""
    while _background:
        await asyncio.gather(*list(_background), return_exceptions=True)


async def answer_start(
    *,
    question: str,
    asker_id: int | None,
    delivery: str,
    provider: Provider,
    retriever: Retriever | None = None,
) -> Started:
    """Steps 1-3: retrieve, persist the answer and its sources, publish `references` (SSE)."""
    started_at = time.monotonic()
    min_score, max_sources = conf.MIN_SCORE, conf.MAX_SOURCES
    retriever = retriever or retrieve
    retrieval = await sync_to_async(retriever)(question, min_score=min_score, max_sources=max_sources)
    retrieval_ms = (time.monotonic() - started_at) * 1000
    prompt = build_prompt(question, retrieval.sources)
    answer = await sync_to_async(_answer_create)(
        question=question,
        asker_id=asker_id,
        delivery=delivery,
        provider=provider,
        prompt=prompt,
        retrieval=retrieval,
        min_score=min_score,
        max_sources=max_sources,
        retrieval_ms=retrieval_ms,
    )
    publish = delivery == Answer.Delivery.SSE
    if publish:
        await sync_to_async(events.publish_references)(answer.id, retrieval.sources)
    return Started(answer_id=answer.id, prompt=prompt, publish=publish, started_at=started_at)


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
    received so far.
    """
    progress = _Progress()
    deltas = _DeltaPublisher(started.answer_id) if started.publish else None
    last_heartbeat = progress.started_at
    try:
        async for piece in provider.stream(started.prompt):
            if not piece:
                continue
            if progress.first_piece_ms is None:
                progress.first_piece_ms = progress.elapsed_ms
            progress.pieces.append(piece)
            if deltas is not None:
                await deltas.add(piece)
            if time.monotonic() - last_heartbeat >= HEARTBEAT_SECONDS:
                last_heartbeat = time.monotonic()
                await sync_to_async(_heartbeat)(started.answer_id)
        if deltas is not None:
            await deltas.close()
    except ProviderError as exc:
        # The provider may have received more than it yielded; keep the longer text.
        raw = exc.partial_text if len(exc.partial_text) > len(progress.text) else progress.text
        return await _fail(
            started, deltas, progress, exc.kind, exc.message, raw_text=raw, truncated=exc.truncated
        )
    except asyncio.CancelledError:
        await _fail(started, deltas, progress, CANCELLED, "The answer was interrupted before it finished.")
        raise
    except Exception:
        logger.exception("answer %s: generation failed", started.answer_id)
        return await _fail(
            started, deltas, progress, INTERNAL_ERROR, "Something went wrong while writing the answer."
        )

    answer = await sync_to_async(_answer_complete)(
        answer_id=started.answer_id,
        raw_text=progress.text,
        first_piece_ms=progress.first_piece_ms,
        generation_ms=progress.elapsed_ms,
        total_ms=(time.monotonic() - started.started_at) * 1000,
    )
    if started.publish:
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
    """Step 5-6: strip, finalize and persist the pair and every source's outcome at once."""
    with transaction.atomic():
        answer = Answer.objects.select_for_update().get(id=answer_id)
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
        answer.save()
        for outcome in trail.sources:
            source = sources[outcome.original_number]
            source.final_number = outcome.final_number
            source.status = outcome.status
            source.citation_count = outcome.citation_count
            source.first_cited_offset = outcome.first_cited_offset
        AnswerSource.objects.bulk_update(
            sources.values(), ["final_number", "status", "citation_count", "first_cited_offset"]
        )
    return answer


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
    answer = await sync_to_async(_answer_fail)(
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


def answer_reap_stale(*, older_than: timedelta) -> list[uuid.UUID]:
    """Mark answers whose process stopped beating as failed, and tell their listeners."""
    cutoff = timezone.now() - older_than
    stale = list(
        Answer.objects.filter(
            status__in=[Answer.Status.PENDING, Answer.Status.STREAMING], heartbeat_at__lt=cutoff
        ).values_list("id", flat=True)
    )
    message = "The answer was interrupted: the server writing it stopped."
    for answer_id in stale:
        updated = Answer.objects.filter(
            id=answer_id, status__in=[Answer.Status.PENDING, Answer.Status.STREAMING]
        ).update(
            status=Answer.Status.FAILED,
            error_kind="stale",
            error_message=message,
            finished_at=timezone.now(),
        )
        if updated and Answer.objects.filter(id=answer_id, delivery=Answer.Delivery.SSE).exists():
            events.publish_error(answer_id, message)
    return stale
