"""A run: every item of a set asked through the pipeline a reader's question takes, N at a time.

Each item is one answers.pipeline.flow.ask() with the JSON path's publisher (it publishes nothing and
generates within the caller), `origin="evaluation"`, as an anonymous reader unless an asker is named;
its support record is awaited before its result is measured (answers.evaluation.measure, from what
was stored) and stored. A stop request (Ctrl-C) stops asking: the items in flight are cancelled (their
answers stored as failed, as a reader's who went away), the results already stored are kept, and the
run ends `cancelled`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from asgiref.sync import sync_to_async

from answers import db
from answers.citations import RULES_VERSION
from answers.conf import conf
from answers.evaluation import selectors, services
from answers.evaluation.measure import item_data
from answers.models import Answer, EvaluationItem, EvaluationRun
from answers.pipeline import flow, lifecycle
from answers.pipeline.publisher import JSON
from answers.providers.base import Provider
from answers.providers.prompt import NATIVE_PROMPT_VERSION, PROMPT_VERSION
from answers.retrieval.fusion import RRF_K

logger = logging.getLogger(__name__)

DEFAULT_CONCURRENCY = 4


class Stop:
    """A stop request, safe to make from a signal handler or another thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requested = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None

    @property
    def requested(self) -> bool:
        return self._requested

    def request(self) -> None:
        with self._lock:
            self._requested = True
            if self._loop is not None and self._event is not None:
                self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self) -> None:
        with self._lock:
            self._loop = asyncio.get_running_loop()
            self._event = asyncio.Event()
            if self._requested:
                self._event.set()
        await self._event.wait()


def run_settings(provider: Provider, *, asker: str | None, concurrency: int) -> dict[str, Any]:
    """What a run ran under: its snapshot in EvaluationRun.settings."""
    return {
        "provider": provider.name,
        "model": provider.model,
        "prompt_version": NATIVE_PROMPT_VERSION if provider.native_citations else PROMPT_VERSION,
        "rules_version": RULES_VERSION,
        "min_score": conf.MIN_SCORE,
        "max_sources": conf.MAX_SOURCES,
        "no_sources": conf.NO_SOURCES,
        "reranker": conf.RERANKER,
        "dense": conf.EMBEDDINGS != "none",
        # Lexical and dense rankings are fused by reciprocal rank (answers.retrieval.fusion): k is
        # the only weight there is.
        "dense_fusion_k": RRF_K,
        "embedding_model": conf.EMBEDDING_MODEL if conf.EMBEDDINGS != "none" else "",
        "support_method": conf.SUPPORT_METHOD,
        "support_min_score": conf.SUPPORT_MIN,
        "marker_dialects": list(conf.MARKER_DIALECTS),
        "asker": asker,
        "concurrency": concurrency,
    }


async def run_items(
    run: EvaluationRun,
    items: Sequence[EvaluationItem],
    *,
    provider: Provider,
    asker_id: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    threads: int = 0,
    stop: Stop | None = None,
    on_result: Callable[[Mapping[str, Any]], None] | None = None,
) -> EvaluationRun:
    """Ask every item (`concurrency` at once), store each result, and end the run: `done`, or `cancelled`
    when `stop` was requested first. Returns the run with its metrics.

    `threads`: each item's synchronous work (retrieval, storage, measuring) on a pool of that many
    threads, as a server's requests' (answers.db.pooled_context); 0 keeps it on the caller's thread,
    which a caller inside a transaction needs (a test's: other threads would not see its rows).
    """
    stop = stop or Stop()
    keys = {key for item in items for key in item.expected_documents}
    canonical = await sync_to_async(selectors.canonical_keys)(keys)
    one = _Item(run, provider=provider, asker_id=asker_id, canonical=canonical, threads=threads)
    pending = list(reversed(items))
    measuring: list[asyncio.Task[None]] = []

    async def worker() -> None:
        # A slot is an ask: once the answer is stored the next item is asked, while this one's
        # support record and result follow (they hold no slot, so slow records never idle the
        # provider's N slots, nor lock the slots into waves that wait together).
        while pending and not stop.requested:
            item = pending.pop()
            answer_id, error = await one.ask(item)
            measuring.append(asyncio.create_task(one.measure(item, answer_id, error, on_result)))

    count = max(1, min(concurrency, len(items)))
    workers: asyncio.Future[Any] = asyncio.gather(*(worker() for _ in range(count)))
    stopper: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([workers, stopper], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
        workers.cancel()  # nothing when they are done; else the items in flight (a stop request)
        # The items asked to the end are measured and kept, even on a stop request.
        await asyncio.gather(workers, *measuring, return_exceptions=True)
    return await sync_to_async(services.run_finish)(run, _ended(workers, stop))


def _ended(workers: asyncio.Future[Any], stop: Stop) -> str:
    """How the run ended: cancelled on request, failed when a worker raised, else done."""
    if stop.requested:
        return EvaluationRun.Status.CANCELLED
    error = None if workers.cancelled() else workers.exception()
    if workers.cancelled() or error is not None:
        logger.error("evaluation run failed", exc_info=error)
        return EvaluationRun.Status.FAILED
    return EvaluationRun.Status.DONE


class _Item:
    """Asking one item, then measuring and storing its result, for one run."""

    def __init__(
        self,
        run: EvaluationRun,
        *,
        provider: Provider,
        asker_id: int | None,
        canonical: Mapping[str, str],
        threads: int,
    ) -> None:
        self.run, self.provider, self.asker_id = run, provider, asker_id
        self.canonical, self.threads = canonical, threads

    def _context(self) -> contextlib.AbstractAsyncContextManager[None]:
        return db.pooled_context("evaluation", self.threads) if self.threads else contextlib.nullcontext()

    async def ask(self, item: EvaluationItem) -> tuple[uuid.UUID | None, str]:
        """The stored answer's id, or None and why the pipeline stored none (the run goes on)."""
        try:
            async with self._context():
                answer = await flow.ask(
                    question=item.question,
                    asker_id=self.asker_id,
                    publisher=JSON,
                    provider=self.provider,
                    origin=Answer.Origin.EVALUATION,
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.exception("evaluation run %s: asking %r failed", self.run.pk, item.question)
            return None, f"{type(exc).__name__}: {exc}"
        return answer.id, ""

    async def measure(
        self,
        item: EvaluationItem,
        answer_id: uuid.UUID | None,
        error: str,
        on_result: Callable[[Mapping[str, Any]], None] | None,
    ) -> None:
        """Once its support record is stored: the item's data, from what was stored, and its result."""
        support = lifecycle.after_done(answer_id) if answer_id is not None else None
        if support is not None:
            await support
        async with self._context():
            stored = await sync_to_async(selectors.stored_answer)(answer_id) if answer_id else None
            data = item_data(selectors.item_spec(item), stored, canonical=self.canonical, error=error)
            await sync_to_async(services.result_store)(self.run, item, answer_id=answer_id, data=data)
        if on_result is not None:
            on_result(data)
