"""The answer flow: retrieve, persist, publish, generate, finalize, persist, publish (then, off
the answer's path, its support record: answers.pipeline.support).

When no retrieved source reaches the threshold and ANSWERS_NO_SOURCES is `decline` (the
default), the answer is declined: the provider is never called (no request, no cost, nothing
to answer from), and the steps that would have generated publish ANSWERS_DECLINE_TEXT instead,
through the same publisher: `references` (empty), one delta with the text, `done` with
`declined` (docs/api.md).

One `ask()` serves both delivery paths (JSON and SSE); they differ only in the
publisher passed in (answers.pipeline.publisher): whether events are published,
and whether generation goes on in the background or within the caller.
Nothing here knows about HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from asgiref.sync import sync_to_async
from django.db import DatabaseError

from answers import db
from answers.conf import conf
from answers.conversations.services import Asker, TurnPlan, turn_plan
from answers.models import Answer
from answers.pipeline import lifecycle, store, support
from answers.pipeline.keys import Idempotency
from answers.pipeline.publisher import Deltas, Publisher
from answers.pipeline.text import SurrogateJoiner, UnpairedSurrogate, join_surrogates, strip_controls
from answers.providers.base import ErrorKind, Generation, Provider, ProviderError
from answers.providers.prompt import Prompt, build_prompt
from answers.providers.registry import get_provider
from answers.retrieval.access import Reader, reader_for_id
from answers.retrieval.pipeline import retrieve
from answers.retrieval.types import Retrieval

logger = logging.getLogger(__name__)

T = TypeVar("T")

STORAGE_MESSAGE = "The answer could not be saved."


class Retriever(Protocol):
    """Step 1; answers.retrieval.pipeline.retrieve by default (a seam for other retrieval strategies)."""

    def __call__(self, question: str, *, min_score: float, max_sources: int, reader: Reader) -> Retrieval: ...


@dataclass(frozen=True)
class Started:
    """An answer that exists (with its sources) and is ready for generation."""

    answer: Answer  # as created: status streaming
    prompt: Prompt
    started_at: float  # time.monotonic() when the question arrived
    declined: bool = False  # no source reached the threshold: the provider is not called

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
    # before the provider writes: hundreds in flight never exceed max_connections. Those
    # waiting their turn hold no thread either: the request's (started by its middleware) is
    # given back, and started again for the trip.
    db.release_request_thread()
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
    # Only what the asker may read is retrieved (docs/api.md, "Document access"); a follow-up
    # retrieves on its standalone question, and its prompt carries the marker-free history.
    reader = reader_for_id(asker_id)
    retrieval = retriever(
        plan.standalone_question or question, min_score=min_score, max_sources=max_sources, reader=reader
    )
    retrieval_ms = (time.monotonic() - started_at) * 1000
    declined = not retrieval.sources and conf.NO_SOURCES == "decline"
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
        declined=declined,
        plan=plan,
    )
    publisher.references(answer.id, retrieval.sources)
    return Started(answer=answer, prompt=prompt, started_at=started_at, declined=declined)


async def _finish(started: Started, *, provider: Provider, publisher: Publisher) -> Answer:
    """Steps 4-7, in the background (the answer as created is returned) or within the caller.

    Either way generation runs in a task of its own, tracked (answers.pipeline.lifecycle): a
    stopping server fails it as `shutdown` and its caller still answers (a JSON ask: 503 with
    the answer's id) instead of being cancelled with it.
    """
    loop = asyncio.get_running_loop()
    generation = (
        decline(started=started, publisher=publisher)
        if started.declined
        else generate(started=started, provider=provider, publisher=publisher)
    )
    if publisher.background:
        # A client that disconnects does not stop it; in a fresh context, because the request's
        # (asgiref's executor for its thread) ends with the 202.
        background = loop.create_task(_outliving_deletion(generation), context=contextvars.Context())
        lifecycle.track(started.answer_id, background)
        return started.answer
    # Within the request, which waits for it without a thread of its own: under the project's
    # handler (answers.handler) requests share a pool; under Django's stock one, the thread the
    # request was given is given back now (and started again for the response's synchronous
    # parts). The copied context keeps the request's executor, or a caller's own sync thread
    # (`async_to_sync(...)`: tests, management commands) for the generation's database work.
    task = loop.create_task(generation, context=contextvars.copy_context())
    lifecycle.track(started.answer_id, task)
    current = asyncio.current_task()
    assert current is not None
    lifecycle.responding(current)
    db.release_request_thread()
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if current.cancelling():
            # The client went away: the answer is stored as failed (cancelled) with the text that
            # arrived, before the request ends.
            task.cancel()
            await asyncio.wait([task])
        raise


async def _outliving_deletion(generation: Awaitable[Answer]) -> Answer | None:
    """A background generation: an answer deleted meanwhile ends it (its listeners told), quietly."""
    try:
        return await generation
    except store.AnswerDeleted as exc:
        logger.info("answer %s was deleted while it was being written", exc.answer_id)
        return None


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
    room = conf.MAX_ANSWER_CHARS
    try:
        # Past ANSWERS_MAX_ANSWER_CHARS the provider's stream is closed now, not when the
        # generator is collected.
        async with _closing(provider.stream(started.prompt, generation)) as stream:
            async for raw_piece in stream:
                # Control characters are removed before anything is published or stored.
                piece = strip_controls(joiner.feed(raw_piece))
                if not piece:
                    continue
                if len(piece) >= room:
                    piece = piece[:room]
                    room = 0
                else:
                    room -= len(piece)
                if progress.first_piece_ms is None:
                    progress.first_piece_ms = progress.elapsed_ms
                progress.pieces.append(piece)
                await deltas.add(piece)
                if room == 0:
                    # Past the bound the answer ends as if the model had hit its length limit.
                    logger.warning(
                        "answer %s: cut at %d characters", started.answer_id, conf.MAX_ANSWER_CHARS
                    )
                    generation.truncated = True
                    break
        if room:
            joiner.close()  # when cut, a half character held back is simply past the cut
        await deltas.close()
    except ProviderError as exc:
        # The provider may have received more than it yielded; keep the longer text (if it is text).
        partial = strip_controls(exc.partial_text)[: conf.MAX_ANSWER_CHARS]
        raw = partial if len(partial) > len(progress.text) else progress.text
        try:
            raw = join_surrogates(raw)
        except UnpairedSurrogate:
            raw = progress.text
        return await fail(exc.kind, exc.message, raw_text=raw, truncated=exc.truncated)
    except UnpairedSurrogate as exc:
        # Not text, so not storable: a malformed response, kept up to where it was still text.
        return await fail(ErrorKind.BAD_RESPONSE, str(exc))
    except asyncio.CancelledError:
        if lifecycle.is_shutting_down():
            # The stopping server cancelled it, not its caller: the failed answer is returned, so a
            # JSON ask waiting for it still answers (503 with its id).
            return await fail(ErrorKind.SHUTDOWN, "The server stopped before the answer was finished.")
        with contextlib.suppress(store.AnswerDeleted):
            await fail(ErrorKind.CANCELLED, "The answer was interrupted before it finished.")
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
            quotes=_clean_quotes(generation.quotes),
            first_piece_ms=progress.first_piece_ms,
            generation_ms=progress.elapsed_ms,
            total_ms=(time.monotonic() - started.started_at) * 1000,
        )
    except Answer.DoesNotExist:
        return await fail(ErrorKind.INTERNAL, store.DELETED_MESSAGE)  # raises AnswerDeleted
    except (DatabaseError, ValueError):
        # The finalized pair could not be stored (ValueError: text a database driver cannot
        # encode, e.g. UnicodeEncodeError): keep what arrived, as a failed answer.
        logger.exception("answer %s: storing the finished answer failed", started.answer_id)
        return await fail(ErrorKind.STORAGE, STORAGE_MESSAGE)
    except Exception:
        # Finalizing or rendering failed (a bug): the answer must still end, not stay `streaming`.
        logger.exception("answer %s: finishing the answer failed", started.answer_id)
        return await fail(ErrorKind.INTERNAL, "Something went wrong while finishing the answer.")
    if answer.status == Answer.Status.DONE:
        await publisher.done(answer)
        # Stored and published: the support record is computed off the answer's path.
        support.start(answer)
    return answer


async def decline(*, started: Started, publisher: Publisher) -> Answer:
    """Steps 4-7 of a declined answer: ANSWERS_DECLINE_TEXT published as its one delta and stored as
    its text, `done` published; no provider is called.

    Whatever happens, the answer ends `done` or `failed`, as a generated one does.
    """
    text = conf.DECLINE_TEXT
    progress = _Progress()
    deltas = publisher.deltas(started.answer_id, started.prompt.sources)
    fail = _Failure(started, publisher, deltas, progress)
    try:
        # The text, whole, as if a provider had written it: what the deltas add up to is the answer's text.
        progress.pieces.append(text)
        await deltas.add(text)
        await deltas.close()
        answer = await run_db(
            store.answer_decline,
            answer_id=started.answer_id,
            text=text,
            total_ms=(time.monotonic() - started.started_at) * 1000,
        )
    except asyncio.CancelledError:
        await fail(ErrorKind.CANCELLED, "The answer was interrupted before it finished.")
        raise
    except Exception:
        logger.exception("answer %s: storing the declined answer failed", started.answer_id)
        return await fail(ErrorKind.STORAGE, "The answer could not be saved.")
    if answer.status == Answer.Status.DONE:
        await publisher.done(answer)
        support.start(answer)
    return answer


@asynccontextmanager
async def _closing(pieces: AsyncIterator[str]) -> AsyncIterator[AsyncIterator[str]]:
    """`pieces`, closed on the way out when it can be (an async generator: its HTTP response)."""
    try:
        yield pieces
    finally:
        close = getattr(pieces, "aclose", None)
        if close is not None:
            await close()


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
        answer_id = self.started.answer_id
        # The deltas must still add up to the raw text that is kept.
        try:
            await self.deltas.close(final_text=raw_text)
        except Exception:
            # Events that cannot be stored must not keep the answer from ending.
            logger.exception("answer %s: the last deltas were not published", answer_id)
        try:
            try:
                answer = await self._store(kind, message, raw_text=raw_text, truncated=truncated)
            except (DatabaseError, ValueError):
                # The raw text itself may be what the database refuses: the answer still ends
                # failed (storage), without it, rather than `streaming` until a restart reaps it.
                logger.exception("answer %s: storing the failed answer with its text failed", answer_id)
                kind, message = ErrorKind.STORAGE, STORAGE_MESSAGE
                answer = await self._store(kind, message, raw_text="", truncated=truncated)
        except store.AnswerDeleted:
            # Deleted while it was written (in admin): nothing left to store, but its listeners
            # must still hear that it ended.
            await self.publisher.error(answer_id, store.DELETED_MESSAGE)
            raise
        await self.publisher.error(answer.id, message)
        return answer

    async def _store(self, kind: ErrorKind, message: str, *, raw_text: str, truncated: bool) -> Answer:
        return await run_db(
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


def _clean_quotes(quotes: dict[int, list[str]]) -> dict[int, list[str]]:
    """The provider's quotes without control characters (a `cited_text` is the model's text too)."""
    cleaned: dict[int, list[str]] = {}
    for number, passages in quotes.items():
        kept = [passage for passage in dict.fromkeys(map(strip_controls, passages)) if passage]
        if kept:
            cleaned[number] = kept
    return cleaned
