"""The failed-ask errors (answers.api.exceptions): what each one answers, and which are the provider's."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.views import APIView

from answers.api.exceptions import (
    AnswerDeletedMeanwhile,
    AskFailed,
    IdempotencyKeyReused,
    IdempotentRequestInFlight,
    ProviderFailed,
    ProviderTimedOut,
    ServerStopping,
    exception_handler,
)

ANSWER = uuid.UUID(int=7)


@pytest.mark.parametrize(
    ("error", "status", "code", "the_providers"),
    [
        (ProviderFailed, 502, "provider_failed", True),
        (ProviderTimedOut, 504, "provider_timeout", True),
        (ServerStopping, 503, "server_stopping", False),
        (AnswerDeletedMeanwhile, 404, "answer_deleted", False),
        (IdempotencyKeyReused, 422, "idempotency_key_reused", False),
        (IdempotentRequestInFlight, 409, "idempotent_request_in_flight", False),
    ],
)
def test_a_failed_ask_answers_its_status_with_the_answer_id_and_headers(error, status, code, the_providers):
    failed = error(answer_id=ANSWER, headers={"Idempotency-Key": "k"})
    response = exception_handler(failed, {"view": APIView()})
    assert response is not None
    assert response.status_code == status
    assert response.data["id"] == str(ANSWER)
    assert response.data["detail"].code == code
    assert response["Idempotency-Key"] == "k"
    # Only the provider's failures say the provider failed; every one is a failed ask.
    assert issubclass(error, ProviderFailed) is the_providers
    assert issubclass(error, AskFailed)
