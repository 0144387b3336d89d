"""The process's open event streams, and the wait, when the server stops, for each to send its answer's
last event (`done` or `error`) before the server closes its connection.

A stopping server fails the answers it cannot finish and publishes their `error`
(answers.pipeline.lifecycle.shutdown); a stream gets that event on a later turn of the event
loop, and the server closes every connection once its stop hooks return (answers.server). Without
this wait, a listener could see its connection close with no `error` at all.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Collection
from dataclasses import dataclass

from answers.sse.events import DONE, ERROR

LAST_EVENTS = frozenset({DONE, ERROR})


@dataclass(eq=False)
class OpenStream:
    """One open stream of one answer: whether its last event has reached the server's hands."""

    answer_id: uuid.UUID | None
    last_event_sent: bool = False
    _last_event_written: bool = False

    def wrote(self, event_type: str) -> None:
        """An event of this type is in the text about to be sent."""
        if event_type in LAST_EVENTS:
            self._last_event_written = True

    def sent(self) -> None:
        """The text written so far was handed to the server (the stream was asked for more)."""
        if self._last_event_written and not self.last_event_sent:
            self.last_event_sent = True
            _changed()


_open: set[OpenStream] = set()
# Futures of drain() calls waiting for a change (a last event sent, a stream closed).
_waiters: list[asyncio.Future[None]] = []


def opened(answer_id: uuid.UUID | None) -> OpenStream:
    stream = OpenStream(answer_id)
    _open.add(stream)
    return stream


def closed(stream: OpenStream) -> None:
    _open.discard(stream)
    _changed()


def _changed() -> None:
    for waiter in _waiters:
        if not waiter.done():
            waiter.set_result(None)
    _waiters.clear()


def owed(answer_ids: Collection[uuid.UUID]) -> int:
    """Open streams of these answers still to send their last event."""
    return sum(1 for s in _open if s.answer_id in answer_ids and not s.last_event_sent)


async def drain(answer_ids: Collection[uuid.UUID], *, within: float) -> int:
    """Wait, up to `within` seconds, until every open stream of these answers has sent its last event
    or closed. Returns how many had not when the time ran out (0: all had)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while owed(answer_ids) and loop.time() < deadline:
        waiter: asyncio.Future[None] = loop.create_future()
        _waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, deadline - loop.time())
        except TimeoutError:
            break
    return owed(answer_ids)
