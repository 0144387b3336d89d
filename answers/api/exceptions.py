"""API errors: every error is a JSON object with a human-readable message."""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class ProviderFailed(APIException):
    status_code = status.HTTP_502_BAD_GATEWAY
    default_detail = "The answer provider failed."
    default_code = "provider_failed"


class ProviderTimedOut(APIException):
    status_code = status.HTTP_504_GATEWAY_TIMEOUT
    default_detail = "The answer provider did not answer in time."
    default_code = "provider_timeout"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus the answer id on provider failures so the trail can be found."""
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, ProviderFailed | ProviderTimedOut):
        answer_id = getattr(exc, "answer_id", None)
        if answer_id is not None and isinstance(response.data, dict):
            response.data["id"] = str(answer_id)
    return response
