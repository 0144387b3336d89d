"""The server process's answers in flight, and how they end when it stops.

At stop (SIGTERM), answers in flight get ANSWERS_SHUTDOWN_GRACE seconds to finish;
the rest are stored as failed with `error` published (shutdown()), so none stays
`streaming`. The server's own hooks, which call shutdown() and reap what a dead
process left at start, are answers.server's.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from answers.models import Answer

logger = logging.getLogger(__name__)


# Every generation in flight in this process, by answer: kept referenced so the event
# loop cannot drop them, awaited by idempotent retries, finished or failed on shutdown.
_in_flight: dict[uuid.UUID, asyncio.Task[Answer | None]] = {}
# Work started once an answer is done (its support record): kept referenced, waited for on
# shutdown within the same grace, and by tests (wait_for_background).
_after_done: dict[uuid.UUID, asyncio.Task[None]] = {}
_shutting_down = False
# Requests waiting for one of those generations (JSON asks): answered before the server stops.
_responding: set[asyncio.Task[Any]] = set()
# How long a stopping server waits, past failing the generations, for their requests to respond.
RESPOND_GRACE_S = 5.0


def track(answer_id: uuid.UUID, task: asyncio.Task[Answer | None]) -> None:
    """A generation running in a task of its own, until it ends."""
    _in_flight[answer_id] = task
    task.add_done_callback(lambda _: _in_flight.pop(answer_id, None))


def responding(task: asyncio.Task[Any]) -> None:
    """A request (its task) waiting for a generation to respond with: a stopping server lets it
    send its response (503 with the answer's id) before it stops."""
    _responding.add(task)
    task.add_done_callback(_responding.discard)


def in_flight(answer_id: uuid.UUID) -> asyncio.Task[Answer | None] | None:
    return _in_flight.get(answer_id)


def track_after_done(answer_id: uuid.UUID, task: asyncio.Task[None]) -> None:
    """Work on a done answer (its support record) running in a task of its own, until it ends."""
    _after_done[answer_id] = task

    def forget(_: object) -> None:
        if _after_done.get(answer_id) is task:
            del _after_done[answer_id]

    task.add_done_callback(forget)


def after_done(answer_id: uuid.UUID) -> asyncio.Task[None] | None:
    return _after_done.get(answer_id)


async def wait_for_background() -> None:
    """Wait for every generation in flight in this process, and the work started once each is done (tests)."""
    while _in_flight or _after_done:
        await asyncio.gather(*_in_flight.values(), *_after_done.values(), return_exceptions=True)


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
    deadline = asyncio.get_running_loop().time() + grace
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
    if _responding:
        # Their JSON asks respond (done, or 503 with the id) rather than being cut by the stop.
        await asyncio.wait(set(_responding), timeout=RESPOND_GRACE_S)
    await _finish_after_done(deadline)
    return interrupted


async def _finish_after_done(deadline: float) -> None:
    """The support records being computed (answers that finished meanwhile included), until `deadline`.

    One not finished by then is cancelled: its answer keeps `support` null (check_support fills it).
    """
    pending = set(_after_done.values())
    if not pending:
        return
    _, pending = await asyncio.wait(pending, timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
        logger.warning("shutdown: %d support record(s) not computed in time, left null", len(pending))
