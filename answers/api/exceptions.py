"""API errors: every error is a JSON object with a human-readable message."""

from __future__ import annotations

import uuid
from typing import Any

from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class ProviderFailed(APIException):
    """The provider failed; the answer is stored as failed and its id goes with the error."""

    status_code: int = status.HTTP_502_BAD_GATEWAY
    default_detail = "The answer provider failed."
    default_code = "provider_failed"

    def __init__(
        self,
        detail: str | None = None,
        *,
        answer_id: uuid.UUID | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.answer_id = answer_id
        self.headers = headers or {}


class ProviderTimedOut(ProviderFailed):
    status_code = status.HTTP_504_GATEWAY_TIMEOUT
    default_detail = "The answer provider did not answer in time."
    default_code = "provider_timeout"


class ServerStopping(ProviderFailed):
    """The server stopped while the answer was written: stored as failed (`shutdown`); ask again."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The server stopped before the answer was finished."
    default_code = "server_stopping"


class AskNotTaken(APIException):
    """The server takes no new question now (it is stopping, or answering as many as it may): nothing
    was stored; ask again after `Retry-After` (DRF's handler sends it from `wait`)."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The server takes no new question now; please ask again shortly."
    default_code = "server_busy"

    def __init__(self, detail: str, *, code: str, wait: int) -> None:
        super().__init__(detail, code)
        self.wait = wait


class AnswerDeletedMeanwhile(ProviderFailed):
    """The answer was deleted (in admin) while it was written: nothing is left to return."""

    status_code = status.HTTP_404_NOT_FOUND
    default_detail = "The answer was deleted while it was being written."
    default_code = "answer_deleted"


class IdempotencyKeyReused(ProviderFailed):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = "This Idempotency-Key was already used for a different question or delivery."
    default_code = "idempotency_key_reused"


class IdempotentRequestInFlight(ProviderFailed):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The first request with this Idempotency-Key is still being answered; retry later."
    default_code = "idempotent_request_in_flight"


class AnswerNotFinished(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "Feedback is taken on finished answers only; this one is not done."
    default_code = "answer_not_done"


class ConversationBusy(APIException):
    """A follow-up while the last turn is still written, or past ANSWERS_CONVERSATION_TURNS."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "This conversation cannot take a follow-up now."
    default_code = "conversation_busy"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus the answer id on provider failures so the trail can be found."""
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, ProviderFailed):
        if exc.answer_id is not None:
            response.data["id"] = str(exc.answer_id)
        for name, value in exc.headers.items():
            response[name] = value
    return response
