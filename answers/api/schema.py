"""What the OpenAPI schema says about errors, shared by every API view (tests/integration/test_api_fuzz.py).

Every error is a JSON object: `{"detail": "..."}`, or, for invalid input, one
list of messages per field (`{"question": ["..."]}`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

# Python trims these (str.strip, str.split): spelled out, as a regex engine's `\s` may differ.
_WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())
# Matches a character that is neither trimmed whitespace nor NUL (which no database stores).
SOME_TEXT = "[^" + "".join(f"\\u{ord(c):04x}" for c in "\x00" + _WHITESPACE) + "]"

ErrorSerializer = inline_serializer(
    name="Error",
    fields={"detail": serializers.CharField(help_text="A human-readable message.")},
)

ProviderErrorSerializer = inline_serializer(
    name="ProviderError",
    fields={
        "detail": serializers.CharField(help_text="A human-readable message."),
        "id": serializers.UUIDField(help_text="The failed answer, stored with its partial trail."),
    },
)

# Either {"detail": "..."} (unreadable JSON) or {"<field>": ["message", ...], ...}.
VALIDATION_ERROR: dict[str, Any] = {
    "type": "object",
    "description": "One list of messages per invalid field, or `detail` when the body is not readable JSON.",
    "additionalProperties": {
        "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
    },
}

_MEANING = {
    400: "Invalid input: each invalid field with its messages.",
    401: (
        "A bad or unknown token (`Authorization: Token` with no key, a key with spaces, a key nobody "
        "holds), or no credentials where they are needed; sent with `WWW-Authenticate: Token`."
    ),
    403: "Signed in without the permission this operation needs, or a session request without CSRF token.",
    404: "Nothing with this id, or nothing this caller may read (the same answer for both).",
    415: "The body is not JSON.",
    429: "Too many questions in a short time; `Retry-After` says when to ask again.",
}


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """The documented error responses for `statuses` (400, 401, 403, 404, 415, 429)."""
    return {
        status: OpenApiResponse(
            response=VALIDATION_ERROR if status == 400 else ErrorSerializer, description=_MEANING[status]
        )
        for status in statuses
    }
