"""The support record of a done answer, computed off the request once `done` is stored and published.

Both delivery paths call `start()` right after publishing `done`: the record is
computed in a task of its own (tracked by answers.pipeline.lifecycle, so a
shutdown waits for it within its grace and tests can wait for it) and stored
with the counts the admin filters on (store.answer_support). Nothing here can
fail or delay the answer: any failure is logged and leaves `support` null
(`manage.py check_support` fills it in later).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid

from asgiref.sync import SyncToAsync

from answers import db, metrics
from answers.conf import conf
from answers.pipeline import lifecycle, store
from answers.support.compute import get_support_method, load_inputs_for
from answers.support.methods import support_record

logger = logging.getLogger(__name__)


def start(answer_id: uuid.UUID) -> asyncio.Task[None]:
    """Compute and store `answer_id`'s support record in the background; returns the tracked task."""
    task = asyncio.get_running_loop().create_task(check(answer_id), context=_context())
    lifecycle.track_after_done(answer_id, task)
    return task


def _context() -> contextvars.Context:
    """The context the task runs in, which decides the thread its database work runs on (asgiref).

    Within a request (Django's ASGI handler enters a ThreadSensitiveContext), a fresh one, as for a
    background generation: the request's executor ends with its response. Elsewhere (a background
    generation, `manage.py ask`, a test's async_to_sync), a copy: a sync caller waiting for the
    record keeps its database work on its own thread (its transaction, no deadlock on asgiref's
    single thread).
    """
    if SyncToAsync.thread_sensitive_context.get(None) is not None:
        return contextvars.Context()
    return contextvars.copy_context()


async def check(answer_id: uuid.UUID) -> None:
    """Compute and store the record; a failure is logged, never raised (the answer stays as it is)."""
    gate, size = "pipeline", conf.PIPELINE_DB_WORKERS
    try:
        inputs = await db.run_db(load_inputs_for, answer_id, gate=gate, size=size)
        record = await support_record(inputs, method=get_support_method(), min_score=conf.SUPPORT_MIN)
        if await db.run_db(store.answer_support, gate=gate, size=size, answer_id=answer_id, record=record):
            metrics.support_outcomes(record)
    except Exception:
        logger.exception("answer %s: support record not computed (left null)", answer_id)
