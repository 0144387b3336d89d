"""What a delivery path hands the flow: where events go, and whether generation outlives the request.

The JSON path's publisher (here) sends nothing and generates within the
request; the SSE path's (answers.sse.publish.SSEPublisher) publishes every step
and generates in the background. The flow never asks which path it is on.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Protocol

from answers.models import Answer
from answers.retrieval.types import RetrievedSource


class Deltas(Protocol):
    """One answer's raw text as it arrives: what is published must add up to the text kept
    (and, on the SSE path, its display to the final text)."""

    async def add(self, piece: str) -> None: ...

    async def close(self, final_text: str | None = None) -> None:
        """Send what is pending; with `final_text`, send what it adds beyond what was sent."""
        ...


class Publisher(Protocol):
    """A delivery path, as the flow sees it."""

    delivery: str  # the Answer.Delivery value stored with the answer
    background: bool  # ask() returns once the answer exists; generation goes on in a task of its own

    def references(self, answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> None:
        """Step 3, in the start step's worker thread: the retrieved sources, numbered."""
        ...

    def deltas(self, answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> Deltas:
        """One answer's deltas; `sources` are the retrieved ones, numbered as `references` published them."""
        ...

    async def done(self, answer: Answer) -> None: ...

    async def error(self, answer_id: uuid.UUID, message: str) -> None: ...


class JSONPublisher:
    """The JSON path: no events (the response carries the answer), generation within the request."""

    delivery: str = Answer.Delivery.JSON
    background: bool = False

    def references(self, answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> None:
        pass

    def deltas(self, answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> JSONPublisher:
        return self

    async def add(self, piece: str) -> None:
        pass

    async def close(self, final_text: str | None = None) -> None:
        pass

    async def done(self, answer: Answer) -> None:
        pass

    async def error(self, answer_id: uuid.UUID, message: str) -> None:
        pass


JSON = JSONPublisher()
