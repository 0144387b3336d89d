"""Answers waiting on the provider hold no PostgreSQL connection (JSON path, on a real daphne).

Hundreds of questions can be in flight at once, each waiting seconds for its
model; a connection held per waiting request would cap a process at
PostgreSQL's `max_connections` (100 by default). This module's server runs
without the connection pool, so every session counted is one a request holds
right now; test_json_pool.py runs the pool.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.fixtures.live_server import (
    LiveServer,
    open_database_connections,
    postgresql_only,
)
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.waiting import await_until

ASKS = 30

pytestmark = postgresql_only


@pytest.fixture(scope="module")
def live_settings() -> dict[str, str]:
    # No pool: every session counted is one a request holds right now.
    return {"DATABASE_POOL_SIZE": "0"}


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
