"""The provider for the Anthropic Messages API, streamed, with the model's native citations.

Each retrieved source goes, in order, as a `document` block with citations enabled, so
`document_index` i is source i+1. The model's citations become markers
(docs/howto/providers.md): each text block that carries citations gets `[` + the distinct
`document_index + 1` in arrival order, joined by `, `, + `]`, after the block's text and
before its trailing whitespace, with one space before it. That is the raw text; normalize,
strip and finalize then treat it like any other (an out-of-range index is stripped like any
out-of-range marker; a negative one is written as member 0, which is stripped too). Each
citation's `cited_text` is kept as a quote of its source.

Deadline, retries, error kinds and the client cache live in answers.providers.streaming.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import anthropic

from answers.citations.scan import in_range, render_written
from answers.conf import AnswersSettings
from answers.providers.base import Generation
from answers.providers.prompt import Prompt
from answers.providers.streaming import Progress, StreamingProvider

if TYPE_CHECKING:
    from anthropic.types import MessageParam, TextBlockParam


@dataclass
class _Block:
    """One text block of the reply while it streams: its held-back trailing whitespace and citations."""

    trailing: str = ""
    numbers: list[int] = field(default_factory=list)


class _EventReader:
    """Reads Messages stream events: text pieces with the markers placed, quotes, the stop reason.

    A block's trailing whitespace is held back until the block ends, because its marker
    (known only then: citations may come after the text) goes before that whitespace.
    """

    def __init__(self, source_count: int, progress: Progress) -> None:
        self.source_count = source_count
        self.progress = progress
        self.stop_reason: str | None = None
        self.quotes = Generation()
        self._blocks: dict[int, _Block] = {}
        # Token usage: input from `message_start`, output (cumulative) from the last `message_delta`.
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None

    def read(self, event: Any) -> list[str]:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self._usage(getattr(getattr(event, "message", None), "usage", None))
            return []
        if kind == "content_block_start":
            block = event.content_block
            if getattr(block, "type", None) != "text":
                return []  # thinking, tool use...: not part of the answer's text
            started = self._blocks[event.index] = _Block()
            for citation in getattr(block, "citations", None) or ():
                self._cite(started, citation)
            return self._text(started, getattr(block, "text", "") or "")
        if kind == "content_block_delta":
            state = self._blocks.get(event.index)
            if state is None:
                return []
            delta = event.delta
            if delta.type == "text_delta":
                return self._text(state, delta.text)
            if delta.type == "citations_delta":
                self._cite(state, delta.citation)
            return []
        if kind == "content_block_stop":
            ended = self._blocks.pop(event.index, None)
            if ended is None:
                return []
            marker = " " + render_written(ended.numbers) if ended.numbers else ""
            piece = marker + ended.trailing
            return [piece] if piece else []
        if kind == "message_delta":
            reason = getattr(event.delta, "stop_reason", None)
            if reason:
                self.stop_reason = str(reason)
            self._usage(getattr(event, "usage", None))
        return []

    def _usage(self, usage: Any) -> None:
        """Counts a `message_start` or `message_delta` reports (each field it has replaces the last)."""
        for name in ("input_tokens", "output_tokens"):
            value = getattr(usage, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                setattr(self, name, value)

    def _text(self, state: _Block, text: Any) -> list[str]:
        if not isinstance(text, str):
            raise self.progress.unreadable()
        text = state.trailing + text
        shown = text.rstrip()
        state.trailing = text[len(shown) :]
        return [shown] if shown else []

    def _cite(self, state: _Block, citation: Any) -> None:
        index = getattr(citation, "document_index", None)
        if not isinstance(index, int) or isinstance(index, bool):
            return  # a citation of something other than our documents (web search results)
        # A negative index names no document of ours: it becomes member 0, which the strip step
        # removes and the trail records like any member naming no source (index + 1 would write
        # `[0, -1]`, not a marker at all, and the answer would fall back with the bracket shown).
        number = max(index + 1, 0)
        if number not in state.numbers:
            state.numbers.append(number)
        cited_text = getattr(citation, "cited_text", None)
        if in_range(number, self.source_count) and isinstance(cited_text, str):
            self.quotes.add_quote(number, cited_text)

    def conclude(self, generation: Generation) -> None:
        for number, quotes in self.quotes.quotes.items():
            for quote in quotes:
                generation.add_quote(number, quote)
        generation.set_usage(self.input_tokens, self.output_tokens)


class AnthropicProvider(StreamingProvider):
    """Streams Messages with citations enabled; every failure becomes one ProviderError."""

    name = "anthropic"
    native_citations = True
    errors = anthropic
    client_class = anthropic.AsyncAnthropic  # with no key given, it reads ANTHROPIC_API_KEY itself
    length_stop = "max_tokens"

    # No default model: ANSWERS_MODEL is required with this provider (system check answers.E017).

    @classmethod
    def _endpoint(cls, conf: AnswersSettings) -> tuple[str | None, str | None]:
        return conf.ANTHROPIC_BASE_URL, conf.ANTHROPIC_API_KEY

    async def _open(self, client: anthropic.AsyncAnthropic, prompt: Prompt) -> Any:
        return await client.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            system=_system(prompt),
            messages=request_messages(prompt),
            stream=True,
        )

    def _reader(self, prompt: Prompt, progress: Progress) -> _EventReader:
        return _EventReader(len(prompt.sources), progress)

    async def _complete(
        self, client: anthropic.AsyncAnthropic, messages: Sequence[dict[str, str]], max_tokens: int
    ) -> str:
        reply = await client.messages.create(
            model=self.model,
            max_tokens=max_tokens,
            system="\n\n".join(m["content"] for m in messages if m["role"] == "system"),
            messages=[
                cast("MessageParam", {"role": m["role"], "content": m["content"]})
                for m in messages
                if m["role"] != "system"
            ],
            stream=False,
        )
        return "".join(block.text for block in reply.content if isinstance(block, anthropic.types.TextBlock))


def _system(prompt: Prompt) -> str:
    return "\n\n".join(m["content"] for m in prompt.messages if m["role"] == "system")


def request_messages(prompt: Prompt) -> list[MessageParam]:
    """The conversation's earlier turns (a follow-up's history, as plain user and assistant messages),
    then one user turn: every source as a document (in order), then the prompt's user text."""
    turns = [m for m in prompt.messages if m["role"] != "system"]
    history = [cast("MessageParam", {"role": m["role"], "content": m["content"]}) for m in turns[:-1]]
    documents: list[dict[str, Any]] = [
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": source.excerpt},
            "title": source.title,
            "citations": {"enabled": True},
        }
        for source in prompt.sources
    ]
    texts: list[TextBlockParam] = [{"type": "text", "text": m["content"]} for m in turns[-1:]]
    content: list[Any] = [*documents, *texts]
    return [*history, cast("MessageParam", {"role": "user", "content": content})]
