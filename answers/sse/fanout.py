"""Live delivery of stored events to the streams of every server process, tolerant of Redis faults.

Without REDIS_URL an event goes to this process's listeners (django-eventstream's
ListenerManager). With it, the event is published on Redis and each process's
listener hands it to its own streams: the message format is django-eventstream's,
so its stock listener understands ours.

What django-eventstream does not do, and this module does:

- Publishing never raises. While Redis is unreachable (a failed publish opens a
  short circuit so generation is not slowed by connect timeouts) events go to
  this process's listeners directly; when a publish succeeds again it first
  sends a `resync` message.
- The listener reconnects by itself after Redis restarts (the stock one dies
  with its connection and never resubscribes), and after reconnecting, or on a
  `resync` message, it makes every local stream re-read the event store from
  its last event id, so events published while Redis was away are delivered
  in order, without duplicates, and without restarting anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable
from functools import cache
from typing import Any

import redis
import redis.asyncio
from django_eventstream.event import Event
from django_eventstream.views import MAX_PENDING, Listener, get_listener_manager

from answers.conf import conf

logger = logging.getLogger(__name__)

# django-eventstream's Redis channel and message shape.
REDIS_CHANNEL = "events_channel"
# After a failed publish, skip Redis for this long (deliver locally) before trying again.
CIRCUIT_OPEN_SECONDS = 1.0
RECONNECT_MAX_SECONDS = 5.0
# Tells every process's listener to make its streams re-read the store.
RESYNC_MESSAGE = json.dumps({"resync": True})


def deliver_locally(event: Event) -> None:
    """Queue `event` for this process's listeners of its channel and wake them.

    django-eventstream's ListenerManager.add_to_queues, except for the wake-up: it calls
    call_soon_threadsafe once per listener, a write to the event loop's self-pipe each,
    and every write lets the loop take the GIL from the publishing thread (with 2,000
    streams on an answer, 2,000 hand-offs before the last stream is woken). Here each
    event loop gets one callback that wakes all of its listeners. As in the stock method,
    a listener with MAX_PENDING events queued gets none more: it is marked overflowed and
    re-reads the store.
    """
    manager = get_listener_manager()
    woken: dict[asyncio.AbstractEventLoop, list[Listener]] = {}
    with manager.lock:
        for listener in manager.listeners_by_channel.get(event.channel, ()):
            items = listener.channel_items.setdefault(event.channel, [])
            if len(items) < MAX_PENDING:
                items.append(event)
                woken.setdefault(listener.loop, []).append(listener)
            else:
                listener.overflow = True
    wake(woken)


def wake(by_loop: dict[asyncio.AbstractEventLoop, list[Listener]]) -> None:
    """Wake listeners from any thread: one call_soon_threadsafe per event loop, not per listener."""
    for loop, listeners in by_loop.items():
        loop.call_soon_threadsafe(_set_all, listeners)


def _set_all(listeners: list[Listener]) -> None:
    for listener in listeners:
        listener.aevent.set()


def resync_local_listeners() -> int:
    """Make every stream of this process re-read the store from its last event id."""
    manager = get_listener_manager()
    with manager.lock:
        listeners = {listener for group in manager.listeners_by_channel.values() for listener in group}
        for listener in listeners:
            listener.overflow = True
    by_loop: dict[asyncio.AbstractEventLoop, list[Listener]] = {}
    for listener in listeners:
        by_loop.setdefault(listener.loop, []).append(listener)
    wake(by_loop)
    return len(listeners)


class LocalFanout:
    """One process: events go straight to its listeners."""

    def publish(self, event: Event) -> None:
        deliver_locally(event)


class RedisFanout:
    """Every process: events go through Redis; this process's listeners directly while it is away.

    `clock` and `sleep` time the circuit (tests pass a fake clock's).
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._errors = (redis.RedisError, OSError)
        self._client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=2)
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._missed = False  # events were delivered locally only: other processes must resync
        self._resyncer: threading.Thread | None = None

    def publish(self, event: Event) -> None:
        message = json.dumps(
            {
                "channel": event.channel,
                "event_type": event.type,
                "data": event.data,
                "pub_id": str(event.id) if event.id is not None else None,
            }
        )
        with self._lock:
            if self._clock() < self._down_until:
                self._deliver_locally_only(event)
                return
            try:
                if self._missed:
                    self._client.publish(REDIS_CHANNEL, RESYNC_MESSAGE)
                    self._missed = False
                self._client.publish(REDIS_CHANNEL, message)
            except self._errors as exc:
                if not self._missed:
                    logger.warning(
                        "Redis publish failed (%s); delivering in this process until it is back", exc
                    )
                self._down_until = self._clock() + CIRCUIT_OPEN_SECONDS
                self._deliver_locally_only(event)

    def _deliver_locally_only(self, event: Event) -> None:
        """Other processes missed `event`: make sure a resync follows once Redis is back.

        The next publish sends it, but the event may have been the channel's last one
        (an answer's `done`), so a thread also sends it as soon as Redis answers again.
        Called with the lock held.
        """
        self._missed = True
        deliver_locally(event)
        if self._resyncer is None:
            self._resyncer = threading.Thread(
                target=self._resync_when_back, name="redis-fanout-resync", daemon=True
            )
            self._resyncer.start()

    def _resync_when_back(self) -> None:
        while True:
            with self._lock:
                wait = self._down_until - self._clock()
                if wait <= 0:
                    if not self._missed:  # a publish sent it meanwhile
                        self._resyncer = None
                        return
                    try:
                        self._client.publish(REDIS_CHANNEL, RESYNC_MESSAGE)
                    except self._errors:
                        self._down_until = self._clock() + CIRCUIT_OPEN_SECONDS
                        wait = CIRCUIT_OPEN_SECONDS
                    else:
                        self._missed = False
                        self._resyncer = None
                        logger.warning("Redis is back: publishing there again; other processes catch up")
                        return
            self._sleep(wait)


@cache
def fanout() -> LocalFanout | RedisFanout:
    url = conf.REDIS_URL.strip()
    return RedisFanout(url) if url else LocalFanout()


class ResilientRedisListener:
    """Takes the place of django-eventstream's RedisListener (see AnswersConfig.ready).

    `start()` runs for the life of the process: subscribe, hand messages to local
    listeners, and on any connection error wait (backing off) and subscribe again,
    then resync local streams.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.connected = asyncio.Event()
        self.subscriptions = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        # The stock manager starts this with a bare create_task: keep the task referenced.
        self._task = asyncio.current_task()
        delay = 0.1
        while True:
            client = redis.asyncio.Redis.from_url(
                self.url, socket_connect_timeout=1, health_check_interval=10
            )
            try:
                pubsub = client.pubsub()
                await pubsub.subscribe(REDIS_CHANNEL)
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        self.handle(message["data"])
                    elif message.get("type") == "subscribe":
                        self.subscribed()
                        delay = 0.1
            except asyncio.CancelledError:
                raise
            except (redis.RedisError, OSError) as exc:
                if self.connected.is_set():
                    logger.warning("Redis listener lost its connection (%s); reconnecting", exc)
            except Exception:
                logger.exception("Redis listener failed; reconnecting")
            finally:
                self.connected.clear()
                with contextlib.suppress(Exception):  # the connection is already gone
                    await client.aclose()
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX_SECONDS)

    def subscribed(self) -> None:
        """Redis confirmed the subscription: from now on nothing published is missed.

        Whatever was published before (while Redis was away, or, the first time, between
        a stream's first read of the store and this moment) is in the store: every local
        stream re-reads it from its last id. Resyncing on the confirmation, not on sending
        SUBSCRIBE, leaves no window in which an event is neither read nor received.
        """
        self.subscriptions += 1
        count = resync_local_listeners()
        if self.subscriptions > 1:
            logger.warning("Redis is back: listening again, %d stream(s) catching up", count)
        self.connected.set()

    def handle(self, raw: bytes | str) -> None:
        try:
            message: dict[str, Any] = json.loads(raw)
        except ValueError:
            logger.warning("ignoring a malformed Redis event message")
            return
        if message.get("resync"):
            resync_local_listeners()
            return
        pub_id = message.get("pub_id")
        event = Event(
            message["channel"],
            message["event_type"],
            message["data"],
            id=int(pub_id) if pub_id is not None else None,
        )
        deliver_locally(event)


def install_redis_listener() -> None:
    """Replace django-eventstream's listener, which does not resubscribe after Redis restarts."""
    url = conf.REDIS_URL.strip()
    manager = get_listener_manager()
    if url and manager.redis_listener is not None:
        manager.redis_listener = ResilientRedisListener(url)
