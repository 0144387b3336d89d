"""Answers waiting on the provider hold no PostgreSQL connection (JSON path, on a real daphne).

Hundreds of questions can be in flight at once, each waiting seconds for its
model; a connection held per waiting request would cap a process at
PostgreSQL's `max_connections` (100 by default).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import httpx
import pytest

from tests.browser.server import LiveServer, corpus, running_server
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.integration.test_sse_connections import open_database_connections

ASKS = 30

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
        while len(stub.requests) < ASKS:  # noqa: ASYNC110  (every ask is waiting on the model)
            await asyncio.sleep(0.05)
        during = open_database_connections(live)
        responses = await asyncio.gather(*asks)

    assert [r.status_code for r in responses] == [201] * ASKS
    assert {r.json()["text"] for r in responses} == {"Zebras graze [1] on grass [2]."}
    assert during <= before + 3, f"{ASKS} waiting asks hold {during - before} database connections"
