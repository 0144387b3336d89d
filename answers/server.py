"""The server process's hooks: at start, reap what a dead process left and freeze the startup heap;
at stop, finish what is in flight (answers.pipeline.lifecycle.shutdown).

At start, answers abandoned by a process that died (no heartbeat for
ANSWERS_STALE_AFTER) are failed and their listeners told (answers.reaper). At stop
(SIGTERM), no new question is taken (503), answers in flight get ANSWERS_SHUTDOWN_GRACE
seconds to finish; the rest are stored as failed with `error` published, so none stays
`streaming`, and every open stream of them gets that `error` (or its `done`) before the
server closes the connections (answers.sse.open_streams).

Servers signal the stop differently: daphne (Twisted) runs "before shutdown"
triggers and waits for the Deferreds they return; uvicorn and hypercorn send the
ASGI lifespan `shutdown` message. `ServerLifecycle` handles both.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
from typing import Any

from asgiref.sync import sync_to_async
from django.urls import get_resolver
from twisted.internet.defer import Deferred

from answers.conf import conf
from answers.pipeline.lifecycle import RESPOND_GRACE_S, begin_shutdown, ended_while_stopping, shutdown
from answers.reaper import reap_stale
from answers.sse import open_streams

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
Message = dict[str, Any]


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


# The longest a thread holding the GIL keeps it while another waits for it (CPython's default: 5 ms).
SWITCH_INTERVAL_S = 0.001


def shorten_switch_interval() -> float:
    """Make threads hand the GIL to the event loop sooner; returns the interval set.

    An answer's CPU work after `done` (its HTML, its trail, its support record, a trail or
    answer read serialized for a reviewer) runs in worker threads, off the event loop, but
    Python runs one thread at a time: each time the loop thread wants the GIL back (for
    every callback of every request), it waits up to the switch interval for a busy thread
    to let go. During a 30 KB marker flood, 1 ms instead of 5 ms halved `/healthz`'s p99 and
    slowest reply (195.6 -> 105.5 ms, 367 -> 200 ms) with the flood itself no slower
    (bench/bench_healthz_ab.py, bench/NOTES_by_hand.md). Long C calls that hold the GIL
    throughout (nh3, json on a large record) are not shortened by it.
    """
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    return sys.getswitchinterval()


def reap_on_start() -> list[Any]:
    """Fail answers a dead process left in flight. Never stops the server from starting."""
    try:
        reaped = reap_stale()
    except Exception:  # a missing table before `migrate`, an unreachable database...
        logger.warning("reap_stale_answers at server start did not run", exc_info=True)
        return []
    if reaped:
        logger.warning("server start: %d stale answer(s) marked failed", len(reaped))
    return reaped


async def stop() -> None:
    """Finish or fail what is in flight, then let the open streams of those answers send their last
    event (`done` or `error`) before the server closes every connection."""
    interrupted = await shutdown(grace=conf.SHUTDOWN_GRACE)
    if interrupted:
        logger.warning("server stop: answers failed: %s", ", ".join(str(i) for i in interrupted))
    owed = await open_streams.drain(ended_while_stopping(), within=RESPOND_GRACE_S)
    if owed:
        logger.warning("server stop: %d stream(s) closed before their answer's last event reached them", owed)


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
