"""Database connection hygiene for long-lived async work (streams, generations).

Connections are not persistent (CONN_MAX_AGE=0), but Django closes them only
when a request ends; streams and generations outlive that by seconds or hours,
and a burst of them would each hold one and exceed PostgreSQL's
`max_connections`. `run_db` runs a piece of database work a few at a time per
process (a named gate) and gives the connection back right after.

Threads are the other thing a long-lived response must not hold. Django's ASGI
handler gives every request a thread for its synchronous parts (asgiref's
ThreadSensitiveContext: a one-thread executor, started by the first
thread-sensitive call, a signal receiver or a middleware hook, and ended when
the response has been sent), so an open stream kept one thread, idle, for its
whole life. `run_pooled` runs database work on a small shared pool instead,
and `release_request_thread` lets a streaming response give its request's
thread back once its synchronous parts are over.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import SyncToAsync, ThreadSensitiveContext, sync_to_async
from django.db import connection, connections

T = TypeVar("T")

_pools: dict[str, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()

_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def release_connection() -> None:
    """Close this thread's database connection unless a transaction (a test's, say) is open."""
    if not connection.in_atomic_block:
        connection.close()


def semaphore(name: str, size: int) -> asyncio.Semaphore:
    """This event loop's semaphore called `name` (created with `size` on first use)."""
    gates = _gates.setdefault(asyncio.get_running_loop(), {})
    gate = gates.get(name)
    if gate is None:
        gate = gates[name] = asyncio.Semaphore(size)
    return gate


def releasing(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn`, giving this thread's database connection back when it returns or raises."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        finally:
            release_connection()

    return run


async def run_db(fn: Callable[..., T], *args: Any, gate: str, size: int, **kwargs: Any) -> T:
    """Run `fn` in a thread once fewer than `size` others hold gate `gate`; release its connection after."""
    async with semaphore(gate, size):
        return await sync_to_async(releasing(fn))(*args, **kwargs)


def pool(name: str, size: int) -> ThreadPoolExecutor:
    """The process's thread pool called `name` (at most `size` threads, started as work needs them)."""
    with _pools_lock:
        executor = _pools.get(name)
        if executor is None:
            executor = _pools[name] = ThreadPoolExecutor(max_workers=size, thread_name_prefix=f"db-{name}")
        return executor


async def run_pooled(fn: Callable[..., T], *args: Any, pool_name: str, size: int, **kwargs: Any) -> T:
    """Run `fn` on one of the `size` threads of pool `pool_name`, its connection given back after.

    Not thread-sensitive: `fn` must own its database work from start to end (no transaction of
    the caller's, nothing left on the thread), which `releasing` sees to. At most `size` run at
    once; the rest wait their turn without a thread.
    """
    executor = pool(pool_name, size)
    return await sync_to_async(releasing(fn), thread_sensitive=False, executor=executor)(*args, **kwargs)


@contextlib.asynccontextmanager
async def pooled_context(pool_name: str, size: int) -> AsyncIterator[None]:
    """Within it, asgiref's thread-sensitive calls run on pool `pool_name` (`size` threads), on whichever
    thread is free, one at a time as they are awaited: a request's (answers.handler), or an
    evaluation run's item (answers.evaluation.runner)."""
    async with ThreadSensitiveContext() as context:
        # The context's executor is a lease on the pool, set where asgiref looks it up (not
        # ThreadSensitiveContext(executor=...), which refuses any call once it has exited: a
        # server that stops cancels its requests, and a JSON ask still answers after that,
        # 503 with its answer's id; asgiref then gives that straggler a thread of its own).
        SyncToAsync.context_to_thread_executor[context] = PoolLease(pool(pool_name, size))
        try:
            yield
        finally:
            # Taken back here: asgiref would start a thread just to shut the lease down.
            SyncToAsync.context_to_thread_executor.pop(context, None)


class PoolLease(Executor):
    """One request's executor for asgiref's thread-sensitive calls, backed by a shared pool.

    A request's calls come one at a time (each is awaited), each on whichever thread of the
    pool is free (answers.handler). Shutting it down leaves the pool, the process's, running.
    """

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self._pool = pool

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        # The next call may run on another thread: a connection this one opened (an anonymous
        # asker's session, say) goes back now, or pool threads would each keep one checked out
        # and starve a small DATABASE_POOL_SIZE.
        return self._pool.submit(releasing(fn), *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


def _close_connections() -> None:
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close()


def release_request_thread() -> bool:
    """Give back the thread asgiref keeps for the current request; True if there was one.

    Call it from a response's body (the middleware and the view have returned) that will
    make no thread-sensitive call for a long while: the thread closes its database
    connections and ends. A later thread-sensitive call of the same request (Django's
    `response.close()` when the body ends) starts a new one, which ends with the response
    as usual. A context given its own executor (ThreadSensitiveContext(executor=...)) is
    its owner's, and left alone.
    """
    context = SyncToAsync.thread_sensitive_context.get(None)
    if context is None or getattr(context, "_executor", None) is not None:
        return False
    executor = SyncToAsync.context_to_thread_executor.get(context)
    if executor is None or isinstance(executor, PoolLease):
        return False  # no thread of its own (answers.handler: the requests' shared pool)
    del SyncToAsync.context_to_thread_executor[context]
    executor.submit(_close_connections)
    executor.shutdown(wait=False)  # the thread ends once the queue is empty
    return True
