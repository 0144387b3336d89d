"""Steps 4-7 of an answer (flow.py runs steps 1-3, then these): stream the provider, finalize,
persist, publish `done` or `error`; or, for a declined answer, its one text. Whatever happens,
the answer ends `done` or `failed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from django.db import DatabaseError

from answers.conf import conf
from answers.failures import ErrorKind
from answers.models import Answer
from answers.pipeline import lifecycle, store, support
from answers.pipeline.publisher import Deltas, Publisher
from answers.pipeline.store import run_db
from answers.providers.base import Generation, Provider, ProviderError
from answers.providers.prompt import Prompt
from answers.providers.text import SurrogateJoiner, UnpairedSurrogate, join_surrogates, strip_controls

logger = logging.getLogger(__name__)

STORAGE_MESSAGE = "The answer could not be saved."


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
    """Stream the provider into the deltas; then store the finished answer, or fail it with what arrived."""
    progress = _Progress()
    deltas = publisher.deltas(started.answer_id, started.prompt.sources)
    fail = _Failure(started, publisher, deltas, progress)
    generation = Generation()
    try:
        await _stream(started, provider, generation, progress, deltas)
    except ProviderError as exc:
        return await fail(exc.kind, exc.message, raw_text=_kept_text(exc, progress), truncated=exc.truncated)
    except UnpairedSurrogate as exc:
        # Not text, so not storable: a malformed response, kept up to where it was still text.
        return await fail(ErrorKind.BAD_RESPONSE, str(exc))
    except asyncio.CancelledError:
        stopped = await _interrupted(fail)
        if stopped is None:
            raise
        return stopped
    except Exception:
        logger.exception("answer %s: generation failed", started.answer_id)
        return await fail(ErrorKind.INTERNAL, "Something went wrong while writing the answer.")
    return await _complete(started, publisher, generation, progress, fail)


async def _stream(
    started: Started, provider: Provider, generation: Generation, progress: _Progress, deltas: Deltas
) -> None:
    """The provider's pieces, cleaned and bounded, into `progress` and the deltas (then closed)."""
    # An emoji may arrive as two UTF-16 halves in two pieces: the pieces are joined into text.
    joiner = SurrogateJoiner()
    room = conf.MAX_ANSWER_CHARS
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
                logger.warning("answer %s: cut at %d characters", started.answer_id, conf.MAX_ANSWER_CHARS)
                generation.truncated = True
                break
    if room:
        joiner.close()  # when cut, a half character held back is simply past the cut
    await deltas.close()


def _kept_text(exc: ProviderError, progress: _Progress) -> str:
    """The raw text a failed generation keeps: the provider may have received more than it yielded;
    the longer text is kept (if it is text)."""
    partial = strip_controls(exc.partial_text)[: conf.MAX_ANSWER_CHARS]
    raw = partial if len(partial) > len(progress.text) else progress.text
    try:
        return join_surrogates(raw)
    except UnpairedSurrogate:
        return progress.text


async def _complete(
    started: Started, publisher: Publisher, generation: Generation, progress: _Progress, fail: _Failure
) -> Answer:
    """The finished answer finalized and stored, `done` published; or, when that fails, failed."""
    try:
        answer = await run_db(
            store.answer_complete,
            answer_id=started.answer_id,
            raw_text=progress.text,
            truncated=generation.truncated,
            quotes=_clean_quotes(generation.quotes),
            usage=generation.usage,
            native=generation.native,
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
    return await _finished(answer, publisher)


async def _finished(answer: Answer, publisher: Publisher) -> Answer:
    """A stored answer (done, or failed meanwhile): `done` published when it is done, then its support
    record computed off the answer's path."""
    if answer.status == Answer.Status.DONE:
        await publisher.done(answer)
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
        stopped = await _interrupted(fail)
        if stopped is None:
            raise
        return stopped
    except Exception:
        logger.exception("answer %s: storing the declined answer failed", started.answer_id)
        return await fail(ErrorKind.STORAGE, STORAGE_MESSAGE)
    return await _finished(answer, publisher)


async def _interrupted(fail: _Failure) -> Answer | None:
    """A generation cancelled, stored as failed. By the stopping server (`shutdown`): the failed answer,
    returned, so a JSON ask waiting for it still answers (503 with its id). By its caller (the client
    went away: `cancelled`): None, and the caller lets the cancellation go on."""
    if lifecycle.is_shutting_down():
        return await fail(ErrorKind.SHUTDOWN, "The server stopped before the answer was finished.")
    with contextlib.suppress(store.AnswerDeleted):
        await fail(ErrorKind.CANCELLED, "The answer was interrupted before it finished.")
    return None


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
