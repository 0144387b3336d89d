"""Live delivery pieces on their own: a stream's live-event checks, the publisher's circuit, the listener.

- answers.sse.stream._live sends each live event once and in order: an event the
  client already has is skipped, and a gap (an event this process never saw
  live) ends the live phase so that the stream re-reads the store.
- answers.sse.fanout.RedisFanout never raises: with Redis unreachable it returns at
  once and delivers to this process's listeners; once Redis answers again a
  `resync` message goes out before anything else (and by itself, when no other
  event follows).
- answers.sse.fanout.ResilientRedisListener resubscribes after Redis restarts and
  makes the local streams re-read the store.

Redis here is a private redis-server (tests/fixtures/redis_server.py) this
module stops and starts. The circuit runs on a fake clock (tests/fixtures/clock.py),
and the number of connections Redis has accepted says whether a publish tried it:
no test measures how long anything took.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from django_eventstream.event import Event
from django_eventstream.views import Listener, get_listener_manager

from answers.retrieval.access import NOTHING_WITHHELD
from answers.sse import fanout as fanout_module
from answers.sse.fanout import CIRCUIT_OPEN_SECONDS, REDIS_CHANNEL, RedisFanout, ResilientRedisListener
from answers.sse.open_streams import OpenStream
from answers.sse.stream import _live, listen, unlisten
from tests.fixtures.clock import MOMENT, FakeClock
from tests.fixtures.redis_server import PrivateRedis
from tests.fixtures.waiting import await_until, wait_until

CHANNEL = "answer-00000000-0000-0000-0000-000000000001"


def _event(eid: int, kind: str = "delta", channel: str = CHANNEL) -> Event:
    return Event(channel, kind, json.dumps({"text": f"piece {eid}"}), id=eid)


def _ids(body: str) -> list[int]:
    """The event numbers of an SSE body's `id:` lines (`answer-...:N`)."""
    return [int(line.rsplit(":", 1)[1]) for line in body.splitlines() if line.startswith("id:")]


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    """A stream's listener, registered in the test's event loop (the one it wakes)."""
    registered = listen({CHANNEL})
    yield registered
    unlisten(registered)


async def _next(chunks: AsyncIterator[str], within: float = 2.0) -> str:
    return await asyncio.wait_for(chunks.__anext__(), within)


# --- stream._live


async def test_live_skips_events_already_sent_and_sends_the_next_ones_in_order(listener: Listener) -> None:
    last_ids = {CHANNEL: 3}
    for eid in (2, 3, 4, 5):  # 2 and 3 came from the store already
        get_listener_manager().add_to_queues(CHANNEL, _event(eid))
    chunks = _live(listener, last_ids, NOTHING_WITHHELD, OpenStream(None))
    try:
        body = await _next(chunks)
        assert _ids(body) == [4, 5]
        assert body.count("event: delta") == 2
        assert last_ids == {CHANNEL: 5}

        get_listener_manager().add_to_queues(CHANNEL, _event(5))  # again (Redis and local, say)
        get_listener_manager().add_to_queues(CHANNEL, _event(6))
        assert _ids(await _next(chunks)) == [6]
    finally:
        await chunks.aclose()


async def test_a_duplicate_alone_sends_nothing_and_the_stream_keeps_waiting(listener: Listener) -> None:
    last_ids = {CHANNEL: 7}
    get_listener_manager().add_to_queues(CHANNEL, _event(7))
    chunks = _live(listener, last_ids, NOTHING_WITHHELD, OpenStream(None))
    try:
        with pytest.raises(TimeoutError):
            await _next(chunks, within=0.3)
        assert last_ids == {CHANNEL: 7}
    finally:
        await chunks.aclose()


async def test_a_gap_ends_the_live_phase_after_the_events_before_it(listener: Listener) -> None:
    last_ids = {CHANNEL: 3}
    for eid in (4, 6, 7):  # 5 was never seen live (published while Redis was away)
        get_listener_manager().add_to_queues(CHANNEL, _event(eid))
    chunks = _live(listener, last_ids, NOTHING_WITHHELD, OpenStream(None))
    body = await _next(chunks)
    assert _ids(body) == [4]
    with pytest.raises(StopAsyncIteration):  # the caller re-reads the store from 4
        await _next(chunks)
    assert last_ids == {CHANNEL: 4}


async def test_a_gap_at_the_first_live_event_sends_nothing_and_returns(listener: Listener) -> None:
    last_ids = {CHANNEL: 3}
    get_listener_manager().add_to_queues(CHANNEL, _event(5))
    chunks = _live(listener, last_ids, NOTHING_WITHHELD, OpenStream(None))
    with pytest.raises(StopAsyncIteration):
        await _next(chunks)
    assert last_ids == {CHANNEL: 3}


async def test_a_resync_ends_the_live_phase(listener: Listener) -> None:
    chunks = _live(listener, {CHANNEL: 3}, NOTHING_WITHHELD, OpenStream(None))
    assert fanout_module.resync_local_listeners() >= 1
    with pytest.raises(StopAsyncIteration):
        await _next(chunks)


# --- RedisFanout: the circuit


@pytest.fixture
def redis_up(private_redis: PrivateRedis) -> Iterator[PrivateRedis]:
    if not private_redis.running:
        private_redis.start()
    yield private_redis
    if not private_redis.running:
        private_redis.start()


class Connections:
    """How many connections Redis has accepted (INFO stats), read over one connection of its own:
    each publish that tries Redis while it refuses opens one, one that skips it opens none."""

    def __init__(self, server: PrivateRedis) -> None:
        self._client = server.client()
        self._client.ping()

    def __call__(self) -> int:
        return int(self._client.info("stats")["total_connections_received"])


@pytest.fixture
def refusing(redis_up: PrivateRedis) -> str:
    """A URL of the private Redis that every publish fails on (an unknown user): Redis is tried
    and refuses at once, a RedisError as when it is unreachable, and each try is counted."""
    return f"redis://nobody:wrong@127.0.0.1:{redis_up.port}/0"


async def test_publishing_while_redis_refuses_tries_it_once_and_delivers_locally(
    listener: Listener, caplog: pytest.LogCaptureFixture, redis_up: PrivateRedis, refusing: str
) -> None:
    clock = FakeClock()  # time stands still: the circuit stays open
    publisher = RedisFanout(refusing, clock=clock, sleep=clock.sleep)
    connections = Connections(redis_up)
    before = connections()
    caplog.set_level(logging.WARNING, logger="answers.sse.fanout")
    for eid in range(1, 21):
        publisher.publish(_event(eid))

    assert connections() == before + 1, "one try opens the circuit; the other 19 do not wait on Redis"
    await asyncio.wait_for(listener.aevent.wait(), 2)
    queued = listener.channel_items[CHANNEL]
    # At most MAX_PENDING are queued; the rest mark the listener overflowed (it re-reads the store).
    assert [int(e.id) for e in queued] == list(range(1, len(queued) + 1))
    assert listener.overflow
    failures = [r for r in caplog.records if "Redis publish failed" in r.getMessage()]
    assert len(failures) == 1, "one warning per outage, not one per event"


async def test_the_circuit_stays_open_for_exactly_its_time_then_redis_is_tried_again(
    listener: Listener, redis_up: PrivateRedis, refusing: str
) -> None:
    clock = FakeClock()
    publisher = RedisFanout(refusing, clock=clock, sleep=clock.sleep)
    connections = Connections(redis_up)
    before = connections()

    publisher.publish(_event(1))  # refused: the circuit opens
    assert connections() == before + 1
    clock.advance(CIRCUIT_OPEN_SECONDS - MOMENT)
    publisher.publish(_event(2))  # a moment before it closes: not tried
    assert connections() == before + 1

    clock.advance(MOMENT)  # exactly CIRCUIT_OPEN_SECONDS: the resync thread tries Redis by itself
    wait_until(lambda: connections() == before + 2, within=10, what="the resync thread to try Redis")
    publisher.publish(_event(3))  # refused again: open for another CIRCUIT_OPEN_SECONDS
    clock.advance(CIRCUIT_OPEN_SECONDS - MOMENT)
    publisher.publish(_event(4))
    assert connections() == before + 2

    await asyncio.wait_for(listener.aevent.wait(), 2)
    assert [int(e.id) for e in listener.channel_items[CHANNEL]] == [1, 2, 3, 4]  # each delivered here


class Subscriber:
    """Records what is published on django-eventstream's Redis channel, in order, from the moment
    Redis confirmed the subscription (when the constructor returns)."""

    def __init__(self, server: PrivateRedis) -> None:
        self.pubsub = server.client().pubsub()
        self.pubsub.subscribe(REDIS_CHANNEL)
        self.messages: list[dict[str, Any]] = []
        confirmed = wait_until(
            lambda: self.pubsub.get_message(timeout=0.1), within=10, what="Redis to confirm the subscription"
        )
        assert confirmed["type"] == "subscribe"

    def wait_for(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            message = self.pubsub.get_message(timeout=0.1)
            if message is not None and message["type"] == "message":
                self.messages.append(json.loads(message["data"]))
        return self.messages

    def close(self) -> None:
        self.pubsub.close()


@pytest.fixture
def subscriber(redis_up: PrivateRedis) -> Iterator[Subscriber]:
    sub = Subscriber(redis_up)
    yield sub
    sub.close()


def test_with_redis_up_events_go_through_redis_only(subscriber: Subscriber, redis_up: PrivateRedis) -> None:
    publisher = RedisFanout(redis_up.url)
    publisher.publish(_event(1, "references"))
    publisher.publish(_event(2))
    messages = subscriber.wait_for(2)
    assert [(m["event_type"], m["pub_id"]) for m in messages] == [("references", "1"), ("delta", "2")]
    assert messages[1]["channel"] == CHANNEL
    assert json.loads(messages[1]["data"]) == {"text": "piece 2"}


async def test_when_redis_is_back_a_resync_goes_out_first_even_if_nothing_else_is_published(
    subscriber: Subscriber, redis_up: PrivateRedis, listener: Listener
) -> None:
    clock = FakeClock()
    publisher = RedisFanout(redis_up.url, clock=clock, sleep=clock.sleep)
    publisher.publish(_event(1))
    assert [m.get("pub_id") for m in subscriber.wait_for(1)] == ["1"]

    subscriber.close()
    redis_up.stop()
    publisher.publish(_event(2))  # e.g. an answer's last event, `done`
    await asyncio.wait_for(listener.aevent.wait(), 2)
    assert [int(e.id) for e in listener.channel_items[CHANNEL]] == [2]  # delivered in this process

    redis_up.start()
    again = Subscriber(redis_up)
    try:
        # No further publish: the resync still comes, once the circuit lets Redis be tried again.
        clock.advance(CIRCUIT_OPEN_SECONDS)
        assert again.wait_for(1, timeout=10) == [{"resync": True}]
        publisher.publish(_event(3))
        assert [m.get("pub_id") for m in again.wait_for(2)][1:] == ["3"]
        assert again.messages.count({"resync": True}) == 1
    finally:
        again.close()


async def test_the_next_successful_publish_sends_the_resync_before_the_event(
    redis_up: PrivateRedis, listener: Listener
) -> None:
    clock = FakeClock()
    publisher = RedisFanout(redis_up.url, clock=clock, sleep=clock.sleep)
    redis_up.stop()
    publisher.publish(_event(1))  # opens the circuit; delivered locally
    redis_up.start()
    sub = Subscriber(redis_up)
    try:
        # Publish as the circuit closes (the background resync may go out first: same order).
        clock.advance(CIRCUIT_OPEN_SECONDS)
        publisher.publish(_event(2))
        publisher.publish(_event(3))
        messages = sub.wait_for(3)
        assert messages[0] == {"resync": True}
        assert [m.get("pub_id") for m in messages[1:]] == ["2", "3"]  # one resync, none between
    finally:
        sub.close()


# --- ResilientRedisListener


async def test_the_listener_resyncs_on_subscribing_and_again_after_redis_restarts(
    redis_up: PrivateRedis, listener: Listener
) -> None:
    redis_listener = ResilientRedisListener(redis_up.url)
    task = asyncio.get_running_loop().create_task(redis_listener.start())
    try:
        await asyncio.wait_for(redis_listener.connected.wait(), 10)
        # Streams that read the store before the subscription was confirmed read it again.
        assert listener.overflow
        listener.overflow = False
        listener.aevent.clear()

        publisher = RedisFanout(redis_up.url)
        publisher.publish(_event(1))
        await asyncio.wait_for(listener.aevent.wait(), 5)
        assert [int(e.id) for e in listener.channel_items[CHANNEL]] == [1]
        assert not listener.overflow
        listener.channel_items = {}
        listener.aevent.clear()

        redis_up.stop()
        await await_until(
            lambda: not redis_listener.connected.is_set(), within=10, what="the listener to notice"
        )
        redis_up.start()
        await asyncio.wait_for(redis_listener.connected.wait(), 20)
        assert redis_listener.subscriptions == 2
        assert listener.overflow, "after Redis came back, local streams re-read the store"
        assert redis_up.subscribers(REDIS_CHANNEL) == 1

        # A resync message from another process does the same.
        listener.overflow = False
        redis_up.client().publish(REDIS_CHANNEL, json.dumps({"resync": True}))
        await await_until(lambda: listener.overflow, within=5, what="the resync message")
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
