"""Publishing an answer's events: stored first, then delivered live; the SSE path's publisher.

Every event is stored (answers.sse.storage) before it is published, so a client
that connects late replays the channel from its start. Publishing then reaches
live listeners: through Redis when REDIS_URL is set (every server process), else
in this process. Redis faults never stop an answer: events are stored anyway,
this process's listeners get them directly, and other processes' listeners
re-read the store once Redis is back (answers.sse.fanout).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.core.serializers.json import DjangoJSONEncoder
from django_eventstream.event import Event
from django_eventstream.utils import get_storage

from answers import db, payloads
from answers.citations import LiveDisplay, Step
from answers.citations.trail import run_steps
from answers.conf import conf
from answers.models import Answer
from answers.retrieval.types import RetrievedSource
from answers.sse import grip
from answers.sse.channels import channel_for
from answers.sse.events import CITE, DELTA, DONE, ERROR, REFERENCES
from answers.sse.fanout import fanout
from answers.sse.storage import AnswerEventStorage

logger = logging.getLogger(__name__)

# Deltas are coalesced to one per interval: with `references` and `done`, an answer stores
# at most 10 events per second of generation (event storage cost; BENCHMARKS.md), plus
# one `cite` per source cited.
DELTA_INTERVAL_SECONDS = 0.15
# Feeding one answer's live display may take this many seconds of CPU in all; past them the
# rest of its display comes at the end (DeltaCoalescer). An ordinary answer takes milliseconds.
LIVE_BUDGET_SECONDS = 0.5
# A stretch (with what the display holds back) up to this long is fed on the event loop: the
# hop to a thread would cost more than the feeding.
INLINE_FEED_CHARS = 256
# The live display is fed at most this much at a time, so the budget is checked often enough.
FEED_SLICE_CHARS = 256
LIVE_DISPLAY_THREADS = 4

T = TypeVar("T")


def send(channel: str, event_type: str, payload: dict[str, Any]) -> Event:
    """Store the event, then deliver it live (Redis or this process) and to a GRIP proxy if any.

    Only storing can fail (the database is the record); delivery problems are logged,
    and clients catch up from the store.
    """
    return send_all(channel, [(event_type, payload)])[0]


def send_all(channel: str, events: Sequence[tuple[str, dict[str, Any]]]) -> list[Event]:
    """send() for several events of one channel, in order: stored in one transaction when the
    storage can (AnswerEventStorage.append_events), then each delivered."""
    if not events:
        return []
    encoded = [(event_type, json.dumps(payload, cls=DjangoJSONEncoder)) for event_type, payload in events]
    storage = get_storage()
    stored: list[Event]
    if isinstance(storage, AnswerEventStorage):
        stored = storage.append_events(channel, encoded)
    else:  # another storage class configured (the stock one, in benchmarks): one append each
        stored = [storage.append_event(channel, event_type, data) for event_type, data in encoded]
    to_proxy = grip.proxy_configured()  # without a GRIP proxy nobody is published to
    for event, (event_type, data) in zip(stored, encoded, strict=True):
        fanout().publish(event)
        if not to_proxy:
            continue
        try:
            grip.publish(channel, event_type, data, event.id)
        except Exception:
            logger.warning("event %s:%s not published to the GRIP proxy", channel, event.id, exc_info=True)
    return stored


def publish_references(answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> None:
    references = [payloads.reference_payload(s, s.number) for s in sources]
    send(channel_for(answer_id), REFERENCES, {"references": references})


@dataclass(frozen=True)
class Delta:
    """One coalesced stretch: the raw text, its display (docs/citations.md, "The live display"),
    and the `cite` payloads of the sources it cites first, which go out before it."""

    text: str
    display: str
    cites: list[dict[str, Any]] = field(default_factory=list)


def delta_events(delta: Delta) -> list[tuple[str, dict[str, Any]]]:
    """The events one coalesced stretch publishes, in order: its `cite`s, then its `delta`."""
    events: list[tuple[str, dict[str, Any]]] = [(CITE, cite) for cite in delta.cites]
    if delta.text or delta.display:
        events.append((DELTA, {"text": delta.text, "display": delta.display}))
    return events


def publish_delta(answer_id: uuid.UUID, delta: Delta) -> None:
    send_all(channel_for(answer_id), delta_events(delta))


def publish_done(answer: Answer) -> None:
    send(channel_for(answer.id), DONE, payloads.answer_done_payload(answer=answer))


def publish_error(answer_id: uuid.UUID, detail: str) -> None:
    send(channel_for(answer_id), ERROR, {"detail": detail})


@dataclass(frozen=True)
class _Fed:
    """What one feed of the live display gave: its steps, the seconds it took, whether it took the
    whole stretch (False: it stopped, over budget)."""

    steps: list[Step]
    seconds: float
    whole: bool


class DeltaCoalescer:
    """Coalesces provider pieces into at most ~10 `delta` events a second, each with its display.

    A flush feeds the raw text gathered since the last one through the answer's
    LiveDisplay, then publishes the first citations it found (`cite` events), then
    the raw text and the display (one `delta`). The concatenation of the published
    `text`s is exactly the raw text, and of the `display`s the final text.

    The live display is CPU work that grows with what it holds back: a stretch that
    is not small is fed on a worker thread, so the event loop (every other request
    and stream of the process) never waits for it. And it has a budget: once feeding
    one answer's display has taken `live_budget` seconds in all (a flood of markers
    a prompt injection asked for), the display stops being live, the deltas carry
    the raw text with an empty display, and at close the rest of the display is
    what the whole-text functions (linear) give, minus what was shown.

    `clock` and `sleep` pace the deltas (tests pass a fake clock's); the live budget is
    always measured on the real clock.
    """

    def __init__(
        self,
        answer_id: uuid.UUID,
        sources: Sequence[RetrievedSource] = (),
        *,
        dialects: Collection[str] | None = None,
        interval: float = DELTA_INTERVAL_SECONDS,
        send: Callable[[uuid.UUID, Delta], Awaitable[Any]] | None = None,
        live_budget: float = LIVE_BUDGET_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self._answer_id = answer_id
        self._interval = interval
        self._clock = clock
        self._sleep = sleep
        self._send = send or sync_to_async(publish_delta)
        self._sources = {source.number: source for source in sources}
        self._dialects = conf.MARKER_DIALECTS if dialects is None else dialects
        self._live: LiveDisplay | None = LiveDisplay(len(sources), self._dialects)
        self._live_budget = live_budget
        self._live_spent = 0.0
        self._raw: list[str] = []  # every piece, for the display at close once it is no longer live
        self._unfed: list[str] = []  # raw text not yet through the live display
        self._pending: list[str] = []  # raw text not yet published
        self._display: list[str] = []
        self._cites: list[dict[str, Any]] = []
        self._shown = 0  # characters of display gathered so far
        self._cited = 0  # sources cited so far
        self._fed_chars = 0
        self._closed = False
        self._last_sent = 0.0
        self._timer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def add(self, piece: str) -> None:
        self._receive(piece)
        wait = self._last_sent + self._interval - self._clock()
        if wait <= 0:
            await self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().create_task(self._flush_later(wait))

    def _receive(self, piece: str) -> None:
        self._fed_chars += len(piece)
        self._raw.append(piece)
        self._unfed.append(piece)
        self._pending.append(piece)

    async def _feed(self, *, final: bool = False) -> None:
        """Run the raw text received since the last feed through the live display (closing it when
        `final`), off the event loop unless it is small, and gather what it makes displayable."""
        text = "".join(self._unfed)
        self._unfed = []
        live = self._live
        if live is not None:
            left = self._live_budget - self._live_spent
            if live.held + len(text) <= INLINE_FEED_CHARS:
                fed = self._live_steps(live, text, final, left)
            else:
                fed = await self._off_loop(self._live_steps, live, text, final, left)
            for step in fed.steps:
                self._gather(step.display, step.cited)
            self._live_spent += fed.seconds
            if not fed.whole:
                logger.warning(
                    "answer %s: live display over its budget (%.1f s): the rest is displayed at the end",
                    self._answer_id,
                    self._live_spent,
                )
                self._live = None
        if self._live is None and final:
            # Linear, but on the whole answer: a thread when it is not small.
            self._gather(*await self._off_loop(self._rest_of_display, len(self._sources)))

    @staticmethod
    def _live_steps(live: LiveDisplay, text: str, final: bool, budget: float) -> _Fed:
        """Feed `text` in slices of FEED_SLICE_CHARS (closing the display when `final`) until done or
        `budget` seconds are spent: a slice's cost grows with what the display holds back."""
        started = time.perf_counter()
        steps = []
        for start in range(0, len(text), FEED_SLICE_CHARS):
            steps.append(live.feed(text[start : start + FEED_SLICE_CHARS]))
            spent = time.perf_counter() - started
            if spent > budget:
                return _Fed(steps, spent, whole=False)
        if final:
            steps.append(live.close())
        return _Fed(steps, time.perf_counter() - started, whole=True)

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(
            db.pool("live-display", LIVE_DISPLAY_THREADS), functools.partial(fn, *args)
        )

    def _rest_of_display(self, source_count: int) -> tuple[str, list[tuple[int, int]]]:
        """The display not shown yet, and the sources not cited yet, from the whole raw text.

        What was shown is a prefix of the final text, and the sources cited so far the first
        of its references, in order (the live display's promise): the rest follows from them.
        """
        steps = run_steps("".join(self._raw), source_count, self._dialects)
        cited = list(enumerate(steps.cited, start=1))
        return steps.final.text[self._shown :], cited[self._cited :]

    def _gather(self, display: str, cited: list[tuple[int, int]]) -> None:
        if display:
            self._display.append(display)
            self._shown += len(display)
        for number, original in cited:
            reference = payloads.reference_payload(self._sources[original], number)
            self._cites.append({"number": number, "original": original, "reference": reference})
        self._cited += len(cited)

    async def _flush_later(self, wait: float) -> None:
        await self._sleep(wait)
        self._timer = None
        await self._flush()

    async def _flush(self, *, final: bool = False) -> None:
        async with self._lock:
            if self._unfed or final:
                await self._feed(final=final)
            if not (self._pending or self._display or self._cites):
                return
            delta = Delta("".join(self._pending), "".join(self._display), self._cites)
            self._pending, self._display, self._cites = [], [], []
            self._last_sent = self._clock()
            await self._send(self._answer_id, delta)

    async def close(self, final_text: str | None = None) -> None:
        """Publish what is pending and held back; with `final_text`, also what it adds beyond the text fed."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        final = not self._closed
        if final:
            self._closed = True
            if final_text is not None and len(final_text) > self._fed_chars:
                self._receive(final_text[self._fed_chars :])
        await self._flush(final=final)


class SSEPublisher:
    """The SSE path (answers.pipeline.publisher.Publisher): every step is an event on the answer's
    channel, and generation runs in the background, whether or not anyone listens."""

    delivery: str = Answer.Delivery.SSE
    background: bool = True

    def references(self, answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> None:
        publish_references(answer_id, sources)

    def deltas(self, answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> DeltaCoalescer:
        return DeltaCoalescer(answer_id, sources)

    async def done(self, answer: Answer) -> None:
        await sync_to_async(publish_done)(answer)

    async def error(self, answer_id: uuid.UUID, message: str) -> None:
        await sync_to_async(publish_error)(answer_id, message)


SSE = SSEPublisher()
