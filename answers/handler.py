"""Django's ASGI handler, with every request's synchronous parts on one bounded pool of threads.

Django gives each request an executor of its own (asgiref's ThreadSensitiveContext): one
thread, started by the request's first synchronous call (a middleware hook, a signal
receiver) and ended once its response is sent. A request that waits kept that thread, idle:
1,000 JSON asks waiting for a provider, or queued for the pipeline, were 1,000 threads
(bench/RESULTS_concurrency.md). Here every request's synchronous calls run on one pool of
ANSWERS_REQUEST_THREADS threads per process, on whichever thread is free; a request's calls
still run one at a time (each is awaited). ANSWERS_REQUEST_THREADS=0 keeps Django's way.

Nothing here keeps thread-local state from one synchronous call of a request to the next:
no transaction spans two (no ATOMIC_REQUESTS), and each thread's database connection is its
own, closed as Django closes them (CONN_MAX_AGE) or handed back to the pool. Tasks that
outlive their request run in a fresh context (answers.pipeline.flow and generate, answers.pipeline.support).
"""

from __future__ import annotations

from typing import Any

import django
from asgiref.sync import ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler

from answers import db
from answers.conf import conf


class PooledASGIHandler(ASGIHandler):
    """ASGIHandler whose requests share one pool of threads instead of starting one each."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        size = conf.REQUEST_THREADS
        if not size:  # Django's own way, a thread per request (bench/bench_concurrency.py's baseline)
            async with ThreadSensitiveContext():
                await self.handle(scope, receive, send)
            return
        async with db.pooled_context("requests", size):
            await self.handle(scope, receive, send)


def get_asgi_application() -> PooledASGIHandler:
    """django.core.asgi.get_asgi_application, with the pooled handler."""
    django.setup(set_prefix=False)
    return PooledASGIHandler()
