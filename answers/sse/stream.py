"""Serving an answer's event stream: replay from the store, then live events, at scale.

The loop is django-eventstream's own (its Listener, ListenerManager, storage,
ids and wire format, so its clients and its GRIP support work unchanged), with
what holding thousands of streams in one process needs:

- Database work (the access check, replay reads) is bounded: it runs on a
  pool of ANSWERS_STREAM_DB_WORKERS threads shared by the process's streams,
  and each read gives its thread and its connection back as soon as it is
  done. A burst of new streams queues for a thread instead of exceeding
  PostgreSQL's `max_connections` (the stock view opens one per new stream at
  once; past ~100 they fail with 500s).
- A waiting stream holds no thread and no connection: waiting for the next
  event (or the keep-alive) is asyncio only, and once the stream is open it
  gives back the thread Django's ASGI handler keeps for each request
  (answers.db.release_request_thread), which would otherwise stay, idle, as
  long as the stream.
- Live events are checked against the last id the client got: a duplicate is
  skipped, and a gap (an event this process never saw live, e.g. while Redis
  was away) makes the stream re-read the store from its last id, so every
  client gets every event once, in order.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from django.core.serializers.json import DjangoJSONEncoder
from django_eventstream.eventrequest import EventRequest
from django_eventstream.eventresponse import EventResponse
from django_eventstream.eventstream import EventPermissionError, get_events
from django_eventstream.utils import make_id, sse_encode_error, sse_encode_event
from django_eventstream.views import Listener, get_listener_manager

from answers import db, metrics
from answers.conf import conf
from answers.retrieval.access import Redaction, redact_event
from answers.sse import open_streams
from answers.sse.channels import Admitted, answer_id_from_channel
from answers.sse.open_streams import OpenStream

KEEPALIVE_SECONDS = 20.0
REDACTED_EVENTS = frozenset({"references", "cite", "done"})  # the events that carry references
# The first chunk is padded so that proxies and old browsers start delivering at once.
OPENING = ":" + " " * 2048 + "\n\nevent: stream-open\ndata:\n\n"
# What django-eventstream removes from an event's type and id (a line break would end the field).
_FIELD_UNSAFE = re.compile(r"[\r\n\0]")

T = TypeVar("T")


async def run_db(fn: Callable[..., T], *args: Any) -> T:
    """A stream's database work, on the streams' pool: a few at a time, thread and connection given back."""
    return await db.run_pooled(fn, *args, pool_name="streams", size=conf.STREAM_DB_WORKERS)


def read_events(event_request: EventRequest, reader: Admitted) -> EventResponse:
    """django-eventstream's read of the store after the request's last ids, as an admitted reader."""
    response: EventResponse = get_events(event_request, user=reader)
    return response


def listen(channels: set[str]) -> Listener:
    """Register a listener before the first read of the store, so nothing published meanwhile is missed."""
    listener = Listener()
    listener.channels = set(channels)
    listener.assign_loop()
    get_listener_manager().add_listener(listener)
    return listener


def unlisten(listener: Listener) -> None:
    get_listener_manager().remove_listener(listener)


async def stream(
    event_request: EventRequest, listener: Listener, reader: Admitted, first: EventResponse | None = None
) -> AsyncIterator[str]:
    """The SSE body: the stored events after the client's last id, then live ones as they come.

    `listener` was registered (listen()) before `first`, the first read of the store, if given.
    `reader` is whom the view admitted: each read of the store passes it, so access is not asked again.
    """
    listener.user_id = event_request.user.pk if event_request.user else "anonymous"
    manager = get_listener_manager()
    metrics.stream_opened()
    # Its answer's last event is owed to it before a stopping server closes it (open_streams).
    sent = open_streams.opened(next(map(answer_id_from_channel, listener.channels), None))
    try:
        # The view and the middleware have returned: nothing of this request needs its thread
        # until the stream ends, and a stream may stay open for hours.
        db.release_request_thread()
        opening = OPENING
        while True:
            try:
                response = first if first is not None else await run_db(read_events, event_request, reader)
            except EventPermissionError as exc:
                yield opening + sse_encode_error("forbidden", str(exc), extra={"channels": exc.channels})
                return
            first = None
            last_ids = {channel: int(last) for channel, last in response.channel_last_ids.items()}
            body, opening = opening + _encode_stored(response, last_ids, reader.redaction, sent), ""
            more = bool(response.channel_more)
            # The parsed read is not kept while the stream waits: thousands of idle streams
            # would each hold it (objects the process's full garbage collections walk).
            del response
            if body:
                yield body
                sent.sent()
            if more:
                continue  # get_events moved the request's ids past this page
            event_request.channel_last_ids = dict(last_ids)
            with manager.lock:
                # Events queued while reading stay queued: _live skips those the read already
                # returned and reads again on a gap. (Reading again whenever one was queued
                # would make every stream of a busy answer re-read the store at each delta
                # while streams wait for a database worker.) Only dropped events force a read.
                raced = listener.overflow
                if raced:
                    listener.aevent.clear()
                    listener.channel_items = {}
                    listener.overflow = False
            if raced:
                continue
            async for chunk in _live(listener, last_ids, reader.redaction, sent):
                yield chunk
                sent.sent()
            if listener.error:
                return
            event_request.channel_last_ids = dict(last_ids)
    finally:
        metrics.stream_closed()
        open_streams.closed(sent)
        unlisten(listener)


def encode_event(event_type: str, data: Any, event_id: str | None) -> str:
    """django_eventstream.utils.sse_encode_event's text for one event, without its cost on large ones.

    A stored payload is JSON text, which holds no line break: it is one `data:` line, written as
    is. The stock encoder splits every payload on line breaks with a regular expression and
    cleans the type and id likewise (30 ms for a maximal answer's `done`, paid by every stream
    that replays it or receives it live); anything else (a line break, a NUL in the type or id,
    a payload that is not text) goes through it unchanged.
    """
    if (
        isinstance(data, str)
        and event_id
        and "\n" not in data
        and "\r" not in data
        and not _FIELD_UNSAFE.search(event_type + event_id)
    ):
        return f"event: {event_type}\nid: {event_id}\ndata: {data}\n\n"
    encoded: str = sse_encode_event(event_type, data, event_id=event_id)
    return encoded


def _visible(event_type: str, data: Any, redaction: Redaction) -> Any:
    """The event's payload (stored as JSON text) with the sources this reader may no longer read withheld."""
    if not redaction or not isinstance(data, str) or event_type not in REDACTED_EVENTS:
        return data
    return json.dumps(redact_event(event_type, json.loads(data), redaction), cls=DjangoJSONEncoder)


def _encode_stored(
    response: EventResponse, last_ids: dict[str, int], redaction: Redaction, sent: OpenStream
) -> str:
    """A read of the store as SSE text (`last_ids` moved past each event), a `stream-reset` first if due."""
    body = ""
    if response.channel_reset:
        body += sse_encode_event(
            "stream-reset",
            {"channels": sorted(response.channel_reset)},
            event_id=make_id(last_ids),
            json_encode=True,
        )
    for channel, items in response.channel_items.items():
        for item in items:
            last_ids[channel] = int(item.id)
            body += encode_event(item.type, _visible(item.type, item.data, redaction), make_id(last_ids))
            sent.wrote(item.type)
    return body


async def _live(
    listener: Listener, last_ids: dict[str, int], redaction: Redaction, sent: OpenStream
) -> AsyncIterator[str]:
    """Live events until the store must be read again (a gap, an overflow) or the stream is closed."""
    manager = get_listener_manager()
    while True:
        try:
            await asyncio.wait_for(listener.aevent.wait(), KEEPALIVE_SECONDS)
        except TimeoutError:
            yield "event: keep-alive\ndata:\n\n"
            continue
        with manager.lock:
            queued, overflow, error = listener.channel_items, listener.overflow, listener.error
            listener.aevent.clear()
            listener.channel_items = {}
            listener.overflow = False
        body = ""
        for channel, items in queued.items():
            for item in items:
                if item.id is None:
                    body += sse_encode_event(item.type, item.data)
                    continue
                eid = int(item.id)
                last = last_ids.get(channel)
                if last is not None and eid <= last:
                    continue  # already sent (replayed from the store)
                if last is not None and eid != last + 1:
                    overflow = True  # a gap: the store has what this process did not see live
                    break
                last_ids[channel] = eid
                body += encode_event(item.type, _visible(item.type, item.data, redaction), make_id(last_ids))
                sent.wrote(item.type)
        if error:
            body += sse_encode_error(error["condition"], error["text"], extra=error.get("extra"))
        if body:
            yield body
        if error or overflow:
            return
