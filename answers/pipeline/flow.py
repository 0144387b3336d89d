"""The answer flow: retrieve, persist, publish, generate, finalize, persist, publish (then, off
the answer's path, its support record: answers.pipeline.support).

One `ask()` serves both delivery paths (JSON and SSE); they differ only in the
publisher passed in (answers.pipeline.publisher): whether events are published,
and whether generation goes on in the background or within the caller.
Nothing here knows about HTTP.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from asgiref.sync import sync_to_async
from django.db import DatabaseError

from answers import db
from answers.conf import conf
from answers.conversations.services import Asker, TurnPlan, turn_plan
from answers.models import Answer
from answers.pipeline import lifecycle, store, support
from answers.pipeline.publisher import Deltas, Publisher
from answers.pipeline.text import SurrogateJoiner, UnpairedSurrogate, join_surrogates
from answers.providers.base import ErrorKind, Generation, Provider, ProviderError
from answers.providers.prompt import Prompt, build_prompt
from answers.providers.registry import get_provider
from answers.retrieval.pipeline import retrieve
from answers.retrieval.types import Retrieval

if TYPE_CHECKING:  # a cycle: idempotency.py imports flow.py, which imports store.py
    from answers.pipeline.idempotency import Idempotency

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Retriever(Protocol):
    """Step 1; answers.retrieval.pipeline.retrieve by default (a seam for other retrieval strategies)."""

    def __call__(self, question: str, *, min_score: float, max_sources: int) -> Retrieval: ...


@dataclass(frozen=True)
class Started:
    """An answer that exists (with its sources) and is ready for generation."""

    answer: Answer  # as created: status streaming
    prompt: Prompt
    started_at: float  # time.monotonic() when the question arrived

    @property
    def answer_id(self) -> uuid.UUID:
        return self.answer.id


async def ask(
    *,
    question: str,
    asker_id: int | None,
    publisher: Publisher,
    provider: Provider | None = None,
    retriever: Retriever | None = None,
    idempotency: Idempotency | None = None,
    conversation_id: uuid.UUID | None = None,
    asker: Asker | None = None,
) -> Answer:
    """Answer a question. In the request (JSON): the finished (done or failed) answer, sources loaded.

    In the background (SSE): the answer as soon as it and its sources exist and
    `references` is published; generation goes on whether or not anyone listens.

    `idempotency` is stored with the answer: IntegrityError when another request
    created the answer for that key first (answers.pipeline.idempotency.ask_once replays it).

    `conversation_id`: ask a follow-up in that conversation (step 0: checked for `asker`, then the
    standalone question); without it the answer starts a new conversation. Raises
    answers.conversations.services.ConversationRefused for a follow-up that may not be asked.
    """
    provider = provider or get_provider()
    asker = asker or Asker(user_id=asker_id)
    plan = await turn_plan(question=question, conversation_id=conversation_id, asker=asker, provider=provider)
    # Steps 1-3 in one trip to a worker thread, which gives its database connection back after.
    # A burst of questions takes database connections a few at a time, each given back
    # before the provider writes: hundreds in flight never exceed max_connections.
    async with db.semaphore("pipeline", conf.PIPELINE_DB_WORKERS):
        started = await sync_to_async(db.releasing(_start))(
            question=question,
            asker_id=asker_id,
            publisher=publisher,
            provider=provider,
            retriever=retriever or retrieve,
            idempotency=idempotency,
            plan=plan,
        )
    return await _finish(started, provider=provider, publisher=publisher)


def _start(
    *,
    question: str,
    asker_id: int | None,
    publisher: Publisher,
    provider: Provider,
    retriever: Retriever,
    idempotency: Idempotency | None,
    plan: TurnPlan,
) -> Started:
    """Steps 1-3: retrieve, persist the answer and its sources, publish `references`."""
    started_at = time.monotonic()
    min_score, max_sources = conf.MIN_SCORE, conf.MAX_SOURCES
    # A follow-up retrieves on its standalone question; its prompt carries the marker-free history.
    retrieval = retriever(plan.standalone_question or question, min_score=min_score, max_sources=max_sources)
    retrieval_ms = (time.monotonic() - started_at) * 1000
    prompt = build_prompt(
        question,
        retrieval.sources,
        native_citations=provider.native_citations,
        history=plan.prompt_history(),
        standalone=plan.standalone_question,
    )
    answer = store.answer_create(
        question=question,
        asker_id=asker_id,
        delivery=publisher.delivery,
        provider=provider,
        prompt=prompt,
        retrieval=retrieval,
        min_score=min_score,
        max_sources=max_sources,
        retrieval_ms=retrieval_ms,
        idempotency=idempotency,
        plan=plan,
    )
    publisher.references(answer.id, retrieval.sources)
    return Started(answer=answer, prompt=prompt, started_at=started_at)


async def _finish(started: Started, *, provider: Provider, publisher: Publisher) -> Answer:
    """Steps 4-7, in the background (the answer as created is returned) or within the caller."""
    generation = generate(started=started, provider=provider, publisher=publisher)
    if publisher.background:
        # A task of its own, so a client that disconnects does not stop it; in a fresh context,
        # because the request's (asgiref's executor for its thread) ends with the 202.
        task = asyncio.get_running_loop().create_task(generation, context=contextvars.Context())
        lifecycle.track(started.answer_id, task)
        return started.answer
    # Within the request: a client that goes away cancels it, and the answer is stored as
    # failed (cancelled) with the text that arrived.
    current = asyncio.current_task()
    assert current is not None
    with lifecycle.tracking(started.answer_id, current):
        return await generation


async def run_db(fn: Callable[..., T], **kwargs: Any) -> T:
    """A pipeline step's database work: a few at a time per process, connection given back after."""
    return await db.run_db(fn, gate="pipeline", size=conf.PIPELINE_DB_WORKERS, **kwargs)


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


async def generate(*, started: Started, provider: Provider, publisher: Publisher) -> Answer:
    """Steps 4-7: stream the provider, finalize, persist the pair, publish `done` or `error`.

    Whatever happens, the answer ends `done` or `failed`, with the raw text
    received so far. While it runs, a heartbeat tells reap_stale_answers it is alive.
    """
    beat = asyncio.get_running_loop().create_task(_beat(started.answer_id))
    try:
        return await _generate(started=started, provider=provider, publisher=publisher)
    finally:
        beat.cancel()


async def _beat(answer_id: uuid.UUID) -> None:
    while True:
        await asyncio.sleep(conf.HEARTBEAT_INTERVAL)
        try:
            await run_db(store.heartbeat, answer_id=answer_id)
        except DatabaseError:
            logger.warning("answer %s: heartbeat not stored", answer_id, exc_info=True)


async def _generate(*, started: Started, provider: Provider, publisher: Publisher) -> Answer:
    progress = _Progress()
    deltas = publisher.deltas(started.answer_id, started.prompt.sources)
    fail = _Failure(started, publisher, deltas, progress)
    generation = Generation()
    # An emoji may arrive as two UTF-16 halves in two pieces: the pieces are joined into text.
    joiner = SurrogateJoiner()
    try:
        async for raw_piece in provider.stream(started.prompt, generation):
            piece = joiner.feed(raw_piece)
            if not piece:
                continue
            if progress.first_piece_ms is None:
                progress.first_piece_ms = progress.elapsed_ms
            progress.pieces.append(piece)
            await deltas.add(piece)
        joiner.close()
        await deltas.close()
    except ProviderError as exc:
        # The provider may have received more than it yielded; keep the longer text (if it is text).
        raw = exc.partial_text if len(exc.partial_text) > len(progress.text) else progress.text
        try:
            raw = join_surrogates(raw)
        except UnpairedSurrogate:
            raw = progress.text
        return await fail(exc.kind, exc.message, raw_text=raw, truncated=exc.truncated)
    except UnpairedSurrogate as exc:
        # Not text, so not storable: a malformed response, kept up to where it was still text.
        return await fail(ErrorKind.BAD_RESPONSE, str(exc))
    except asyncio.CancelledError:
        kind, message = (
            (ErrorKind.SHUTDOWN, "The server stopped before the answer was finished.")
            if lifecycle.is_shutting_down()
            else (ErrorKind.CANCELLED, "The answer was interrupted before it finished.")
        )
        await fail(kind, message)
        raise
    except Exception:
        logger.exception("answer %s: generation failed", started.answer_id)
        return await fail(ErrorKind.INTERNAL, "Something went wrong while writing the answer.")

    try:
        answer = await run_db(
            store.answer_complete,
            answer_id=started.answer_id,
            raw_text=progress.text,
            truncated=generation.truncated,
            quotes=generation.quotes,
            first_piece_ms=progress.first_piece_ms,
            generation_ms=progress.elapsed_ms,
            total_ms=(time.monotonic() - started.started_at) * 1000,
        )
    except (DatabaseError, ValueError):
        # The finalized pair could not be stored (ValueError: text a database driver cannot
        # encode, e.g. UnicodeEncodeError): keep what arrived, as a failed answer.
        logger.exception("answer %s: storing the finished answer failed", started.answer_id)
        return await fail(ErrorKind.STORAGE, "The answer could not be saved.")
    if answer.status == Answer.Status.DONE:
        await publisher.done(answer)
        # Stored and published: the support record is computed off the answer's path.
        support.start(answer)
    return answer


@dataclass(frozen=True)
class _Failure:
    """Ends a generation as failed: the deltas made whole, the answer stored, `error` published."""

    started: Started
    publisher: Publisher
    deltas: Deltas
    progress: _Progress

    async def __call__(
        self, kind: ErrorKind, message: str, *, raw_text: str | None = None, truncated: bool = False
    ) -> Answer:
        raw_text = self.progress.text if raw_text is None else raw_text
        # The deltas must still add up to the raw text that is kept.
        await self.deltas.close(final_text=raw_text)
        answer = await run_db(
            store.answer_fail,
            answer_id=self.started.answer_id,
            raw_text=raw_text,
            kind=kind,
            message=message,
            truncated=truncated,
            first_piece_ms=self.progress.first_piece_ms,
            generation_ms=self.progress.elapsed_ms,
            total_ms=(time.monotonic() - self.started.started_at) * 1000,
        )
        await self.publisher.error(answer.id, message)
        return answer
