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
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from asgiref.sync import sync_to_async

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
    stop: Stop | None = None,
    on_result: Callable[[Mapping[str, Any]], None] | None = None,
) -> EvaluationRun:
    """Ask every item (`concurrency` at once), store each result, and end the run: `done`, or `cancelled`
    when `stop` was requested first. Returns the run with its metrics."""
    stop = stop or Stop()
    keys = {key for item in items for key in item.expected_documents}
    canonical = await sync_to_async(selectors.canonical_keys)(keys)
    pending = list(reversed(items))
    supports: list[asyncio.Future[Any]] = []

    async def worker() -> None:
        while pending and not stop.requested:
            data = await _ask(
                run,
                pending.pop(),
                provider=provider,
                asker_id=asker_id,
                canonical=canonical,
                supports=supports,
            )
            if on_result is not None:
                on_result(data)

    count = max(1, min(concurrency, len(items)))
    workers: asyncio.Future[Any] = asyncio.gather(*(worker() for _ in range(count)))
    stopper: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([workers, stopper], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
        workers.cancel()  # nothing when they are done; else the items in flight (a stop request)
        await asyncio.gather(workers, *supports, return_exceptions=True)
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


async def _ask(
    run: EvaluationRun,
    item: EvaluationItem,
    *,
    provider: Provider,
    asker_id: int | None,
    canonical: Mapping[str, str],
    supports: list[asyncio.Future[Any]],
) -> Mapping[str, Any]:
    """One item: asked, its support record awaited, measured and stored; returns its data."""
    spec = selectors.item_spec(item)
    try:
        answer = await flow.ask(
            question=item.question,
            asker_id=asker_id,
            publisher=JSON,
            provider=provider,
            origin=Answer.Origin.EVALUATION,
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        # The pipeline stored no answer (a database error, say): the item failed, the run goes on.
        logger.exception("evaluation run %s: asking %r failed", run.pk, item.question)
        data = item_data(spec, None, error=f"{type(exc).__name__}: {exc}")
        await sync_to_async(services.result_store)(run, item, answer_id=None, data=data)
        return data
    support = lifecycle.after_done(answer.id)
    if support is not None:
        # Shielded: a stop request leaves the record to be stored (the run waits for it).
        supports.append(support)
        await asyncio.shield(support)
    stored = await sync_to_async(selectors.stored_answer)(answer.id)
    data = item_data(spec, stored, canonical=canonical)
    await sync_to_async(services.result_store)(run, item, answer_id=answer.id, data=data)
    return data
