"""Database connection hygiene for long-lived async work (streams, generations).

Connections are not persistent (CONN_MAX_AGE=0), but Django closes them only
when a request ends; streams and generations outlive that by seconds or hours,
and a burst of them would each hold one and exceed PostgreSQL's
`max_connections`. `run_db` runs a piece of database work a few at a time per
process (a named gate) and gives the connection back right after.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import connection

T = TypeVar("T")

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
