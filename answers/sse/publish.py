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
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.core.serializers.json import DjangoJSONEncoder
from django_eventstream.event import Event
from django_eventstream.utils import get_storage, publish_event

from answers import selectors
from answers.citations import LiveDisplay
from answers.conf import conf
from answers.models import Answer
from answers.retrieval.types import RetrievedSource
from answers.sse.channels import channel_for
from answers.sse.fanout import fanout
from answers.sse.storage import AnswerEventStorage

logger = logging.getLogger(__name__)

REFERENCES = "references"
DELTA = "delta"
CITE = "cite"
DONE = "done"
ERROR = "error"

# Deltas are coalesced to one per interval: with `references` and `done`, an answer stores
# at most 10 events per second of generation (event storage cost; BENCHMARKS.md), plus
# one `cite` per source cited.
DELTA_INTERVAL_SECONDS = 0.15


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
    for event, (event_type, data) in zip(stored, encoded, strict=True):
        fanout().publish(event)
        try:
            publish_event(channel, event_type, data, str(event.id), str(event.id - 1))
        except Exception:
            logger.warning("event %s:%s not published to the GRIP proxy", channel, event.id, exc_info=True)
    return stored


def publish_references(answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> None:
    references = [selectors.reference_payload(s, s.number) for s in sources]
    send(channel_for(answer_id), REFERENCES, {"references": references})


@dataclass(frozen=True)
class Delta:
    """One coalesced stretch: the raw text, its display (CITATIONS.md, "The live display"),
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
    send(channel_for(answer.id), DONE, selectors.answer_done_payload(answer=answer))


def publish_error(answer_id: uuid.UUID, detail: str) -> None:
    send(channel_for(answer_id), ERROR, {"detail": detail})


class DeltaCoalescer:
    """Coalesces provider pieces into at most ~10 `delta` events a second, each with its display.

    Every piece goes through the answer's LiveDisplay as it arrives; a flush
    publishes the first citations gathered (`cite` events), then the raw text
    and the display gathered (one `delta`). The concatenation of the published
    `text`s is exactly the raw text, and of the `display`s the final text.
    """

    def __init__(
        self,
        answer_id: uuid.UUID,
        sources: Sequence[RetrievedSource] = (),
        *,
        dialects: Collection[str] | None = None,
        interval: float = DELTA_INTERVAL_SECONDS,
        send: Callable[[uuid.UUID, Delta], Awaitable[Any]] | None = None,
    ) -> None:
        self._answer_id = answer_id
        self._interval = interval
        self._send = send or sync_to_async(publish_delta)
        self._sources = {source.number: source for source in sources}
        self._live = LiveDisplay(len(sources), conf.MARKER_DIALECTS if dialects is None else dialects)
        self._pending: list[str] = []
        self._display: list[str] = []
        self._cites: list[dict[str, Any]] = []
        self._fed_chars = 0
        self._closed = False
        self._last_sent = 0.0
        self._timer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def add(self, piece: str) -> None:
        self._take(piece)
        wait = self._last_sent + self._interval - time.monotonic()
        if wait <= 0:
            await self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().create_task(self._flush_later(wait))

    def _take(self, piece: str) -> None:
        step = self._live.feed(piece)
        self._fed_chars += len(piece)
        self._pending.append(piece)
        self._gather(step.display, step.cited)

    def _gather(self, display: str, cited: list[tuple[int, int]]) -> None:
        if display:
            self._display.append(display)
        for number, original in cited:
            reference = selectors.reference_payload(self._sources[original], number)
            self._cites.append({"number": number, "original": original, "reference": reference})

    async def _flush_later(self, wait: float) -> None:
        await asyncio.sleep(wait)
        self._timer = None
        await self._flush()

    async def _flush(self) -> None:
        async with self._lock:
            if not (self._pending or self._display or self._cites):
                return
            delta = Delta("".join(self._pending), "".join(self._display), self._cites)
            self._pending, self._display, self._cites = [], [], []
            self._last_sent = time.monotonic()
            await self._send(self._answer_id, delta)

    async def close(self, final_text: str | None = None) -> None:
        """Publish what is pending and held back; with `final_text`, also what it adds beyond the text fed."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._closed:
            self._closed = True
            if final_text is not None and len(final_text) > self._fed_chars:
                self._take(final_text[self._fed_chars :])
            step = self._live.close()
            self._gather(step.display, step.cited)
        await self._flush()


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
