"""Open event streams do not each hold a PostgreSQL connection while they wait.

Each stream reads the event store from a thread of its own; a connection kept
per stream would cap a process at PostgreSQL's `max_connections` (100 by
default) however idle the streams are. (SQLite has no such limit, and the file
handles it keeps are no measure of connections, so this runs on PostgreSQL.)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.browser.server import LiveServer, corpus, running_server
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.integration.test_sse import ask, read_stream

STREAMS = 12

pytestmark = pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")),
    reason="connection limits are PostgreSQL's; this runs in the PostgreSQL pass of make test",
)


@pytest.fixture(scope="module")
def stub() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def live(stub: StubOpenAIServer) -> Iterator[LiveServer]:
    with running_server(openai_base_url=stub.base_url, documents=corpus()) as server:
        yield server


def open_database_connections(live: LiveServer) -> int:
    """The server's sessions on its PostgreSQL database."""
    import psycopg

    url = live.env["DATABASE_URL"]
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [name]
        ).fetchone()
    assert row is not None
    return int(row[0])


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
            await asyncio.sleep(0.5)
            during = open_database_connections(live)

    assert during <= before + 2, f"{STREAMS} idle streams hold {during - before} more database connections"
