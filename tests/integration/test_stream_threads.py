"""An open event stream costs its server process no thread while it waits (issue 19).

Django's ASGI handler gives every request a thread for its synchronous parts
(asgiref's ThreadSensitiveContext), kept until the response has been sent; a
stream's response lasts as long as the stream. A stream gives that thread back
once it is open and reads the event store on a small shared pool
(ANSWERS_STREAM_DB_WORKERS), so hundreds of idle streams in one process hold a
handful of threads, not one each. Threads are counted in /proc: Linux only.
"""

from __future__ import annotations

import asyncio
import sys
import threading

import httpx
import pytest

from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer, server_threads
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.sse_client import ask, read_stream, wait_until_finished
from tests.fixtures.waiting import await_until, await_value

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

STREAMS = 150
# What the process may add while the streams are open, whatever their number: the stream
# pool (4), the pipeline's threads, a request or two in flight. One per stream would be 150.
THREADS_ALLOWED = 20
# Generous: opening 150 streams on a loaded 2-core machine, then the threads of the
# opening requests exiting.
OPEN_LIMIT_S = 120.0


@pytest.fixture(scope="module")
def live_settings() -> dict[str, str]:
    # The answer is held at the stub while the streams open: let the provider call wait.
    return {"ANSWERS_PROVIDER_TIMEOUT": "300"}


async def _threads_once_at_most(pid: int, bound: int, limit_s: float) -> int:
    """The process's thread count once it is at most `bound` (polled), or when `limit_s` has passed."""
    return await await_value(lambda: server_threads(pid), lambda n: n <= bound, within=limit_s, every=0.2)


async def test_idle_streams_hold_no_thread_each_and_all_get_the_answer(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    release = threading.Event()
    pieces = ["Zebras graze ", "in grassland [1]."]
    stub.enqueue(Reply(pieces=pieces, gate=release))
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    opened = 0
    all_open = asyncio.Event()

    def on_event(event: object) -> None:
        nonlocal opened
        if getattr(event, "type", None) == "references":  # replayed from the store: now waiting
            opened += 1
            if opened == STREAMS:
                all_open.set()

    async with httpx.AsyncClient(base_url=live.url, timeout=OPEN_LIMIT_S, limits=limits) as client:
        accepted = await ask(client)
        before = server_threads(live.pid)
        streams = [
            asyncio.create_task(
                read_stream(client, accepted["events_url"], on_event=on_event, limit_s=2 * OPEN_LIMIT_S)
            )
            for _ in range(STREAMS)
        ]
        await asyncio.wait_for(all_open.wait(), OPEN_LIMIT_S)
        # The opening requests' threads go as their streams start waiting; wait for that, not a
        # fixed time. With a thread per stream the count stays above the bound until the deadline.
        held = await _threads_once_at_most(live.pid, before + THREADS_ALLOWED, 30.0)
        assert not any(s.done() for s in streams), "a stream ended while the answer was held"

        release.set()
        results = await asyncio.gather(*streams)
        answer = await wait_until_finished(client, accepted["id"])

    assert held <= before + THREADS_ALLOWED, (
        f"{STREAMS} idle streams: the server went from {before} to {held} threads"
    )
    assert answer["status"] == "done"
    for stream in results:
        assert stream.types[0] == "references"
        assert stream.types[-1] == "done"
        assert stream.delta_text == "".join(pieces)
        assert stream.events[-1].data["text"] == answer["text"]


JSON_ASKS = 100


async def test_json_asks_waiting_for_the_provider_hold_no_thread_each(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    """The JSON path (issue 35): the request waits for its generation without its thread."""
    release = threading.Event()
    stub.set_default(Reply(pieces=["Zebras graze ", "in grassland [1]."], gate=release))
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    try:
        async with httpx.AsyncClient(base_url=live.url, timeout=OPEN_LIMIT_S, limits=limits) as client:
            before = server_threads(live.pid)
            asked_before = len(stub.requests)
            asks = [
                asyncio.create_task(
                    client.post("/api/answers/", json={"question": f"{ZEBRA_QUESTION} ({i})"})
                )
                for i in range(JSON_ASKS)
            ]
            # Every ask has reached the provider (the stub holds it): all are waiting now.
            await await_until(
                lambda: len(stub.requests) - asked_before >= JSON_ASKS,
                within=OPEN_LIMIT_S,
                what="every ask to reach the provider",
                every=0.1,
            )
            assert len(stub.requests) - asked_before == JSON_ASKS, (
                "an ask reached the provider more than once"
            )
            held = await _threads_once_at_most(live.pid, before + THREADS_ALLOWED, 30.0)
            assert not any(ask.done() for ask in asks), "an ask was answered while the provider held it"

            release.set()
            responses = await asyncio.gather(*asks)
    finally:
        release.set()
        stub.reset()

    assert held <= before + THREADS_ALLOWED, (
        f"{JSON_ASKS} JSON asks in flight: the server went from {before} to {held} threads"
    )
    assert [r.status_code for r in responses] == [201] * JSON_ASKS
    assert {r.json()["text"] for r in responses} == {"Zebras graze in grassland [1]."}
