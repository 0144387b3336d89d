"""The support record of a done answer, computed off the request once `done` is stored and published.

Both delivery paths call `start()` right after publishing `done`: the record is
computed in a task of its own (tracked by answers.pipeline.lifecycle, so a
shutdown waits for it within its grace and tests can wait for it) and stored
with the counts the admin filters on (store.answer_support), and beside it the coverage
record (answers.support.coverage: whether the cited sources hold the question's key terms). Nothing here can
fail or delay the answer: any failure is logged and leaves `support` null
(`manage.py check_support` fills it in later).

Off the answer's path means off its resources too. The record is computed from
the answer as the pipeline just stored it (its text and loaded sources, not
read back), and its database work (the corpus weights, the store) passes a
gate of its own, one at a time: the pipeline's gate stays with the answers in
flight. A burst of answers therefore never waits behind the records of those
done before it (holding the pipeline's gate while queued for asgiref's one
thread, they slowed 200 concurrent JSON asks: bench/bench_concurrency.py); the
records follow, in turn.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid

from asgiref.sync import SyncToAsync

from answers import db, metrics
from answers.conf import conf
from answers.models import Answer
from answers.pipeline import lifecycle, store
from answers.support.compute import AnswerTexts, answer_texts, coverage_from, get_support_method, inputs_from
from answers.support.methods import support_record

logger = logging.getLogger(__name__)

# The gate of the records' database work, and how many pass it at once: one, as they run on one
# thread anyway outside a request (see _context), and the answers in flight come first.
GATE, GATE_SIZE = "support", 1


def start(answer: Answer) -> asyncio.Task[None]:
    """Compute and store the support record of `answer` (done, sources loaded) in the background.

    Returns the tracked task.
    """
    # What the record is computed from, read now: the caller goes on with the answer object.
    texts = answer_texts(answer)
    task = asyncio.get_running_loop().create_task(check(answer.id, texts), context=_context())
    lifecycle.track_after_done(answer.id, task)
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


async def check(answer_id: uuid.UUID, texts: AnswerTexts) -> None:
    """Compute and store the record; a failure is logged, never raised (the answer stays as it is)."""
    try:
        method = get_support_method()
        inputs = await db.run_db(inputs_from, texts, gate=GATE, size=GATE_SIZE)
        record = await support_record(inputs, method=method, min_score=conf.SUPPORT_MIN)
        coverage = await db.run_db(coverage_from, texts, gate=GATE, size=GATE_SIZE)
        if await db.run_db(
            store.answer_support,
            gate=GATE,
            size=GATE_SIZE,
            answer_id=answer_id,
            record=record,
            dropped=texts.dropped,
            coverage=coverage,
        ):
            metrics.support_outcomes(record)
            metrics.coverage_outcome(coverage)
    except Exception:
        logger.exception("answer %s: support record not computed (left null)", answer_id)
