"""Redis faults do not stop answers, and streams on every process still get every event, once, in order.

Two daphne processes (A and B) share one database and one private redis-server
(tests/fixtures/redis_server.py), which these tests stop and start again on
the same port, as a Redis restart or outage would, without restarting either
server process.

- Redis down: an answer asked on A completes and is stored; a stream on A gets
  its events live (local delivery), a late stream replays them all.
- Redis down while a stream on B waits: B gets nothing meanwhile, and once
  Redis is back B's stream catches up from the store (resync), in order and
  without duplicates; the next answer reaches B live through Redis again.
- Redis bounced in the middle of an answer: B's stream still ends with `done`.
- Publishing never fails generation: no traceback in the logs, answers done.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer, SecondProcess, manage
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.redis_server import PrivateRedis
from tests.fixtures.sse_client import sse_messages
from tests.fixtures.waiting import await_until

REDIS_CHANNEL = "events_channel"  # django-eventstream's, answers.sse.fanout.REDIS_CHANNEL
TIMEOUT_S = 30.0  # generous: 2 cores, other tests running alongside
CATCH_UP_TIMEOUT_S = 45.0  # a listener backs off up to 5 s between reconnects


@dataclass
class Servers:
    a: LiveServer
    b_url: str
    b_pid: int
    b_log: Path
    redis: PrivateRedis

    def log_a(self) -> str:
        return self.a.log_path.read_text(errors="replace")

    def log_b(self) -> str:
        return self.b_log.read_text(errors="replace")

    def logs(self) -> str:
        return (
            f"--- A\n{self.log_a()[-3000:]}\n--- B\n{self.log_b()[-3000:]}\n"
            f"--- redis\n{self.redis.log_tail()}"
        )


@pytest.fixture(scope="module")
def live_settings(private_redis: PrivateRedis) -> dict[str, str]:
    return {"REDIS_URL": private_redis.url, "ANSWERS_PROVIDER_TIMEOUT": "60"}


@pytest.fixture(scope="module")
def servers(stub_served: LiveServer, second_process: SecondProcess, private_redis: PrivateRedis) -> Servers:
    """The module's live server (A) and a second process (B), both on the private Redis."""
    return Servers(
        a=stub_served,
        b_url=second_process.url,
        b_pid=second_process.pid,
        b_log=second_process.log_path,
        redis=private_redis,
    )


@pytest.fixture
async def deployment(servers: Servers, live: LiveServer) -> AsyncIterator[Servers]:
    """Redis up and both processes' listeners subscribed; Redis up again after the test.

    (`live`: the stub reset, no reply queued by an earlier test.)"""
    if not servers.redis.running:
        servers.redis.start()
    await listeners_subscribed(servers)
    yield servers
    if not servers.redis.running:
        servers.redis.start()


async def listeners_subscribed(servers: Servers) -> None:
    """Wait until both processes listen on Redis (each starts listening with its first stream)."""
    async with (
        httpx.AsyncClient(base_url=servers.a.url, timeout=TIMEOUT_S) as on_a,
        httpx.AsyncClient(base_url=servers.b_url, timeout=TIMEOUT_S) as on_b,
    ):
        if servers.redis.subscribers(REDIS_CHANNEL) < 2:
            # A process starts listening with its first stream: open one on each.
            accepted = await ask(on_a)
            for client in (on_a, on_b):
                async with SSEReader(client, accepted["events_url"]) as reader:
                    await reader.wait_for_type("done")
    await await_until(
        lambda: servers.redis.subscribers(REDIS_CHANNEL) >= 2, within=CATCH_UP_TIMEOUT_S, what="listeners"
    )


# --- helpers


async def ask(client: httpx.AsyncClient, question: str = ZEBRA_QUESTION) -> dict[str, Any]:
    response = await client.post("/api/answers/", json={"question": question, "stream": True})
    assert response.status_code == 202, response.text
    body: dict[str, Any] = response.json()
    return body


async def finished(client: httpx.AsyncClient, answer_id: str) -> dict[str, Any]:
    async def status() -> dict[str, Any] | None:
        response = await client.get(f"/api/answers/{answer_id}/")
        assert response.status_code == 200, (response.status_code, response.text[:2000])
        body: dict[str, Any] = response.json()
        return body if body["status"] in ("done", "failed") else None

    return await await_until(status, within=TIMEOUT_S, what=f"answer {answer_id} to finish")


@dataclass(frozen=True)
class SSE:
    type: str
    id: int | None  # the number after the channel in the `id:` line
    data: Any


@dataclass
class SSEReader:
    """Reads one stream in the background, keeping every event as sent (duplicates included)."""

    client: httpx.AsyncClient
    url: str
    events: list[SSE] = field(default_factory=list)
    status: int | None = None
    _task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> SSEReader:
        self._task = asyncio.get_running_loop().create_task(self._read())
        await await_until(
            lambda: self.status is not None or self._task.done(),  # type: ignore[union-attr]
            within=TIMEOUT_S,
            what="the stream to open",
        )
        if self._task.done():
            self._task.result()
        assert self.status == 200
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _read(self) -> None:
        path = httpx.URL(self.url).raw_path.decode()
        async with self.client.stream("GET", path, timeout=httpx.Timeout(TIMEOUT_S, read=None)) as response:
            self.status = response.status_code
            async for fields in sse_messages(response.aiter_lines()):
                kind = fields.get("event", "message")
                raw_id = fields.get("id")
                raw = fields.get("data", "")
                if kind in ("stream-open", "keep-alive"):
                    continue
                event_id = int(raw_id.rsplit(":", 1)[1]) if raw_id else None
                self.events.append(SSE(kind, event_id, json.loads(raw) if raw else None))

    def of(self, kind: str) -> list[SSE]:
        return [e for e in self.events if e.type == kind]

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    async def wait_for_type(self, kind: str, within: float = TIMEOUT_S) -> SSE:
        found: list[SSE] = await await_until(
            lambda: self.of(kind), within=within, what=f"`{kind}` on {self.url}"
        )
        return found[0]

    def assert_complete_once_in_order(self, pieces: list[str] | None = None) -> None:
        """references, deltas and cites, done; `id:`s 1, 2, 3, ... with no gap and no repeat."""
        assert [e.id for e in self.events] == list(range(1, len(self.events) + 1)), self.events
        assert self.types[0] == "references"
        assert self.types[-1] == "done"
        assert set(self.types[1:-1]) <= {"delta", "cite"}
        assert "delta" in self.types
        if pieces is not None:
            assert "".join(e.data["text"] for e in self.of("delta")) == "".join(pieces)
            assert "".join(e.data["display"] for e in self.of("delta")) == self.of("done")[0].data["text"]


MARKER = "test-marker"
_SEND_MARKER = (
    "import uuid; from answers.sse.channels import channel_for; from answers.sse.publish import send; "
    "send(channel_for(uuid.UUID({answer_id!r})), {marker!r}, {{}})"
)


async def nothing_more_on_its_way(servers: Servers, reader: SSEReader, answer_id: str) -> None:
    """Proves that nothing else will reach `reader` (no event sent twice), without waiting a while.

    A marker event is sent on the answer's channel after everything else, by A's own path
    (stored, then published through Redis); delivery on a stream is in order, so anything sent
    twice arrives before it. Once it is there it must be the last event, and is set aside.
    """
    script = _SEND_MARKER.format(answer_id=answer_id, marker=MARKER)
    await asyncio.to_thread(manage, ["shell", "-c", script], servers.a.env)
    await reader.wait_for_type(MARKER, CATCH_UP_TIMEOUT_S)
    assert reader.types.count(MARKER) == 1, reader.types
    assert reader.events[-1].type == MARKER, f"events after the marker: {reader.events}"
    del reader.events[-1]


def pieces_of(tag: str, count: int) -> list[str]:
    return [f"Zebras {tag} graze piece {i} [{1 + i % 2}]. " for i in range(count)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --- the tests


async def test_with_redis_down_an_answer_completes_is_stored_and_streams_live_on_its_own_process(
    deployment: Servers, stub: StubOpenAIServer
) -> None:
    pieces = pieces_of("down", 6)
    release, rest = threading.Event(), threading.Event()
    stub.enqueue(Reply(pieces=pieces, delay_s=0.05, gate=release, resume=rest))

    deployment.redis.stop()
    async with (
        httpx.AsyncClient(base_url=deployment.a.url, timeout=TIMEOUT_S) as on_a,
        httpx.AsyncClient(base_url=deployment.b_url, timeout=TIMEOUT_S) as on_b,
    ):
        accepted = await ask(on_a)
        async with SSEReader(on_a, accepted["events_url"]) as same_process:
            await same_process.wait_for_type("references")
            release.set()  # the model starts answering only now: what follows is live
            # Delivered as generated, not replayed at the end in one go: the first piece is here
            # while the model still holds the rest.
            first = await same_process.wait_for_type("delta")
            rest.set()
            await same_process.wait_for_type("done")

        fetched = await finished(on_a, accepted["id"])
        assert fetched["status"] == "done", fetched

        same_process.assert_complete_once_in_order(pieces)
        assert first.data["text"] == pieces[0]
        assert first is same_process.of("delta")[0]
        done = same_process.of("done")[0].data
        assert {k: done[k] for k in ("text", "references", "fallback")} == {
            k: fetched[k] for k in ("text", "references", "fallback")
        }

        # Stored: a late stream (on either process; B shares the database) replays everything.
        for client in (on_a, on_b):
            async with SSEReader(client, accepted["events_url"]) as late:
                await late.wait_for_type("done")
            late.assert_complete_once_in_order(pieces)
            assert late.of("done")[0].data == done

    assert not deployment.redis.running  # all of it with Redis down
    assert "Redis publish failed" in deployment.log_a()


async def test_a_stream_on_another_process_catches_up_when_redis_returns_then_gets_answers_live(
    deployment: Servers, stub: StubOpenAIServer
) -> None:
    pieces = pieces_of("missed", 5)
    release = threading.Event()
    stub.enqueue(Reply(pieces=pieces, delay_s=0.2, gate=release))
    a_pid, b_pid = deployment.a.pid, deployment.b_pid

    async with (
        httpx.AsyncClient(base_url=deployment.a.url, timeout=TIMEOUT_S) as on_a,
        httpx.AsyncClient(base_url=deployment.b_url, timeout=TIMEOUT_S) as on_b,
    ):
        accepted = await ask(on_a)
        async with SSEReader(on_b, accepted["events_url"]) as on_b_stream:
            await on_b_stream.wait_for_type("references")

            deployment.redis.stop()
            release.set()
            fetched = await finished(on_a, accepted["id"])  # generated on A while Redis is down
            assert fetched["status"] == "done", fetched
            # Nothing reached B during the outage (checked over all of it, not a while of it: the
            # stream is read on this event loop, which does not run again before Redis is back).
            assert on_b_stream.types == ["references"], "B got events with Redis down: not under test"
            deployment.redis.start()  # same port; neither server process restarts
            await on_b_stream.wait_for_type("done", CATCH_UP_TIMEOUT_S)
            await nothing_more_on_its_way(deployment, on_b_stream, accepted["id"])

        on_b_stream.assert_complete_once_in_order(pieces)
        assert on_b_stream.of("done")[0].data["text"] == fetched["text"]

        # Redis is up again: the next answer asked on A reaches a stream on B live, through Redis.
        await await_until(
            lambda: deployment.redis.subscribers(REDIS_CHANNEL) >= 2,
            within=CATCH_UP_TIMEOUT_S,
            what="listeners back",
        )
        pieces = pieces_of("after", 6)
        release, rest = threading.Event(), threading.Event()
        stub.enqueue(Reply(pieces=pieces, delay_s=0.05, gate=release, resume=rest))
        accepted = await ask(on_a)
        async with SSEReader(on_b, accepted["events_url"]) as next_stream:
            await next_stream.wait_for_type("references")
            release.set()
            # The first piece reaches B while A's model still holds the rest: live, through Redis.
            first = await next_stream.wait_for_type("delta")
            rest.set()
            await next_stream.wait_for_type("done")
        next_stream.assert_complete_once_in_order(pieces)
        assert first.data["text"] == pieces[0]

    assert (deployment.a.pid, deployment.b_pid) == (a_pid, b_pid)
    assert alive(a_pid), deployment.logs()
    assert alive(b_pid), deployment.logs()
    assert "Redis is back" in deployment.log_b()


async def test_a_stream_on_another_process_gets_every_event_when_redis_restarts_mid_answer(
    deployment: Servers, stub: StubOpenAIServer
) -> None:
    """The outage falls inside the answer: some events go through Redis, some only to A, then Redis again."""
    sent = threading.Event()
    pieces = pieces_of("bounce", 12)

    def on_piece(index: int, piece: str, at: float) -> None:
        if index == 2:
            sent.set()

    stub.enqueue(Reply(pieces=pieces, delay_s=0.25, on_piece=on_piece))
    async with (
        httpx.AsyncClient(base_url=deployment.a.url, timeout=TIMEOUT_S) as on_a,
        httpx.AsyncClient(base_url=deployment.b_url, timeout=TIMEOUT_S) as on_b,
    ):
        accepted = await ask(on_a)
        async with SSEReader(on_b, accepted["events_url"]) as on_b_stream:
            await await_until(sent.is_set, within=TIMEOUT_S, what="the third piece")
            failed_before = deployment.log_a().count("Redis publish failed")
            deployment.redis.stop()
            # Down until A has published into the outage (its warning is logged), so some events
            # went only to A.
            await await_until(
                lambda: deployment.log_a().count("Redis publish failed") > failed_before,
                within=TIMEOUT_S,
                what="A to publish while Redis is down",
            )
            deployment.redis.start()
            fetched = await finished(on_a, accepted["id"])
            await on_b_stream.wait_for_type("done", CATCH_UP_TIMEOUT_S)
            await nothing_more_on_its_way(deployment, on_b_stream, accepted["id"])

    assert fetched["status"] == "done", fetched
    on_b_stream.assert_complete_once_in_order(pieces)
    assert on_b_stream.of("done")[0].data["text"] == fetched["text"]


async def test_publishing_never_fails_generation_while_redis_is_down(
    deployment: Servers, stub: StubOpenAIServer
) -> None:
    log_a_from, log_b_from = len(deployment.log_a()), len(deployment.log_b())
    stub.set_default(Reply(pieces=pieces_of("many", 4), delay_s=0.1))

    deployment.redis.stop()
    async with (
        httpx.AsyncClient(base_url=deployment.a.url, timeout=TIMEOUT_S) as on_a,
        httpx.AsyncClient(base_url=deployment.b_url, timeout=TIMEOUT_S) as on_b,
    ):
        asked = await asyncio.gather(*(ask(client) for client in (on_a, on_a, on_a, on_b, on_b)))
        results = await asyncio.gather(*(finished(on_a, accepted["id"]) for accepted in asked))
        # A JSON (non-streaming) ask publishes nothing a client waits for, but it must work too.
        json_answer = await on_b.post("/api/answers/", json={"question": ZEBRA_QUESTION})

    assert [r["status"] for r in results] == ["done"] * len(results), results
    assert all(r["text"] for r in results)
    assert json_answer.status_code == 201, json_answer.text
    assert json_answer.json()["status"] == "done"

    during_a, during_b = deployment.log_a()[log_a_from:], deployment.log_b()[log_b_from:]
    for name, log in (("A", during_a), ("B", during_b)):
        assert "Traceback" not in log, f"{name}'s log while Redis was down:\n{log[-4000:]}"
        # The fallback was taken, and said so once per outage rather than once per event.
        assert 1 <= log.count("Redis publish failed") <= 2, f"{name}'s log:\n{log[-4000:]}"
