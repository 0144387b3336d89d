"""The contract between the pipeline and any answer provider: the protocol and its one error."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from answers.failures import ErrorKind

if TYPE_CHECKING:
    from answers.providers.prompt import Prompt


class ProviderError(Exception):
    """Every provider failure, whatever its cause, reaches the pipeline as this one error.

    ``message`` is shown to users: it never carries secrets (the API key) or raw
    upstream bodies. ``partial_text`` is what the provider had produced before the
    failure, so the pipeline can keep it in the trail.
    """

    kind: ErrorKind
    message: str
    partial_text: str
    truncated: bool

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        partial_text: str = "",
        truncated: bool = False,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.partial_text = partial_text
        self.truncated = truncated

    def __repr__(self) -> str:
        return (
            f"ProviderError(kind={self.kind!r}, message={self.message!r}, "
            f"partial_text={len(self.partial_text)} chars, truncated={self.truncated})"
        )


@dataclass
class Generation:
    """What one `stream()` call learned besides its text, filled in by the provider as it streams.

    The pipeline passes a fresh one to each call and reads it once the stream has ended
    without error. A provider that learns none of this leaves the defaults.
    """

    # The provider stopped at its length limit (openai `finish_reason == "length"`,
    # anthropic `stop_reason == "max_tokens"`): the answer is complete but cut short.
    truncated: bool = False
    # Passages a provider with native citations said it cited, by source number (1..N),
    # in the order the citations arrived, each passage once per source.
    quotes: dict[int, list[str]] = field(default_factory=dict)
    # Token usage as the provider reported it ({"prompt_tokens", "completion_tokens"}), or None
    # when it reported none (docs/reference/http.md, the trail's `usage`).
    usage: dict[str, int] | None = None
    # Each native citation as the provider gave it, in arrival order: the trail's `native`
    # record (docs/howto/providers.md); its shape is the provider's.
    native: list[dict[str, object]] = field(default_factory=list)

    def set_usage(self, prompt_tokens: int | None, completion_tokens: int | None) -> None:
        """Records the usage a provider reported; a report without either count leaves it None."""
        if prompt_tokens is None and completion_tokens is None:
            return
        self.usage = {
            "prompt_tokens": int(prompt_tokens or 0),
            "completion_tokens": int(completion_tokens or 0),
        }

    def add_quote(self, number: int, text: str) -> None:
        quotes = self.quotes.setdefault(number, [])
        if text and text not in quotes:
            quotes.append(text)


@runtime_checkable
class Provider(Protocol):
    """What the pipeline depends on: a name, a model, and an async stream of raw text pieces.

    `native_citations`: the provider places the `[n]` markers itself (from the model's
    own citations), so its prompt does not ask the model to write them
    (answers.providers.prompt.build_prompt).
    """

    name: str
    model: str
    native_citations: bool

    def stream(self, prompt: Prompt, generation: Generation | None = None) -> AsyncIterator[str]:
        """Yield the answer's raw text in pieces; raise ProviderError on any failure.

        When `generation` is given, the provider records in it what the call learned
        besides the text (truncation, quotes).
        """
        ...
