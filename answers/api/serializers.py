"""Input and output serializers of the answers API (one small pair per operation)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from answers.api.schema import SOME_TEXT
from answers.citations.trail import MarkerOutcome
from answers.conf import conf
from answers.models import Answer, AnswerSource
from answers.selectors import answer_references


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


@extend_schema_field(
    {
        "type": "string",
        "minLength": 1,
        "maxLength": conf.MAX_QUESTION_LENGTH,
        # Something besides whitespace (trimmed away), and no NUL (no database stores it).
        "pattern": rf"^[^\x00]*{SOME_TEXT}[^\x00]*$",
    }
)
class QuestionField(StrictCharField):
    """The question: what the schema documents is exactly what is accepted."""


class AskInputSerializer(serializers.Serializer[Any]):
    question = QuestionField(trim_whitespace=True, allow_blank=False)
    stream = StrictBooleanField(default=False)

    def validate_question(self, value: str) -> str:
        limit = conf.MAX_QUESTION_LENGTH
        if len(value) > limit:
            raise serializers.ValidationError(
                f"Ensure this field has no more than {limit} characters (it has {len(value)})."
            )
        return value


class ReferenceSerializer(serializers.Serializer[Any]):
    """A numbered source as clients see it."""

    number = serializers.IntegerField()
    document_id = serializers.IntegerField(allow_null=True)
    title = serializers.CharField()
    url = serializers.CharField(allow_blank=True)
    excerpt = serializers.CharField()


class AnswerErrorSerializer(serializers.Serializer[Any]):
    kind = serializers.CharField()
    detail = serializers.CharField()


class AnswerOutputSerializer(serializers.Serializer[Any]):
    """The answer object: the finalized text/references pair once `done`."""

    id = serializers.UUIDField()
    question = serializers.CharField()
    status = serializers.ChoiceField(choices=Answer.Status.choices)
    text = serializers.SerializerMethodField()
    references = serializers.SerializerMethodField()
    fallback = serializers.BooleanField()
    truncated = serializers.BooleanField(
        help_text="The provider stopped at its length limit: the answer is complete as stored but cut short."
    )
    error = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_text(self, answer: Answer) -> str:
        return answer.final_text if answer.status == Answer.Status.DONE else ""

    @extend_schema_field(ReferenceSerializer(many=True))
    def get_references(self, answer: Answer) -> list[dict[str, Any]]:
        return answer_references(answer)

    @extend_schema_field(AnswerErrorSerializer(allow_null=True))
    def get_error(self, answer: Answer) -> dict[str, str] | None:
        if answer.status != Answer.Status.FAILED:
            return None
        return {"kind": answer.error_kind, "detail": answer.error_message}


class AskAcceptedSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    status = serializers.CharField()
    url = serializers.CharField()
    events_url = serializers.CharField()


class TrailSourceSerializer(serializers.ModelSerializer[AnswerSource]):
    score = serializers.FloatField(source="rerank_score")
    quotes = serializers.ListField(
        child=serializers.CharField(),
        help_text="Passages a provider with native citations (anthropic) said it cited from this source, "
        "in the order its citations arrived; empty otherwise.",
    )

    class Meta:
        model = AnswerSource
        fields = [
            "original_number",
            "final_number",
            "status",
            "document_id",
            "title",
            "url",
            "excerpt",
            "score",
            "lexical_score",
            "citation_count",
            "first_cited_offset",
            "quotes",
        ]


class MarkerDecisionSerializer(serializers.Serializer[dict[str, Any]]):
    """One entry of the stored per-marker record (answers.citations.trail.MarkerDecision)."""

    raw_start = serializers.IntegerField(help_text="Where its characters start in the raw text.")
    raw_end = serializers.IntegerField()
    written = serializers.CharField(help_text="Its text when found (as it formed, for a later pass).")
    # "pass" is a Python keyword: declared through the class namespace.
    locals()["pass"] = serializers.IntegerField(
        help_text="1: a marker of the raw text; n > 1: formed by strip pass n - 1's removals."
    )
    dialect = serializers.CharField(allow_null=True)
    members = serializers.ListField(child=serializers.IntegerField())
    stripped = serializers.ListField(child=serializers.IntegerField(), help_text="Members out of range.")
    outcome = serializers.ChoiceField(choices=[o.value for o in MarkerOutcome])
    final_start = serializers.IntegerField(allow_null=True)
    final_end = serializers.IntegerField(allow_null=True)
    final = serializers.CharField(allow_null=True, help_text="Its text in the final text.")
    final_members = serializers.ListField(child=serializers.IntegerField())


class NormalizedSerializer(serializers.Serializer[dict[str, str]]):
    """One dialect rewrite: which dialect, and the exact text the model wrote."""

    dialect = serializers.CharField()
    text = serializers.CharField()


class TrailOutputSerializer(serializers.ModelSerializer[Answer]):
    text = serializers.CharField(source="final_text")
    sources = TrailSourceSerializer(many=True)
    markers = MarkerDecisionSerializer(many=True)
    normalized = NormalizedSerializer(many=True)
    error = serializers.SerializerMethodField()

    class Meta:
        model = Answer
        fields = [
            "id",
            "question",
            "status",
            "delivery",
            "raw_text",
            "text",
            "stripped",
            "markers",
            "normalized",
            "fallback",
            "truncated",
            "provider",
            "model",
            "prompt_version",
            "min_score",
            "max_sources",
            "retrieval_trace",
            "retrieval_ms",
            "first_piece_ms",
            "generation_ms",
            "total_ms",
            "created_at",
            "finished_at",
            "error",
            "sources",
        ]

    def get_error(self, answer: Answer) -> dict[str, str] | None:
        if answer.status != Answer.Status.FAILED:
            return None
        return {"kind": answer.error_kind, "detail": answer.error_message}
