"""The contract between the pipeline and any answer provider: the protocol and its one error."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from django.db.models import TextChoices

if TYPE_CHECKING:
    from answers.providers.prompt import Prompt


class ErrorKind(TextChoices):
    """Why an answer failed (Answer.ErrorKind): a provider raises the first three, the pipeline the rest.

    Defined here, not in answers.models, because importing the providers needs no Django settings.
    """

    TIMEOUT = "timeout", "The provider timed out"
    UPSTREAM = "upstream", "The provider failed"
    BAD_RESPONSE = "bad_response", "The provider's response was malformed"
    INTERNAL = "internal", "Internal error"
    CANCELLED = "cancelled", "Interrupted (the client went away)"
    SHUTDOWN = "shutdown", "The server stopped"
    STORAGE = "storage", "Could not be stored"
    STALE = "stale", "Its server stopped writing it"


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


@runtime_checkable
class Provider(Protocol):
    """What the pipeline depends on: a name, a model, and an async stream of raw text pieces."""

    name: str
    model: str

    def stream(self, prompt: Prompt) -> AsyncIterator[str]:
        """Yield the answer's raw text in pieces; raise ProviderError on any failure."""
        ...
