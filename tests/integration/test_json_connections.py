"""Answers waiting on the provider hold no PostgreSQL connection (JSON path, on a real daphne).

Hundreds of questions can be in flight at once, each waiting seconds for its
model; a connection held per waiting request would cap a process at
PostgreSQL's `max_connections` (100 by default). With the connection pool (the
default on PostgreSQL) a process never has more sessions than
DATABASE_POOL_SIZE, however many questions are in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from tests.fixtures.live_server import (
    LiveServer,
    PeakSessions,
    backend_pids,
    open_database_connections,
    postgresql_only,
    served,
)
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.waiting import await_until

ASKS = 30

pytestmark = postgresql_only


@pytest.fixture(scope="module")
def live(stub: StubOpenAIServer) -> Iterator[LiveServer]:
    # No pool: every session counted is one a request holds right now.
    env = {"DATABASE_POOL_SIZE": "0"}
    with served(stub, env) as server:
        yield server


POOL_SIZE = 3


@pytest.fixture(scope="module")
def pooled(stub: StubOpenAIServer) -> Iterator[LiveServer]:
    # A pool smaller than the pipeline's gate (8): steps queue for a connection. A request
    # that kept its connection while waiting on the model would starve the rest; they
    # would fail after DATABASE_POOL_TIMEOUT.
    env = {"DATABASE_POOL_SIZE": str(POOL_SIZE), "DATABASE_POOL_TIMEOUT": "10"}
    with served(stub, env) as server:
        yield server


async def test_json_asks_waiting_on_the_provider_hold_no_database_connection(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    stub.set_default(Reply(pieces=["Zebras graze [1]", " on grass [2]."], delay_s=1.5))
    before = open_database_connections(live)
    async with httpx.AsyncClient(base_url=live.url, timeout=30) as client:
        asks = [
            asyncio.create_task(client.post("/api/answers/", json={"question": f"What do zebras eat? #{i}"}))
            for i in range(ASKS)
        ]
        await await_until(  # every ask is waiting on the model
            lambda: len(stub.requests) >= ASKS, within=30, what=f"{ASKS} asks to reach the provider"
        )
        during = open_database_connections(live)
        responses = await asyncio.gather(*asks)

    assert [r.status_code for r in responses] == [201] * ASKS
    assert {r.json()["text"] for r in responses} == {"Zebras graze [1] on grass [2]."}
    assert during <= before + 3, f"{ASKS} waiting asks hold {during - before} database connections"


async def test_with_the_pool_many_asks_share_its_few_sessions(
    pooled: LiveServer, stub: StubOpenAIServer
) -> None:
    stub.set_default(Reply(pieces=["Zebras graze [1]", " on grass [2]."], delay_s=1.0))
    async with (
        PeakSessions(pooled, every=0.05) as sessions,
        httpx.AsyncClient(base_url=pooled.url, timeout=60) as client,
    ):
        asks = [{"question": f"What do zebras eat? #{i}"} for i in range(ASKS)]
        responses = await asyncio.gather(*[client.post("/api/answers/", json=ask) for ask in asks])
        # The pool's sessions are reused from one request to the next, not opened anew.
        pids = await asyncio.to_thread(backend_pids, pooled)
        again = await client.post("/api/answers/", json={"question": "What do zebras eat? again"})
        pids_after = await asyncio.to_thread(backend_pids, pooled)
    peak = sessions.peak

    assert [r.status_code for r in responses] == [201] * ASKS
    assert {r.json()["text"] for r in responses} == {"Zebras graze [1] on grass [2]."}
    assert again.status_code == 201
    assert 0 < peak <= POOL_SIZE, f"{ASKS} asks at once took {peak} sessions; the pool has {POOL_SIZE}"
    assert pids_after <= pids, "a new session was opened for one more question"
