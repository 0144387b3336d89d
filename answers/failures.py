"""Why an answer failed (ErrorKind): the one vocabulary of the providers, the pipeline and
Answer.error_kind, below all three."""

from __future__ import annotations

import enum


class ErrorKind(enum.StrEnum):
    """Why an answer failed: a provider raises the first three, the pipeline the rest.

    The one vocabulary: Answer.ErrorKind (TextChoices) is built from it, and providers raise it
    (answers.providers.base.ProviderError); importing it needs no Django.
    """

    TIMEOUT = "timeout"
    UPSTREAM = "upstream"
    BAD_RESPONSE = "bad_response"
    INTERNAL = "internal"
    CANCELLED = "cancelled"
    SHUTDOWN = "shutdown"
    STORAGE = "storage"
    STALE = "stale"

    @property
    def label(self) -> str:
        return _ERROR_LABELS[self]


_ERROR_LABELS = {
    ErrorKind.TIMEOUT: "The provider timed out",
    ErrorKind.UPSTREAM: "The provider failed",
    ErrorKind.BAD_RESPONSE: "The provider's response was malformed",
    ErrorKind.INTERNAL: "Internal error",
    ErrorKind.CANCELLED: "Interrupted (the client went away)",
    ErrorKind.SHUTDOWN: "The server stopped",
    ErrorKind.STORAGE: "Could not be stored",
    ErrorKind.STALE: "Its server stopped writing it",
}
