"""The provider for Mistral's chat completions, streamed, with the model's native references.

The sources travel as Mistral documents its citations (docs/howto/providers.md): after the
question, an assistant message with one tool call, then the `tool` message answering it, whose
content is the JSON object `{"0": {"title", "url", "snippets": [[<excerpt>]]}, "1": ...}`: key i
is source i+1. The reply streams text and `reference` chunks; reference id i gives number i+1,
and an id naming no sent source gives 0 (the strip step removes it and the trail records it).
Reference chunks in a row (no text between them) make one marker, `[` + their distinct numbers
in order, joined by `, `, + `]`, placed after the text before them, moved back before that
text's trailing whitespace and sentence punctuation, with one space before it:
"Penguins live in Antarctica." then a reference to id 0 reads "Penguins live in Antarctica [1].".
So a reply's trailing whitespace and punctuation are held back from the stream until the next
text (or the reply's end) shows whether a reference follows.

The trail's `native` record lists each reference chunk as `{"at", "ids", "marker_at"}`: the
offset in the reply's text (markers not counted) where it came, its ids as sent, and the offset
in the raw text of its marker's `[` (null when the answer ended before the marker was written).

Mistral's client (`mistralai.client.Mistral`, Speakeasy-generated) raises its own errors and
those of its HTTP library (httpx2), not a Stainless client's: `_failure` says what each means;
the kinds, messages and retries are the other providers' (answers.providers.streaming), where
the deadline and the client per event loop live too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any, cast

import httpx2
from mistralai.client import Mistral
from mistralai.client.errors import MistralError, NoResponseError
from mistralai.client.models import CompletionChunk

from answers.citations.scan import in_range, render_written
from answers.conf import AnswersSettings
from answers.failures import ErrorKind
from answers.providers.base import Generation, ProviderError
from answers.providers.prompt import Prompt
from answers.providers.streaming import Failure, FailureKind, Progress, StreamingProvider, sse_data

if TYPE_CHECKING:
    from mistralai.client.models import ChatCompletionRequestMessageTypedDict, ToolTypedDict

# The tool whose result carries the sources: Mistral ties a `tool` message to the assistant's call
# by this id (nine letters or digits, as the API wants them).
TOOL_NAME = "get_documents"
TOOL_CALL_ID = "documents"
TOOL: ToolTypedDict = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "The documents to answer the question from.",
        "parameters": {"type": "object", "properties": {}},
    },
}
# What a marker moves back before: trailing whitespace and these (docs/howto/providers.md).
_SENTENCE_PUNCTUATION = frozenset(".,;:!?")


class _Silent:
    """The client's debug logger. Its own, when MISTRAL_DEBUG is set, would reconfigure the
    process's root logging to DEBUG and write every request and response, headers included."""

    def debug(self, msg: str, *args: Any, **kwargs: Any) -> None:
        pass


def _tail_start(text: str) -> int:
    """Where `text`'s trailing whitespace and sentence punctuation begin (len(text): it has none)."""
    end = len(text)
    while end and (text[end - 1].isspace() or text[end - 1] in _SENTENCE_PUNCTUATION):
        end -= 1
    return end


def _reference_number(reference_id: object, source_count: int) -> int:
    """The source number a reference id names (id + 1), or 0 when it names no sent source."""
    if isinstance(reference_id, str) and reference_id.strip().isdecimal():
        reference_id = int(reference_id.strip())
    if type(reference_id) is int and in_range(reference_id + 1, source_count):  # (a bool is no id)
        return reference_id + 1
    return 0


class _ChunkStream:
    """The completion chunks of a streamed reply, read from the client's HTTP response as its own
    event stream reads them (SSE `data:` fields, up to `[DONE]`), each validated as its
    `CompletionChunk`.

    The client's event stream decodes each event by building a new pydantic model class for it
    (mistralai.client.utils.serializers.unmarshal): about 3 ms of CPU per chunk, four times the
    whole cost of an openai answer (bench/bench_mistral.py). The schema here is built once.
    """

    def __init__(self, response: httpx2.Response) -> None:
        self.response = response
        self._chunks = self._read()

    def __aiter__(self) -> _ChunkStream:
        return self

    async def __anext__(self) -> CompletionChunk:
        return await self._chunks.__anext__()

    async def close(self) -> None:
        await self._chunks.aclose()
        await self.response.aclose()

    async def _read(self) -> AsyncGenerator[CompletionChunk, None]:
        async for payload in sse_data(self.response.aiter_lines()):
            if payload == "[DONE]":
                return
            if payload:
                yield _chunk(payload)


class StreamError(Exception):
    """An error the server reported inside a stream that had started well (`{"object": "error", ...}`)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code  # its type or code, for the log: never its message, which may echo input


def _chunk(payload: str) -> CompletionChunk:
    """One event's data as a chunk; StreamError when it is an error report, ValueError when neither."""
    try:
        return CompletionChunk.model_validate_json(payload)
    except ValueError:
        report = json.loads(payload)
        if isinstance(report, dict) and (report.get("object") == "error" or "error" in report):
            raise StreamError(_code(payload)) from None
        raise


def _parts(content: Any) -> list[Any]:
    """A delta's content as a list: a string, or a list of chunks (text, reference, thinking...).
    Anything else (None, the client's UNSET) holds nothing."""
    if isinstance(content, str):
        return [content]
    return content if isinstance(content, list) else []


class _ChunkReader:
    """Reads completion chunks: text with the markers placed, the references' native records,
    the finish reason and the usage. Whatever text may precede a marker is held back."""

    def __init__(self, source_count: int, progress: Progress) -> None:
        self.source_count = source_count
        self.progress = progress
        self.stop_reason: str | None = None
        self.native: list[dict[str, object]] = []
        self.usage: tuple[int | None, int | None] | None = None
        self._held: list[str] = []  # trailing whitespace and punctuation not sent yet, in pieces
        self._numbers: list[int] = []  # the numbers of the references since the last text
        self._unplaced: list[dict[str, object]] = []  # their native records, waiting for the marker
        self._text_at = 0  # characters of the reply's text so far, markers not counted
        self._sent = 0  # characters of raw text sent so far
        progress.held = self.held  # a failure's partial text ends with what was held back

    def read(self, chunk: Any) -> list[str]:
        choices = getattr(chunk, "choices", None)
        if not isinstance(choices, list):
            raise self.progress.unreadable()
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = (getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
        pieces: list[str] = []
        for choice in choices:
            if getattr(choice, "index", 0) not in (0, None):
                continue
            for part in _parts(getattr(getattr(choice, "delta", None), "content", None)):
                pieces += self._part(part)
            reason = getattr(choice, "finish_reason", None)
            if isinstance(reason, str) and reason:
                self.stop_reason = reason
                pieces += self._release()
        return pieces

    def _part(self, part: Any) -> list[str]:
        """One piece of a delta's content: text (a string or a text chunk) or a reference chunk."""
        if isinstance(part, str):
            return self._text(part)
        kind = getattr(part, "type", None)
        if kind == "text":
            return self._text(getattr(part, "text", ""))
        if kind == "reference":
            self._reference(getattr(part, "reference_ids", None))
        return []  # thinking and other chunks are not part of the answer's text

    def _text(self, text: Any) -> list[str]:
        if not isinstance(text, str):
            raise self.progress.unreadable()
        if not text:
            return []
        pieces = self._marker()  # text ends a run of references
        self._text_at += len(text)
        cut = _tail_start(text)
        if cut == 0:
            self._held.append(text)
            return pieces
        shown = "".join(self._held) + text[:cut]
        self._held = [text[cut:]] if cut < len(text) else []
        return [*pieces, *self._send(shown)]

    def _reference(self, ids: Any) -> None:
        if not isinstance(ids, list) or not ids:
            return  # a reference to nothing cites nothing
        record: dict[str, object] = {"at": self._text_at, "ids": list(ids), "marker_at": None}
        self.native.append(record)
        self._unplaced.append(record)
        for reference_id in ids:
            number = _reference_number(reference_id, self.source_count)
            if number not in self._numbers:
                self._numbers.append(number)

    def _marker(self) -> list[str]:
        """The marker of the references since the last text (none: nothing), before the held tail."""
        if not self._numbers:
            return []
        for record in self._unplaced:
            record["marker_at"] = self._sent + 1  # after its one space
        marker = " " + render_written(self._numbers)
        self._numbers, self._unplaced = [], []
        return self._send(marker)

    def _release(self) -> list[str]:
        """The reply ended: its last marker, then the tail held back for it."""
        pieces = self._marker()
        if self._held:
            pieces += self._send("".join(self._held))
            self._held = []
        return pieces

    def held(self) -> str:
        """What the reply's end would give out now (the pending marker, the held tail), leaving the
        reader as it is."""
        marker = " " + render_written(self._numbers) if self._numbers else ""
        return marker + "".join(self._held)

    def _send(self, piece: str) -> list[str]:
        self._sent += len(piece)
        return [piece]

    def conclude(self, generation: Generation) -> None:
        generation.native = [dict(record) for record in self.native]
        if self.usage is not None:
            generation.set_usage(*self.usage)


class MistralProvider(StreamingProvider):
    """Streams Mistral chat completions with the sources as a tool result; every failure becomes
    one ProviderError."""

    name = "mistral"
    native_citations = True
    judges = True  # the `judge` support method asks this provider, not streamed (answers.support.judge)
    client_class = Mistral
    length_stop = "length"

    # No default model: ANSWERS_MODEL is required with this provider (system check answers.E064).

    @classmethod
    def _endpoint(cls, conf: AnswersSettings) -> tuple[str | None, str | None]:
        return conf.MISTRAL_BASE_URL, conf.MISTRAL_API_KEY

    def _new_client(self) -> Mistral:
        return Mistral(
            api_key=self._api_key,  # None: the client reads MISTRAL_API_KEY itself
            server_url=self.base_url,
            # Retries are ours: only before the first piece, and inside the overall deadline.
            retry_config=None,
            timeout_ms=int(self.timeout * 1000),
            debug_logger=_Silent(),
        )

    def _closed(self, client: Mistral) -> bool:
        http = client.sdk_configuration.async_client
        return http is None or bool(getattr(http, "is_closed", False))

    async def _open(self, client: Mistral, prompt: Prompt) -> _ChunkStream:
        events = await client.chat.stream_async(
            model=self.model,
            messages=request_messages(prompt),
            max_tokens=self.max_tokens,
            tools=[TOOL],
            tool_choice="none",  # the documents are there already: the model answers from them
        )
        # The client has sent the request and checked the reply's status and content type; its
        # chunks are read from its response with its own types (_ChunkStream says why).
        return _ChunkStream(events.response)

    def _reader(self, prompt: Prompt, progress: Progress) -> _ChunkReader:
        return _ChunkReader(len(prompt.sources), progress)

    async def _complete(self, client: Mistral, messages: Sequence[dict[str, str]], max_tokens: int) -> str:
        reply = await client.chat.complete_async(
            model=self.model,
            messages=cast("list[ChatCompletionRequestMessageTypedDict]", [dict(m) for m in messages]),
            max_tokens=max_tokens,
            temperature=0,
        )
        choices = getattr(reply, "choices", None) or []
        content = getattr(getattr(choices[0], "message", None), "content", None) if choices else None
        if isinstance(content, list):  # text and reference chunks: the text is the reply
            content = "".join(str(part.text) for part in content if getattr(part, "type", None) == "text")
        if not isinstance(content, str):
            raise ProviderError(
                ErrorKind.BAD_RESPONSE, "The answer service sent a reply that could not be read."
            )
        return content

    def _failure(self, exc: Exception) -> Failure:
        """What Mistral's client errors and its HTTP library's (httpx2) mean: its MistralError carries
        the HTTP status (a 200 it refused too: not the content type it expects, a body its types
        reject); a lost or refused connection is httpx2's own error."""
        if isinstance(exc, TimeoutError | httpx2.TimeoutException):
            return Failure(FailureKind.TIMEOUT)
        if isinstance(exc, MistralError) and exc.status_code >= 400:
            return Failure(FailureKind.STATUS, exc.status_code, exc.headers, _code(exc.body))
        if isinstance(exc, httpx2.TransportError | NoResponseError):
            return Failure(FailureKind.CONNECTION, code=type(exc).__name__)
        if isinstance(exc, StreamError):
            return Failure(FailureKind.REPORTED, code=exc.code)
        if isinstance(exc, MistralError | json.JSONDecodeError | ValueError | TypeError):
            return Failure(FailureKind.UNREADABLE, code=type(exc).__name__)
        return Failure(FailureKind.UNEXPECTED)


def _code(body: str) -> str:
    """A Mistral error body's machine-readable part for the log (its `message` may echo input)."""
    try:
        report = json.loads(body)
    except ValueError:
        return "no code"
    code = report.get("type") or report.get("code") if isinstance(report, dict) else None
    return str(code or "no code")


def request_messages(prompt: Prompt) -> list[ChatCompletionRequestMessageTypedDict]:
    """The prompt's messages (instructions, a follow-up's history, the question), then the sources
    as the result of one tool call: an assistant message calling it, and the `tool` message."""
    documents = {
        str(index): {"title": source.title, "url": source.url, "snippets": [[source.excerpt]]}
        for index, source in enumerate(prompt.sources)
    }
    call = {"id": TOOL_CALL_ID, "type": "function", "function": {"name": TOOL_NAME, "arguments": "{}"}}
    messages: list[dict[str, Any]] = [
        *(dict(m) for m in prompt.messages),
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {
            "role": "tool",
            "name": TOOL_NAME,
            "tool_call_id": TOOL_CALL_ID,
            "content": json.dumps(documents, ensure_ascii=False),
        },
    ]
    return cast("list[ChatCompletionRequestMessageTypedDict]", messages)
