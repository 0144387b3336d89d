"""API errors: every error is a JSON object with a human-readable message."""

from __future__ import annotations

import uuid
from typing import Any

from rest_framework import status
from rest_framework.exceptions import APIException, ErrorDetail
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class AskFailed(APIException):
    """An ask that returns no answer: the id of the answer it stored (if any) and the headers it
    decided (Idempotency-Key's) go with the error, so the trail can be found."""

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


class ProviderFailed(AskFailed):
    """The provider failed; the answer is stored as failed."""

    status_code: int = status.HTTP_502_BAD_GATEWAY
    default_detail = "The answer provider failed."
    default_code = "provider_failed"


class ProviderTimedOut(ProviderFailed):
    status_code = status.HTTP_504_GATEWAY_TIMEOUT
    default_detail = "The answer provider did not answer in time."
    default_code = "provider_timeout"


class ServerStopping(AskFailed):
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


class AnswerDeletedMeanwhile(AskFailed):
    """The answer was deleted (in admin) while it was written: nothing is left to return."""

    status_code = status.HTTP_404_NOT_FOUND
    default_detail = "The answer was deleted while it was being written."
    default_code = "answer_deleted"


class IdempotencyKeyReused(AskFailed):
    """An Idempotency-Key sent again with another question or delivery: the first answer's id goes with it."""

    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = "This Idempotency-Key was already used for a different question or delivery."
    default_code = "idempotency_key_reused"


class IdempotentRequestInFlight(AskFailed):
    """A retry while the first request with its Idempotency-Key is still being answered."""

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
    """DRF's handler, plus the answer id on a failed ask so the trail can be found; every error
    it renders is encodable (encodable_errors)."""
    response = drf_exception_handler(exc, context)
    if response is not None:
        response.data = encodable_errors(response.data)
    if response is not None and isinstance(exc, AskFailed):
        if exc.answer_id is not None:
            response.data["id"] = str(exc.answer_id)
        for name, value in exc.headers.items():
            response[name] = value
    return response


def encodable_errors(data: Any) -> Any:
    """Error data whose every string UTF-8 can encode: a message quoting a value sent with half a
    character in it (JSON's lone `"\\ud800"`: DRF's "... is not a valid choice.") writes that half as
    its escape, `\\ud800`, instead of failing the response. Codes (ErrorDetail.code) are kept."""
    if isinstance(data, str):
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            text = data.encode("utf-8", "backslashreplace").decode("utf-8")
            return ErrorDetail(text, code=data.code) if isinstance(data, ErrorDetail) else text
        return data
    if isinstance(data, dict):
        return {encodable_errors(key): encodable_errors(value) for key, value in data.items()}
    if isinstance(data, list):
        return [encodable_errors(item) for item in data]
    return data
