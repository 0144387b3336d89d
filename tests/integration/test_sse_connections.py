"""Open event streams do not each hold a PostgreSQL connection while they wait.

Each stream reads the event store from a thread of its own; a connection kept
per stream would cap a process at PostgreSQL's `max_connections` (100 by
default) however idle the streams are. (SQLite has no such limit, and the file
handles it keeps are no measure of connections, so this runs on PostgreSQL.)
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import threading
from collections.abc import Awaitable, Callable

import httpx
import pytest

from tests.fixtures.live_server import (
    LiveServer,
    PeakSessions,
    open_database_connections,
    postgresql_only,
)
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.sse_client import ask, read_stream
from tests.fixtures.waiting import await_until, await_value

STREAMS = 12
SETTLE_S = 10.0  # generous: 2 cores, other tests running alongside

pytestmark = postgresql_only


def session_count(live: LiveServer) -> Callable[[], Awaitable[int]]:
    """Reads the server's database sessions off the event loop (the streams' reads go on)."""
    return lambda: asyncio.to_thread(open_database_connections, live)


def _raise_open_file_limit(wanted: int) -> None:
    """Enough descriptors for this process's streams and the server's (it inherits the limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


@pytest.fixture(scope="module")
def live_settings() -> dict[str, str]:
    _raise_open_file_limit(4096)  # before the server starts (this fixture comes first): daphne inherits it
    # An answer is held in flight while hundreds of streams open: let the provider wait.
    # No connection pool: every session counted is one a stream or step holds right now
    # (test_json_pool.py covers the pool).
    return {"ANSWERS_PROVIDER_TIMEOUT": "90", "DATABASE_POOL_SIZE": "0"}


async def _open_and_catch_up(client: httpx.AsyncClient, url: str, stack: contextlib.AsyncExitStack) -> None:
    """Open a stream, read through `done` (the replay), and leave it open, waiting."""
    response = await stack.enter_async_context(client.stream("GET", url))
    assert response.status_code == 200
    lines = response.aiter_lines()
    async with asyncio.timeout(20):
        async for line in lines:
            if line == "event: done":
                return


async def test_idle_streams_give_their_database_connections_back(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    stub.enqueue(Reply(pieces=["Zebras graze [1]", " on grass [2]."]))
    async with httpx.AsyncClient(base_url=live.url, timeout=20) as client:
        accepted = await ask(client)
        events_url = httpx.URL(accepted["events_url"]).raw_path.decode()
        await read_stream(client, events_url)  # the answer is done
        before = open_database_connections(live)

        async with contextlib.AsyncExitStack() as stack:
            await asyncio.gather(*[_open_and_catch_up(client, events_url, stack) for _ in range(STREAMS)])
            # Their replays have given their connections back once the count is down (polled).
            during = await await_value(session_count(live), lambda n: n <= before + 2, within=SETTLE_S)

    assert during <= before + 2, f"{STREAMS} idle streams hold {during - before} more database connections"


def max_connections(live: LiveServer) -> int:
    import psycopg

    with psycopg.connect(live.env["DATABASE_URL"], autocommit=True) as conn:
        row = conn.execute("SHOW max_connections").fetchone()
    assert row is not None
    return int(row[0])


async def test_more_streams_than_postgres_max_connections_all_open_and_all_finish(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    """max_connections + 20 streams on one answer held in flight: every one gets 200, then `done`."""
    limit = max_connections(live)
    count = limit + 20
    _raise_open_file_limit(count + 512)
    release = threading.Event()
    pieces = ["Zebras graze [1]", " on grass [2]."]
    stub.enqueue(Reply(pieces=pieces, gate=release))

    statuses: list[int] = []
    caught_up = 0
    done: list[str] = []

    async def follow(client: httpx.AsyncClient, url: str) -> None:
        nonlocal caught_up
        async with client.stream("GET", url) as response:
            statuses.append(response.status_code)
            assert response.status_code == 200, await response.aread()
            event = ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: ") and event == "references":
                    caught_up += 1  # replayed from the store: now waiting for live events
                elif line.startswith("data: ") and event == "done":
                    done.append(line)
                    return

    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(base_url=live.url, timeout=60, limits=limits) as client:
        accepted = await ask(client)
        events_url = httpx.URL(accepted["events_url"]).raw_path.decode()
        before = open_database_connections(live)
        async with PeakSessions(live, every=0.1) as sessions:
            loop = asyncio.get_running_loop()
            streams = [loop.create_task(follow(client, events_url)) for _ in range(count)]

            def all_caught_up() -> bool:
                failed = [t for t in streams if t.done()]
                if failed:
                    failed[0].result()  # raises what went wrong
                    raise AssertionError("a stream ended before the answer was released")
                return caught_up >= count

            try:
                await await_until(all_caught_up, within=40, what=f"{count} streams to catch up", every=0.1)
                # All held open, waiting: their replays' connections given back (polled).
                held = await await_value(session_count(live), lambda n: n <= before + 2, within=SETTLE_S)
                release.set()
                async with asyncio.timeout(40):
                    await asyncio.gather(*streams)
            finally:
                release.set()
                for task in streams:
                    task.cancel()
                await asyncio.gather(*streams, return_exceptions=True)
    peak = sessions.peak

    assert statuses == [200] * count
    assert len(done) == count, f"{len(done)} of {count} streams got `done`"
    # Streams share a few connections (ANSWERS_STREAM_DB_WORKERS, 4) and hold none while waiting.
    assert held <= before + 2, f"{count} waiting streams hold {held - before} database connections"
    assert peak <= before + 4 + 2, f"opening {count} streams took {peak - before} connections at once"
    assert peak < limit // 4, (peak, limit)
