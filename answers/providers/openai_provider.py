"""The provider for any OpenAI-compatible chat-completions server, streamed, with one overall deadline.

Deadline, retries, error kinds and the client cache live in answers.providers.streaming;
this module says how to ask and how to read a chat-completions stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import openai

from answers.conf import AnswersSettings
from answers.failures import ErrorKind
from answers.providers.base import Generation, ProviderError
from answers.providers.prompt import Prompt
from answers.providers.streaming import Progress, StreamingProvider

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

DEFAULT_MODEL = "gpt-4o-mini"


class _ChunkReader:
    """Reads chat-completion chunks: choice 0's content pieces, its finish reason, and the token usage
    the last chunk reports (asked for with `stream_options.include_usage`)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.stop_reason: str | None = None
        self.usage: tuple[int | None, int | None] | None = None

    def read(self, chunk: Any) -> list[str]:
        """The content pieces of one chunk; records its finish reason; rejects shapes we cannot read."""
        choices = getattr(chunk, "choices", None)
        if not isinstance(choices, list):
            raise self.progress.unreadable()
        pieces = []
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = (_count(usage, "prompt_tokens"), _count(usage, "completion_tokens"))
        # Some servers send chunks with no choices (usage, content filter results): nothing to read.
        for choice in choices:
            if getattr(choice, "index", 0) not in (0, None):
                continue
            delta = getattr(choice, "delta", None)
            content = getattr(delta, "content", None) if delta is not None else None
            if content is not None and not isinstance(content, str):
                raise self.progress.unreadable()
            if content:
                pieces.append(content)
            reason = getattr(choice, "finish_reason", None)
            if reason:
                self.stop_reason = str(reason)
        return pieces

    def conclude(self, generation: Generation) -> None:
        # Chat completions carry no citations; the usage, when the server reported it.
        if self.usage is not None:
            generation.set_usage(*self.usage)


def _count(usage: Any, name: str) -> int | None:
    """A token count of a usage report; None when absent or not a count (a server's own shape)."""
    value = getattr(usage, name, None)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class OpenAIProvider(StreamingProvider):
    """Streams chat completions; every failure becomes one ProviderError, never a raw client error."""

    name = "openai"
    errors = openai
    client_class = openai.AsyncOpenAI
    length_stop = "length"

    default_model = DEFAULT_MODEL
    temperature = 0.2

    @classmethod
    def _endpoint(cls, conf: AnswersSettings) -> tuple[str | None, str | None]:
        return conf.OPENAI_BASE_URL, conf.OPENAI_API_KEY

    def _client_key(self) -> str:
        # Local servers (vLLM, Ollama, llama.cpp) accept any key; the client insists on one.
        return self._api_key or "not-needed"

    async def _open(self, client: openai.AsyncOpenAI, prompt: Prompt) -> openai.AsyncStream[Any]:
        return await client.chat.completions.create(
            model=self.model,
            messages=cast("list[ChatCompletionMessageParam]", [dict(m) for m in prompt.messages]),
            stream=True,
            # The last chunk then reports the tokens used (the trail's `usage`, evaluation's tokens).
            stream_options={"include_usage": True},
            temperature=self.temperature,
            # `max_tokens`, not `max_completion_tokens`: every OpenAI-compatible server reads it.
            max_tokens=self.max_tokens,
        )

    def _reader(self, prompt: Prompt, progress: Progress) -> _ChunkReader:
        return _ChunkReader(progress)

    async def _complete(
        self, client: openai.AsyncOpenAI, messages: Sequence[dict[str, str]], max_tokens: int
    ) -> str:
        completion = await client.chat.completions.create(
            model=self.model,
            messages=cast("list[ChatCompletionMessageParam]", [dict(m) for m in messages]),
            stream=False,
            temperature=0,
            max_tokens=max_tokens,
        )
        choices = getattr(completion, "choices", None) or []
        content = getattr(getattr(choices[0], "message", None), "content", None) if choices else None
        if not isinstance(content, str):
            raise ProviderError(
                ErrorKind.BAD_RESPONSE, "The answer service sent a reply that could not be read."
            )
        return content
