"""Input and output serializers of the answers API (one small pair per operation)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from answers.api.fields import (
    QuestionField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictUUIDField,
)
from answers.citations.trail import MarkerOutcome
from answers.models import FEEDBACK_COMMENT_MAX_LENGTH, Answer, AnswerSource, Feedback
from answers.payloads import answer_quotes, answer_references
from answers.questions import question_refusal
from answers.retrieval.access import NOTHING_WITHHELD, Redaction
from answers.support.record import VERDICTS


class AskInputSerializer(serializers.Serializer[Any]):
    question = QuestionField(trim_whitespace=True, allow_blank=False)
    stream = StrictBooleanField(default=False)
    conversation = StrictUUIDField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The id of a conversation to ask a follow-up in; null or absent starts a new one.",
    )

    def validate_question(self, value: str) -> str:
        refusal = question_refusal(value)
        if refusal:
            raise serializers.ValidationError(refusal)
        return value


@extend_schema_field({"type": "string", "maxLength": FEEDBACK_COMMENT_MAX_LENGTH, "pattern": r"^[^\x00]*$"})
class CommentField(StrictCharField):
    """A reader's comment: what the schema documents is exactly what is accepted (no NUL)."""


class FeedbackInputSerializer(serializers.Serializer[Any]):
    verdict = serializers.ChoiceField(choices=Feedback.Verdict.choices)
    # `source` is also a Field attribute in the type stubs (what a field reads); here it is the input's name.
    source = StrictIntegerField(  # type: ignore[assignment]
        min_value=1,
        max_value=2**31 - 1,
        allow_null=True,
        required=False,
        default=None,
        help_text="The number, as the Sources list shows it, of a source that does not back the answer. "
        'Implies `"verdict": "unhelpful"`.',
    )
    comment = CommentField(
        required=False,
        default="",
        allow_blank=True,
        max_length=FEEDBACK_COMMENT_MAX_LENGTH,
        help_text="Optional, at most 1,000 characters.",
    )


class FeedbackOutputSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    verdict = serializers.ChoiceField(choices=Feedback.Verdict.choices)
    source = serializers.IntegerField(  # type: ignore[assignment]  # the output's name, as above
        allow_null=True, help_text="The flagged source's final number."
    )
    created_at = serializers.DateTimeField()


class CurrentVerdictSerializer(serializers.Serializer[Any]):
    verdict = serializers.ChoiceField(choices=Feedback.Verdict.choices)
    comment = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()


class CurrentFlagSerializer(serializers.Serializer[Any]):
    source = serializers.IntegerField(  # type: ignore[assignment]  # the output's name, as above
        help_text="The flagged source's final number."
    )
    comment = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()


class CurrentFeedbackSerializer(serializers.Serializer[Any]):
    """The reader's current feedback on an answer: their one verdict and the sources they flagged."""

    verdict = CurrentVerdictSerializer(allow_null=True)
    flags = CurrentFlagSerializer(many=True)


class ReferenceSerializer(serializers.Serializer[Any]):
    """A numbered source as clients see it (withheld from this reader: `{"number", "withheld": true}`)."""

    number = serializers.IntegerField()
    document_id = serializers.IntegerField(allow_null=True, required=False)
    title = serializers.CharField(required=False)
    url = serializers.CharField(allow_blank=True, required=False)
    excerpt = serializers.CharField(required=False)
    withheld = serializers.BooleanField(
        required=False, help_text="Present (true) only when the reader may no longer read this source."
    )


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
    declined = serializers.BooleanField(
        help_text="No retrieved source reached the relevance threshold and the provider was not called: "
        "`references` is [] and `text` is ANSWERS_DECLINE_TEXT."
    )
    truncated = serializers.BooleanField(
        help_text="The provider stopped at its length limit: the answer is complete as stored but cut short."
    )
    quotes = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()
    conversation = serializers.UUIDField(
        source="conversation_id",
        allow_null=True,
        help_text="Its conversation's id (null for answers stored before conversations existed).",
    )
    turn = serializers.IntegerField(help_text="Its place in its conversation, from 1.")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_text(self, answer: Answer) -> str:
        return answer.final_text if answer.status == Answer.Status.DONE else ""

    def _redaction(self, answer: Answer) -> Redaction:
        # The view passes, by answer id, what of each answer its reader may no longer read
        # (selectors.answer_redactions, for a conversation's every turn). None passed: an answer
        # just written for its asker, whose sources retrieval chose for them.
        redactions: dict[Any, Redaction] | None = self.context.get("redactions")
        return NOTHING_WITHHELD if redactions is None else redactions[answer.id]

    @extend_schema_field(ReferenceSerializer(many=True))
    def get_references(self, answer: Answer) -> list[dict[str, Any]]:
        return answer_references(answer, self._redaction(answer))

    @extend_schema_field(
        serializers.DictField(
            child=serializers.ListField(child=serializers.CharField()),
            help_text="Once done: the passages a provider with native citations (anthropic) quoted from "
            "each final source, by final number; sources without quotes are left out ({} for other "
            "providers).",
        )
    )
    def get_quotes(self, answer: Answer) -> dict[str, list[str]]:
        return answer_quotes(answer, self._redaction(answer))

    @extend_schema_field(AnswerErrorSerializer(allow_null=True))
    def get_error(self, answer: Answer) -> dict[str, str] | None:
        if answer.status != Answer.Status.FAILED:
            return None
        return {"kind": answer.error_kind, "detail": answer.error_message}


class ConversationOutputSerializer(serializers.Serializer[Any]):
    """A conversation: its answers in turn order."""

    id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    answers = AnswerOutputSerializer(many=True)


class AskAcceptedSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    status = serializers.CharField()
    conversation = serializers.UUIDField()
    turn = serializers.IntegerField()
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


class SupportSentenceSerializer(serializers.Serializer[dict[str, Any]]):
    """One sentence of the final text (outside code blocks) and whether its sources back it."""

    text = serializers.CharField()
    start = serializers.IntegerField(help_text="Offset of its first character in the final text.")
    end = serializers.IntegerField(help_text="Offset just past it (its markers included).")
    cited = serializers.ListField(
        child=serializers.IntegerField(), help_text="The final numbers its markers cite, in written order."
    )
    scores = serializers.DictField(
        child=serializers.FloatField(min_value=0.0, max_value=1.0),
        help_text="Each cited source's support score (0..1), by final number.",
    )
    verdict = serializers.ChoiceField(choices=list(VERDICTS))
    grounded_by = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Uncited sentences: the original numbers of the retrieved sources (cited or dropped) "
        "scoring at least min_score, best first; empty otherwise.",
    )
    passages = serializers.DictField(
        child=serializers.ListField(child=serializers.IntegerField(min_value=0), min_length=2, max_length=2),
        required=False,
        help_text="For each cited source scoring at least min_score (by final number), the passage of its "
        "excerpt that backs the sentence: [start, end) offsets into the source's excerpt. Absent from "
        "records computed before passages were kept.",
    )


class SupportFallbackSerializer(serializers.Serializer[dict[str, str]]):
    method = serializers.CharField(help_text="The configured method, which failed.")
    reason = serializers.CharField()


class SupportSerializer(serializers.Serializer[dict[str, Any]]):
    """The support record (docs/reference/http.md, the trail's `support`)."""

    method = serializers.CharField(help_text="The method that scored: lexical, judge, or a dotted path.")
    min_score = serializers.FloatField(help_text="The bar: a source scoring at least this supports.")
    fallback = SupportFallbackSerializer(
        allow_null=True, required=False, help_text="When the configured method failed and lexical stood in."
    )
    sentences = SupportSentenceSerializer(many=True)


class CoverageSerializer(serializers.Serializer[dict[str, Any]]):
    """The coverage record (docs/reference/http.md, the trail's `coverage`; answers.support.coverage)."""

    terms = serializers.ListField(
        child=serializers.CharField(), help_text="The question's informative terms, in its order."
    )
    covered = serializers.ListField(
        child=serializers.CharField(), help_text="The terms some cited source holds (title or excerpt)."
    )
    missing = serializers.ListField(
        child=serializers.CharField(), help_text="The terms no cited source holds."
    )
    key = serializers.ListField(
        child=serializers.CharField(),
        help_text="The terms whose absence flags the answer: not weak, and held by some chunk of the corpus.",
    )
    flag = serializers.BooleanField(
        help_text="The answer may not address the question: a key term is missing "
        "(never for a declined answer)."
    )


class RewriteSerializer(serializers.Serializer[dict[str, Any]]):
    """How a follow-up's standalone question was made."""

    method = serializers.ChoiceField(choices=["model", "heuristic"])
    ms = serializers.FloatField()
    fallback = serializers.CharField(allow_null=True, help_text="Why the model's rewrite was not used.")
    prompt_version = serializers.CharField(allow_null=True, help_text="The rewrite prompt's version.")


class HistorySerializer(serializers.Serializer[dict[str, Any]]):
    """The earlier turns a follow-up's prompt carried (markers removed), and those cut to fit the budget."""

    sent = serializers.ListField(child=serializers.IntegerField())
    cut = serializers.ListField(child=serializers.IntegerField())
    chars = serializers.IntegerField()
    budget = serializers.IntegerField()


class TrailOutputSerializer(serializers.ModelSerializer[Answer]):
    text = serializers.CharField(source="final_text")
    conversation = serializers.UUIDField(source="conversation_id", allow_null=True)
    standalone_question = serializers.SerializerMethodField()
    rewrite = RewriteSerializer(allow_null=True, help_text="Null on a first turn.")
    history = HistorySerializer(allow_null=True, help_text="Null on a first turn.")
    sources = TrailSourceSerializer(many=True)
    markers = MarkerDecisionSerializer(many=True)
    normalized = NormalizedSerializer(many=True)
    error = serializers.SerializerMethodField()
    support = SupportSerializer(
        allow_null=True,
        help_text="Null until computed (after `done` is stored and published), or if it could not be.",
    )
    coverage = CoverageSerializer(
        allow_null=True,
        help_text="Computed with `support` (null until then): the question's terms the cited sources hold.",
    )
    withheld = serializers.SerializerMethodField(
        help_text="How many candidate passages retrieval removed because the asker may not read them."
    )

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
            "rules_version",
            "fallback",
            "declined",
            "truncated",
            "usage",
            "native",
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
            "support",
            "coverage",
            "withheld",
            "conversation",
            "turn",
            "standalone_question",
            "rewrite",
            "history",
        ]

    def get_withheld(self, answer: Answer) -> int:
        return int((answer.retrieval_trace or {}).get("withheld", 0))

    def get_error(self, answer: Answer) -> dict[str, str] | None:
        if answer.status != Answer.Status.FAILED:
            return None
        return {"kind": answer.error_kind, "detail": answer.error_message}

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_standalone_question(self, answer: Answer) -> str | None:
        return answer.standalone_question or None
