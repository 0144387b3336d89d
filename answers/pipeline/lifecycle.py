"""The server process's answers in flight, and its start and stop: reap what a dead process left,
finish what is in flight.

At start, answers abandoned by a process that died (no heartbeat for
ANSWERS_STALE_AFTER) are failed and their listeners told. At stop (SIGTERM),
answers in flight get ANSWERS_SHUTDOWN_GRACE seconds to finish; the rest are
stored as failed with `error` published (shutdown()), so none stays `streaming`.

Servers signal the stop differently: daphne (Twisted) runs "before shutdown"
triggers and waits for the Deferreds they return; uvicorn and hypercorn send the
ASGI lifespan `shutdown` message. `ServerLifecycle` handles both.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import uuid
from typing import Any

from asgiref.sync import sync_to_async
from django.urls import get_resolver
from twisted.internet.defer import Deferred

from answers.conf import conf
from answers.models import Answer
from answers.pipeline.store import answer_reap_stale

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
Message = dict[str, Any]

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


def freeze_startup_heap() -> int:
    """Load what every request uses (the URLconf and its views), then keep it out of garbage collections.

    What a server process holds from its start (modules, classes, the URLconf: ~200k
    objects) lives as long as the process, yet each full collection walks it again. With
    thousands of open streams a full collection of the whole heap took 0.4-1.1 s and
    held up every stream's next event (bench/NOTES.md, 2,000 streams). Frozen after one
    collection (gc.freeze), it is left out of every later one; objects created afterwards
    are collected as usual. Returns how many objects were frozen.
    """
    get_resolver().url_patterns  # noqa: B018  (imports every view module)
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def reap_on_start() -> list[Any]:
    """Fail answers a dead process left in flight. Never stops the server from starting."""
    try:
        reaped = answer_reap_stale()
    except Exception:  # a missing table before `migrate`, an unreachable database...
        logger.warning("reap_stale_answers at server start did not run", exc_info=True)
        return []
    if reaped:
        logger.warning("server start: %d stale answer(s) marked failed", len(reaped))
    return reaped


async def stop() -> None:
    interrupted = await shutdown(grace=conf.SHUTDOWN_GRACE)
    if interrupted:
        logger.warning("server stop: answers failed: %s", ", ".join(str(i) for i in interrupted))


def _install_twisted_trigger() -> bool:
    """Under daphne: wait for in-flight answers before the reactor stops."""
    # Looked up, not imported: importing twisted.internet.reactor would install a reactor.
    reactor: Any = sys.modules.get("twisted.internet.reactor")
    if reactor is None or not hasattr(reactor, "_asyncioEventloop"):
        return False

    def before_shutdown() -> Deferred[None]:
        begin_shutdown()  # before daphne cancels the requests in flight (JSON answers)
        return Deferred.fromFuture(asyncio.ensure_future(stop(), loop=reactor._asyncioEventloop))

    reactor.addSystemEventTrigger("before", "shutdown", before_shutdown)
    return True


class ServerLifecycle:
    """Wraps the ASGI application: lifespan messages here, everything else to Django."""

    def __init__(self, application: Any, *, reap: bool = True) -> None:
        self.application = application
        self.twisted = _install_twisted_trigger()
        if reap:
            reap_on_start()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.application(scope, receive, send)
            return
        while True:
            message: Message = await receive()
            if message["type"] == "lifespan.startup":
                await sync_to_async(reap_on_start)()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await stop()
                await send({"type": "lifespan.shutdown.complete"})
                return
