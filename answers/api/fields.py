"""The API's strict fields: each accepts its JSON type only (DRF's own coerce "42", "yes" or 2.0),
so what the schema documents is exactly what is accepted."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from answers.questions import MAX_LENGTH as MAX_QUESTION_LENGTH
from answers.questions import VISIBLE
from answers.selectors import parse_answer_id


class StrictCharField(serializers.CharField):
    """A string, and only a string: DRF's CharField would accept 42 as "42"."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class StrictBooleanField(serializers.BooleanField):
    """true or false, and only that: DRF's BooleanField would accept "yes" or 1."""

    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictIntegerField(serializers.IntegerField):
    """An integer, and only a JSON integer: DRF's IntegerField would accept "2", 2.0 or true."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return int(super().to_internal_value(data))


@extend_schema_field(
    {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_QUESTION_LENGTH,
        # A visible character (answers/questions.py), and no NUL (no database stores it).
        "pattern": rf"^[^\x00]*{VISIBLE}[^\x00]*$",
        # What the API docs' "Try it out" fills in (without it, a string generated from the pattern).
        "example": "How does the with statement work?",
    }
)
class QuestionField(StrictCharField):
    """The question: what the schema documents is exactly what is accepted."""


class StrictUUIDField(serializers.UUIDField):
    """A UUID in its one form (lowercase, with hyphens), and only a string."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str) or parse_answer_id(data) is None:
            self.fail("invalid", value=data)
        return super().to_internal_value(data)
