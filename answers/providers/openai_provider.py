"""The provider for any OpenAI-compatible chat-completions server, streamed, with one overall deadline."""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import openai

from answers.conf import AnswersSettings
from answers.providers.base import ErrorKind, ProviderError
from answers.providers.prompt import Prompt

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "gpt-4o-mini"
MAX_RETRIES = 2  # only before the first piece: a retry after it would repeat text already shown
BACKOFF_BASE_S = 0.5
MAX_RETRY_AFTER_S = 5.0  # a server asking for a longer wait will not answer within a user's patience
_RETRYABLE_STATUS = frozenset({408, 409, 429})
# Clients by event loop, then by (base_url, api_key, timeout).
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], openai.AsyncOpenAI]] = (
    weakref.WeakKeyDictionary()
)


@dataclass
class _Progress:
    """What one call has received so far, kept across attempts for the error's partial text."""

    pieces: list[str] = field(default_factory=list)
    finish_reason: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.pieces)


class _Retry(Exception):
    """Raised inside an attempt when a retry is allowed; carries the error to raise if it is not."""

    def __init__(self, error: ProviderError, delay: float) -> None:
        super().__init__(error.message)
        self.error = error
        self.delay = delay


class OpenAIProvider:
    """Streams chat completions; every failure becomes one ProviderError, never a raw client error."""

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        model: str | None = None,
        timeout: float = 60.0,
        temperature: float = 0.2,
        max_retries: int = MAX_RETRIES,
        backoff_s: float = BACKOFF_BASE_S,
    ) -> None:
        self.model = model or DEFAULT_MODEL
        self.base_url = base_url
        # Kept private and out of repr: the key must never reach a log line or an error message.
        self._api_key = api_key
        self.timeout = timeout
        self.temperature = temperature
        self.max_retries = max_retries
        self.backoff_s = backoff_s

    @classmethod
    def from_settings(cls, conf: AnswersSettings) -> OpenAIProvider:
        return cls(
            base_url=conf.OPENAI_BASE_URL,
            api_key=conf.OPENAI_API_KEY,
            model=conf.MODEL or None,
            timeout=conf.PROVIDER_TIMEOUT,
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider(base_url={self.base_url!r}, model={self.model!r}, timeout={self.timeout})"

    def _client(self) -> openai.AsyncOpenAI:
        """One client (and connection pool) per event loop and settings, reused by every answer.

        Building one per answer cost ~10 ms of CPU (TLS context, CA bundle) and a new connection.
        """
        loop = asyncio.get_running_loop()
        key = (self.base_url, self._api_key, self.timeout)
        clients = _clients.setdefault(loop, {})
        client = clients.get(key)
        if client is None or client.is_closed():
            client = clients[key] = self._new_client()
        return client

    def _new_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            base_url=self.base_url,
            # Local servers (vLLM, Ollama, llama.cpp) accept any key; the client insists on one.
            api_key=self._api_key or "not-needed",
            # Retries are ours: only before the first piece, and inside the overall deadline.
            max_retries=0,
            timeout=self.timeout,
        )

    async def stream(self, prompt: Prompt) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        # An absolute deadline, checked around each of our own awaits only: a timeout held
        # across `yield` would cancel the consumer's code instead of ours.
        deadline = loop.time() + self.timeout
        progress = _Progress()
        attempt = 0
        # The client is shared (see _client): this stream must not close it.
        async with nullcontext(self._client()) as client:
            while True:
                try:
                    # aclosing: a consumer that stops early must close the HTTP response now.
                    async with aclosing(self._attempt(client, prompt, progress, deadline)) as pieces:
                        async for piece in pieces:
                            yield piece
                except _Retry as retry:
                    delay = retry.delay or self.backoff_s * 2**attempt
                    if progress.pieces or attempt >= self.max_retries or loop.time() + delay >= deadline:
                        raise retry.error from None
                    attempt += 1
                    logger.info("Retrying the answer request (%d of %d)", attempt, self.max_retries)
                    await asyncio.sleep(delay)
                    continue
                break
        if progress.finish_reason is None:
            raise ProviderError(
                ErrorKind.UPSTREAM,
                "The answer service stopped before finishing its answer.",
                partial_text=progress.text,
                truncated=True,
            )
        if not progress.pieces:
            raise ProviderError(ErrorKind.BAD_RESPONSE, "The answer service returned an empty answer.")
        if progress.finish_reason == "length":
            logger.warning("The answer hit the model's length limit (model %s)", self.model)

    async def _attempt(
        self,
        client: openai.AsyncOpenAI,
        prompt: Prompt,
        progress: _Progress,
        deadline: float,
    ) -> AsyncGenerator[str, None]:
        """One request: yields content pieces; raises ProviderError, or _Retry when a retry may help."""
        stream: openai.AsyncStream[Any] | None = None
        try:
            async with asyncio.timeout_at(deadline):
                stream = await client.chat.completions.create(
                    model=self.model,
                    messages=cast("list[ChatCompletionMessageParam]", [dict(m) for m in prompt.messages]),
                    stream=True,
                    temperature=self.temperature,
                )
            while True:
                async with asyncio.timeout_at(deadline):
                    try:
                        chunk = await stream.__anext__()
                    except StopAsyncIteration:
                        return
                for piece in self._read_chunk(chunk, progress):
                    progress.pieces.append(piece)
                    yield piece
        except ProviderError:
            raise
        except Exception as exc:
            error, retry_delay = self._translate(exc, progress)
            if retry_delay is not None and not progress.pieces:
                raise _Retry(error, retry_delay) from exc
            raise error from exc
        finally:
            if stream is not None:
                await stream.close()

    def _read_chunk(self, chunk: object, progress: _Progress) -> list[str]:
        """The content pieces of one chunk; records its finish reason; rejects shapes we cannot read."""
        choices = getattr(chunk, "choices", None)
        if not isinstance(choices, list):
            raise ProviderError(
                ErrorKind.BAD_RESPONSE,
                "The answer service sent a reply that could not be read.",
                partial_text=progress.text,
            )
        pieces = []
        # Some servers send chunks with no choices (usage, content filter results): nothing to read.
        for choice in choices:
            if getattr(choice, "index", 0) not in (0, None):
                continue
            delta = getattr(choice, "delta", None)
            content = getattr(delta, "content", None) if delta is not None else None
            if content is not None and not isinstance(content, str):
                raise ProviderError(
                    ErrorKind.BAD_RESPONSE,
                    "The answer service sent a reply that could not be read.",
                    partial_text=progress.text,
                )
            if content:
                pieces.append(content)
            reason = getattr(choice, "finish_reason", None)
            if reason:
                progress.finish_reason = str(reason)
        return pieces

    def _translate(self, exc: Exception, progress: _Progress) -> tuple[ProviderError, float | None]:
        """The user-facing error for a client exception, and the delay before a retry (None: don't)."""
        partial = progress.text
        # Upstream messages are never shown: a 401's message can echo part of the key.
        if isinstance(exc, TimeoutError | openai.APITimeoutError):
            return (
                ProviderError(
                    ErrorKind.TIMEOUT,
                    f"The answer service did not answer within {self.timeout:g} seconds.",
                    partial_text=partial,
                ),
                None,
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            logger.warning("The answer service responded %s (%s)", status, exc.code or exc.type or "no code")
            if status == 429:
                message = "The answer service is busy right now (rate limited). Please try again shortly."
            elif status >= 500:
                message = f"The answer service had an internal error ({status})."
            elif status in (401, 403):
                message = f"The answer service refused the request ({status}): check its API key."
            elif status == 404:
                message = f"The answer service does not know the model {self.model!r} or its address (404)."
            else:
                message = f"The answer service rejected the request ({status})."
            error = ProviderError(ErrorKind.UPSTREAM, message, partial_text=partial)
            if status in _RETRYABLE_STATUS or status >= 500:
                retry_after = _retry_after(exc)
                if retry_after is not None and retry_after > MAX_RETRY_AFTER_S:
                    return error, None
                return error, retry_after or 0.0
            return error, None
        if isinstance(exc, openai.APIConnectionError):
            logger.warning("The answer service connection failed: %s", type(exc.__cause__ or exc).__name__)
            message = (
                "The connection to the answer service was lost mid-answer."
                if partial
                else "The answer service could not be reached."
            )
            return ProviderError(ErrorKind.UPSTREAM, message, partial_text=partial), 0.0
        if isinstance(exc, json.JSONDecodeError | openai.APIResponseValidationError | ValueError | TypeError):
            logger.warning("The answer service sent an unreadable reply: %s", type(exc).__name__)
            return (
                ProviderError(
                    ErrorKind.BAD_RESPONSE,
                    "The answer service sent a reply that could not be read.",
                    partial_text=partial,
                ),
                None,
            )
        if isinstance(exc, openai.APIError):
            # An error event inside the stream (`data: {"error": ...}`).
            logger.warning("The answer service reported an error mid-stream (%s)", exc.code or exc.type)
            return ProviderError(
                ErrorKind.UPSTREAM, "The answer service reported an error.", partial_text=partial
            ), None
        logger.exception("Unexpected failure calling the answer service")
        return ProviderError(
            ErrorKind.UPSTREAM, "The answer service call failed unexpectedly.", partial_text=partial
        ), None


def _retry_after(exc: openai.APIStatusError) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms` or `retry-after` in seconds), if any."""
    headers = exc.response.headers
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return max(0.0, float(raw) / divisor)
        except ValueError:
            # An HTTP date: too rare from these servers to be worth parsing; wait the default.
            return None
    return None
