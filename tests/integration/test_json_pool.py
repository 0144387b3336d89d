"""With the connection pool (the default on PostgreSQL), answers in flight share its few sessions.

A process never has more PostgreSQL sessions than DATABASE_POOL_SIZE, however
many questions are in flight, and reuses them from one request to the next
(test_json_connections.py: without the pool, a waiting answer holds none).
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.fixtures.live_server import LiveServer, PeakSessions, backend_pids, postgresql_only
from tests.fixtures.providers import Reply, StubOpenAIServer

ASKS = 30
POOL_SIZE = 3

pytestmark = postgresql_only


@pytest.fixture(scope="module")
def live_settings() -> dict[str, str]:
    # A pool smaller than the pipeline's gate (8): steps queue for a connection. A request
    # that kept its connection while waiting on the model would starve the rest; they
    # would fail after DATABASE_POOL_TIMEOUT.
    return {"DATABASE_POOL_SIZE": str(POOL_SIZE), "DATABASE_POOL_TIMEOUT": "10"}


async def test_with_the_pool_many_asks_share_its_few_sessions(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    stub.set_default(Reply(pieces=["Zebras graze [1]", " on grass [2]."], delay_s=1.0))
    async with (
        PeakSessions(live, every=0.05) as sessions,
        httpx.AsyncClient(base_url=live.url, timeout=60) as client,
    ):
        asks = [{"question": f"What do zebras eat? #{i}"} for i in range(ASKS)]
        responses = await asyncio.gather(*[client.post("/api/answers/", json=ask) for ask in asks])
        # The pool's sessions are reused from one request to the next, not opened anew.
        pids = await asyncio.to_thread(backend_pids, live)
        again = await client.post("/api/answers/", json={"question": "What do zebras eat? again"})
        pids_after = await asyncio.to_thread(backend_pids, live)
    peak = sessions.peak

    assert [r.status_code for r in responses] == [201] * ASKS
    assert {r.json()["text"] for r in responses} == {"Zebras graze [1] on grass [2]."}
    assert again.status_code == 201
    assert 0 < peak <= POOL_SIZE, f"{ASKS} asks at once took {peak} sessions; the pool has {POOL_SIZE}"
    assert pids_after <= pids, "a new session was opened for one more question"
