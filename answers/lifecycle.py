"""The server process's start and stop: reap what a dead process left, finish what is in flight.

At start, answers abandoned by a process that died (no heartbeat for
ANSWERS_STALE_AFTER) are failed and their listeners told. At stop (SIGTERM),
answers in flight get ANSWERS_SHUTDOWN_GRACE seconds to finish; the rest are
stored as failed with `error` published (services.shutdown), so none stays
`streaming`.

Servers signal the stop differently: daphne (Twisted) runs "before shutdown"
triggers and waits for the Deferreds they return; uvicorn and hypercorn send the
ASGI lifespan `shutdown` message. `ServerLifecycle` handles both.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from asgiref.sync import sync_to_async

from answers.conf import conf

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
Message = dict[str, Any]


def reap_on_start() -> list[Any]:
    """Fail answers a dead process left in flight. Never stops the server from starting."""
    from answers.services import answer_reap_stale

    try:
        reaped = answer_reap_stale()
    except Exception:  # a missing table before `migrate`, an unreachable database...
        logger.warning("reap_stale_answers at server start did not run", exc_info=True)
        return []
    if reaped:
        logger.warning("server start: %d stale answer(s) marked failed", len(reaped))
    return reaped


async def stop() -> None:
    from answers.services import shutdown

    interrupted = await shutdown(grace=conf.SHUTDOWN_GRACE)
    if interrupted:
        logger.warning("server stop: answers failed: %s", ", ".join(str(i) for i in interrupted))


def _install_twisted_trigger() -> bool:
    """Under daphne: wait for in-flight answers before the reactor stops."""
    if "twisted.internet.reactor" not in sys.modules:
        return False
    from twisted.internet import reactor as installed
    from twisted.internet.defer import Deferred

    reactor: Any = installed
    if not hasattr(reactor, "_asyncioEventloop"):
        return False

    def before_shutdown() -> Deferred[None]:
        from answers.services import begin_shutdown

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
