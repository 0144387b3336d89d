"""The provider for Cohere's v2 chat API (the official `cohere` client's AsyncClientV2), streamed,
with the model's native citations.

Each retrieved source goes, in order, as a document `{"id": "<n>", "data": {"title", "snippet"}}`
(n its number, from 1). The reply's citations become markers where answers.providers.
cohere_citations says (docs/howto/providers.md); that is the raw text, which normalize, strip and
finalize then treat like any other (an id naming no sent document is written 0, which strip
removes). Each citation's `text` is kept as a quote of each source it names; the trail's
`native` lists each citation as Cohere gave it, with where its marker went.

The stream's events, built from the `data:` of each server-sent event as the client's own types
(cohere/v2/types/v2chat_stream_response.py; the request goes through the client, the response's
lines are read here: `_EventStream` says why; no `[DONE]`, `message-end` last): `content-delta`
text, `citation-start` (one citation), `content-end`, then `message-end` with the finish reason
and usage. Like the client, this skips, with only a log line, an event it cannot build, and builds a
misnamed field as None, so every field is read defensively. A follow-up's rewrite and the
`judge` support method go through the same client, not streamed (`chat`).

Deadline, retries (the client's own are off: it would retry 429/5xx twice, waiting up to 60 s),
error kinds and the client cache live in answers.providers.streaming; `_failure` says what the
client's exceptions (its ApiError with the HTTP status, httpx's transport errors) mean.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncGenerator, Sequence
from typing import Any, cast, get_args

import cohere
import httpx
import pydantic
from cohere.core.api_error import ApiError
from cohere.v2.types.v2chat_stream_response import V2ChatStreamResponse

from answers.citations.scan import in_range
from answers.conf import AnswersSettings
from answers.failures import ErrorKind
from answers.providers.base import Generation, ProviderError
from answers.providers.cohere_citations import Citation, Placer, numbers_of
from answers.providers.prompt import Prompt
from answers.providers.streaming import Failure, FailureKind, Progress, StreamingProvider, sse_data

# Text held back waiting for citations is given out once it grows past this many code points
# (a reply this long is past ANSWERS_MAX_ANSWER_CHARS' default anyway): memory stays bounded.
MAX_HELD_CHARS = 100_000
# Finish reasons that mean the model did not finish its answer.
_FAILED_FINISH = frozenset({"ERROR", "TIMEOUT"})
# Citation types that point into the answer's text (None: a server that does not say).
_TEXT_CITATIONS = frozenset({None, "TEXT_CONTENT"})

logger = logging.getLogger(__name__)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _EventReader:
    """Reads v2 chat stream events: the reply's text with the markers placed, its citations,
    its finish reason and usage."""

    def __init__(self, source_count: int, progress: Progress) -> None:
        self.progress = progress
        self.stop_reason: str | None = None
        self.usage: tuple[int | None, int | None] | None = None
        self.numbers = {str(n): n for n in range(1, source_count + 1)}
        self.source_count = source_count
        self.placer = Placer()
        progress.held = self.placer.held

    def read(self, event: Any) -> list[str]:
        kind = getattr(event, "type", None)
        if kind in ("content-start", "content-delta"):
            content = getattr(getattr(getattr(event, "delta", None), "message", None), "content", None)
            text = getattr(content, "text", None)  # None: a thinking block, or no text
            if text is not None and not isinstance(text, str):
                raise self.progress.unreadable()
            self.placer.add_text(text or "")
            if self.placer.unreleased > MAX_HELD_CHARS:
                return self._release(final=False)
        elif kind == "citation-start":
            self._cite(getattr(getattr(getattr(event, "delta", None), "message", None), "citations", None))
        elif kind == "content-end":
            return self._release(final=False)
        elif kind == "message-end":
            return self._end(getattr(event, "delta", None))
        return []

    def _release(self, *, final: bool) -> list[str]:
        piece = self.placer.release(final=final)
        return [piece] if piece else []

    def _cite(self, citation: Any) -> None:
        if citation is None or getattr(citation, "type", None) not in _TEXT_CITATIONS:
            return  # a citation of the model's thinking or plan, not of the answer's text
        text = getattr(citation, "text", None)
        sources = getattr(citation, "sources", None) or ()
        ids = tuple(_source_id(getattr(source, "id", None)) for source in sources)
        self.placer.add_citation(
            Citation(
                start=_int(getattr(citation, "start", None)),
                end=_int(getattr(citation, "end", None)),
                text=text if isinstance(text, str) else None,
                ids=ids,
                numbers=numbers_of(ids, self.numbers),
            )
        )

    def _end(self, delta: Any) -> list[str]:
        reason = getattr(delta, "finish_reason", None)
        if reason in _FAILED_FINISH or getattr(delta, "error", None):
            raise ProviderError(
                ErrorKind.UPSTREAM, "The answer service reported an error.", partial_text=self.progress.text
            )
        usage = getattr(delta, "usage", None)
        counts = getattr(usage, "tokens", None) or getattr(usage, "billed_units", None)
        if counts is not None:
            self.usage = (
                _count(getattr(counts, "input_tokens", None)),
                _count(getattr(counts, "output_tokens", None)),
            )
        pieces = self._release(final=True)
        self.stop_reason = str(reason or "COMPLETE")
        return pieces

    def conclude(self, generation: Generation) -> None:
        if self.usage is not None:
            generation.set_usage(*self.usage)
        generation.native = self.placer.records()
        for citation in self.placer.citations:
            for number in citation.numbers:
                if in_range(number, self.source_count) and citation.text:
                    generation.add_quote(number, citation.text)


def _source_id(value: Any) -> str | None:
    """A source's id as sent back: a string, or None (an id of another type is kept as its text)."""
    return value if isinstance(value, str) or value is None else str(value)


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# The client's own type for each event it knows, by the `type` its data names
# (cohere/v2/types/v2chat_stream_response.py): `_EventStream` says why they are looked up here.
_EVENT_TYPES: dict[str, type[pydantic.BaseModel]] = {
    cast("Any", model).model_fields["type"].default: model
    for model in get_args(get_args(V2ChatStreamResponse)[0])
}
# What the client's own stream catches when it builds an event, skipping the event (with a log line).
_UNBUILDABLE = (json.JSONDecodeError, TypeError, ValueError, KeyError, AttributeError)


class _EventStream:
    """The events of a streamed reply, read from the client's HTTP response as its own stream reads
    them (SSE `data:` fields; empty data skipped, `[DONE]` the end), each built as the client's own
    type for the `type` it names; an event of a type the client does not know, or one it could not
    build, is skipped, as the client skips it.

    The client builds each event by validating its data against the union of all twelve event
    types, most of the cohere path's CPU per answer (bench/bench_cohere.py); the one type named is
    all it can match, so validating against that one alone builds the same event.
    """

    def __init__(self, response: httpx.Response, exits: contextlib.AsyncExitStack) -> None:
        self._exits = exits
        self._events = self._read(response)

    def __anext__(self) -> Any:
        return self._events.__anext__()

    async def close(self) -> None:
        await self._events.aclose()
        await self._exits.aclose()

    async def _read(self, response: httpx.Response) -> AsyncGenerator[Any, None]:
        async for payload in sse_data(response.aiter_lines()):
            if payload == "[DONE]":
                return
            event = _event(payload)
            if event is not None:
                yield event


def _event(payload: str) -> Any:
    """One event's data built as the client's type for it; None when the client would skip it."""
    if not payload:
        return None
    try:
        data = json.loads(payload)
        model = _EVENT_TYPES.get(str(data.get("type"))) if isinstance(data, dict) else None
        if model is None:
            raise ValueError("not an event the client knows")
        return model.model_validate(data)
    except _UNBUILDABLE as exc:
        logger.warning("Skipping a stream event the client would not build: %s", type(exc).__name__)
        return None


class CohereProvider(StreamingProvider):
    """Streams v2 chat with documents; every failure becomes one ProviderError."""

    name = "cohere"
    native_citations = True
    errors = cohere
    client_class = cohere.AsyncClientV2
    length_stop = "MAX_TOKENS"
    # The `judge` support method asks this provider itself (answers.support.judge).
    judges = True

    # No default model: ANSWERS_MODEL is required with this provider (system check answers.E061).

    @classmethod
    def _endpoint(cls, conf: AnswersSettings) -> tuple[str | None, str | None]:
        return conf.COHERE_BASE_URL, conf.COHERE_API_KEY

    def _new_client(self) -> cohere.AsyncClientV2:
        return cohere.AsyncClientV2(
            # The client insists on a key; a server that needs none (check answers.E062) gets this.
            api_key=self._api_key or "not-needed",
            base_url=self.base_url,
            timeout=self.timeout,
            # Retries are ours: only before the first piece, and inside the overall deadline.
            max_retries=0,
            log_warning_experimental_features=False,
        )

    def _closed(self, client: Any) -> bool:
        return bool(client._client_wrapper.httpx_client.httpx_client.is_closed)

    async def _open(self, client: cohere.AsyncClientV2, prompt: Prompt) -> _EventStream:
        exits = contextlib.AsyncExitStack()
        reply = await exits.enter_async_context(
            client.with_raw_response.chat_stream(
                model=self.model,
                messages=cast("Any", [dict(m) for m in prompt.messages]),
                documents=cast("Any", request_documents(prompt)),
                max_tokens=self.max_tokens,
            )
        )
        # The client has sent the request and checked the reply's status; its events are read from
        # its response with its own types (_EventStream says why).
        return _EventStream(reply.response, exits)

    def _reader(self, prompt: Prompt, progress: Progress) -> _EventReader:
        return _EventReader(len(prompt.sources), progress)

    async def _complete(
        self, client: cohere.AsyncClientV2, messages: Sequence[dict[str, str]], max_tokens: int
    ) -> str:
        reply = await client.chat(
            model=self.model, messages=cast("Any", [dict(m) for m in messages]), max_tokens=max_tokens
        )
        content = getattr(getattr(reply, "message", None), "content", None) or []
        texts = [getattr(item, "text", None) for item in content if getattr(item, "type", None) == "text"]
        if not all(isinstance(text, str) for text in texts):
            raise ProviderError(
                ErrorKind.BAD_RESPONSE, "The answer service sent a reply that could not be read."
            )
        return "".join(cast("list[str]", texts))

    def _failure(self, exc: Exception) -> Failure:
        """What the cohere client's exceptions mean: its ApiError carries the HTTP status; a lost or
        refused connection is httpx's own error."""
        if isinstance(exc, TimeoutError | httpx.TimeoutException):
            return Failure(FailureKind.TIMEOUT)
        if isinstance(exc, ApiError) and isinstance(exc.status_code, int) and exc.status_code >= 400:
            return Failure(FailureKind.STATUS, exc.status_code, exc.headers or {}, _code(exc.body))
        if isinstance(exc, httpx.TransportError):
            return Failure(FailureKind.CONNECTION, code=type(exc).__name__)
        if isinstance(exc, json.JSONDecodeError | pydantic.ValidationError | ValueError | TypeError):
            return Failure(FailureKind.UNREADABLE, code=type(exc).__name__)
        return Failure(FailureKind.UNEXPECTED)


def _code(body: Any) -> str:
    """A Cohere error body's machine-readable part for the log (its `message` may echo input)."""
    code = body.get("code") or body.get("type") if isinstance(body, dict) else None
    return str(code or "no code")


def request_documents(prompt: Prompt) -> list[dict[str, Any]]:
    """Every source, in order, as a document whose id is its number (docs/howto/providers.md)."""
    return [
        {"id": str(source.number), "data": {"title": source.title, "snippet": source.excerpt}}
        for source in prompt.sources
    ]
