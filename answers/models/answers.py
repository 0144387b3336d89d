"""An answer and its sources: the citation trail as stored."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse

from answers.citations import trail
from answers.failures import ErrorKind as AnswerErrorKind
from answers.models.conversations import Conversation
from answers.models.documents import Document


class Answer(models.Model):
    """One question asked and everything that was decided while answering it.

    Append-only: the pipeline (answers.pipeline) is the only writer.
    """

    class Delivery(models.TextChoices):
        JSON = "json", "JSON"
        SSE = "sse", "SSE"

    class Origin(models.TextChoices):
        READER = "reader", "Reader"
        EVALUATION = "evaluation", "Evaluation run"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        STREAMING = "streaming", "Streaming"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    # The providers' and the pipeline's vocabulary (answers.failures.ErrorKind), as choices (the functional
    # API, which the stubs do not know).
    ErrorKind = models.TextChoices(  # type: ignore[call-overload]
        "ErrorKind", [(kind.name, (kind.value, kind.label)) for kind in AnswerErrorKind]
    )

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    question = models.TextField()
    asker = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="answers",
    )
    # Who may read it is decided by how it was asked, not by whether its asker still exists: a
    # deleted user's answers (asker then null) stay private, readable by staff only
    # (docs/reference/access.md).
    asked_signed_in = models.BooleanField(
        default=False,
        editable=False,
        help_text=(
            "Asked by a signed-in user: readable by that user and staff only, even once the user is deleted."
        ),
    )
    delivery = models.CharField(max_length=8, choices=Delivery.choices)
    # Who asked: a reader, or an evaluation run (docs/howto/evaluations-ci.md); evaluation answers
    # never show on readers' pages, conversations or the citation health page.
    origin = models.CharField(
        max_length=16, choices=Origin.choices, default=Origin.READER, editable=False, db_index=True
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    provider = models.CharField(max_length=50)
    model = models.CharField(max_length=200, blank=True)
    prompt_version = models.CharField(max_length=50, blank=True)
    min_score = models.FloatField(help_text="The relevance threshold used.")
    max_sources = models.PositiveIntegerField(help_text="The entity cap used.")
    retrieval_trace = models.JSONField(default=dict, blank=True)
    raw_text = models.TextField(blank=True, help_text="Exactly what the provider sent.")
    final_text = models.TextField(blank=True)
    stripped = models.JSONField(
        default=list, blank=True, help_text="Out-of-range marker members removed, in the order met."
    )
    fallback = models.BooleanField(default=False)
    declined = models.BooleanField(
        default=False,
        editable=False,
        help_text="No retrieved source reached the threshold: the provider was not called and the text is "
        "ANSWERS_DECLINE_TEXT (ANSWERS_NO_SOURCES=decline).",
    )
    markers = models.JSONField(
        default=list,
        blank=True,
        editable=False,
        help_text="Every marker's decision, from the raw text to the final one (answers.citations.trail).",
    )
    normalized = models.JSONField(
        default=list,
        blank=True,
        editable=False,
        help_text="Marker dialects rewritten before stripping ({dialect, text} in the order met).",
    )
    html = models.TextField(
        blank=True,
        default="",
        editable=False,
        help_text="The final text rendered and sanitized (answers.rendering), stored once `done`: what "
        "the `done` event, the page and admin show, never rendered again on a read.",
    )
    rules_version = models.PositiveSmallIntegerField(
        default=1,
        editable=False,
        help_text="The version of the citation rules the trail was computed under (docs/citations.md).",
    )
    truncated = models.BooleanField(default=False)
    usage = models.JSONField(
        null=True,
        blank=True,
        editable=False,
        help_text="Token usage the provider reported ({prompt_tokens, completion_tokens}); null when none.",
    )
    native = models.JSONField(
        default=list,
        blank=True,
        editable=False,
        help_text="Each native citation as the provider gave it (docs/reference/http.md, trail `native`).",
    )
    error_kind = models.CharField(
        max_length=32, blank=True
    )  # an ErrorKind (no choices: admin shows the value)
    error_message = models.TextField(blank=True)
    retrieval_ms = models.FloatField(null=True, blank=True)
    first_piece_ms = models.FloatField(null=True, blank=True)
    generation_ms = models.FloatField(null=True, blank=True)
    total_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    support = models.JSONField(
        null=True,
        blank=True,
        editable=False,
        help_text="Which sentences the sources back (docs/reference/http.md, trail `support`); "
        "null until computed.",
    )
    unsupported_count = models.PositiveIntegerField(
        null=True,
        blank=True,
        editable=False,
        help_text="Sentences citing a source that scores under the support bar; null until computed.",
    )
    grounded_uncited_count = models.PositiveIntegerField(
        null=True,
        blank=True,
        editable=False,
        help_text="Sentences without a marker that a retrieved source grounds; null until computed.",
    )
    coverage = models.JSONField(
        null=True,
        blank=True,
        editable=False,
        help_text="The question's informative terms and which of them the cited sources contain "
        "(docs/reference/http.md, trail `coverage`); null until computed, with `support`.",
    )
    may_not_address = models.BooleanField(
        null=True,
        blank=True,
        editable=False,
        help_text="The cited sources miss a key term of the question (coverage `flag`); null until computed.",
    )
    idempotency_key = models.CharField(
        max_length=255, blank=True, help_text="The client's Idempotency-Key header, if it sent one."
    )
    idempotency_scope = models.CharField(
        max_length=64, blank=True, help_text="Whose key it is: a user, or anonymous clients."
    )
    # Conversations (answers/conversations/): null for answers stored before them
    # (migration 0017_conversations).
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.CASCADE, related_name="turns"
    )
    turn = models.PositiveIntegerField(default=1, help_text="Its place in its conversation, from 1.")
    standalone_question = models.TextField(
        blank=True, help_text="A follow-up's question as retrieval ran on it (empty on a first turn)."
    )
    rewrite = models.JSONField(
        null=True,
        blank=True,
        editable=False,
        help_text="How the standalone question was made (method, ms, fallback); null on a first turn.",
    )
    history = models.JSONField(
        null=True,
        blank=True,
        editable=False,
        help_text="The earlier turns the prompt carried and those cut to fit the budget.",
    )

    class Meta:
        ordering = ["-created_at"]
        permissions = [("view_trail", "Can view answers' citation trails")]
        indexes = [models.Index(fields=["status", "created_at"], name="answer_status_created")]
        constraints = [
            # An answer with an asker was asked signed in; without one it was asked anonymously, or
            # its asker has since been deleted (then it stays private).
            models.CheckConstraint(
                condition=Q(asker__isnull=True) | Q(asked_signed_in=True),
                name="answer_asker_is_signed_in",
            ),
            # A retried request finds its first attempt's answer; two attempts never both generate.
            models.UniqueConstraint(
                fields=["idempotency_scope", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="answer_idempotency_key_unique",
            ),
            # A declined answer cites nothing and lists nothing: it is not a fallback (which lists
            # every retrieved source).
            models.CheckConstraint(
                condition=Q(declined=False) | Q(fallback=False), name="answer_declined_not_fallback"
            ),
            # Two follow-ups sent at once cannot both become the same turn (the second is a 409).
            models.UniqueConstraint(
                fields=["conversation", "turn"],
                condition=Q(conversation__isnull=False),
                name="answer_conversation_turn_unique",
            ),
            models.CheckConstraint(condition=Q(turn__gte=1), name="answer_turn_positive"),
        ]

    def __str__(self) -> str:
        return self.question[:80]

    def get_absolute_url(self) -> str:
        return reverse("answers:permalink", kwargs={"answer_id": self.id})


class SourceStatus(models.TextChoices):
    """What finalize decided for a retrieved source (AnswerSource.Status); defined out here for Meta."""

    PENDING = "", "Not finalized"
    CITED = trail.SourceStatus.CITED.value, "Cited"
    DROPPED = trail.SourceStatus.DROPPED.value, "Dropped"
    FALLBACK = trail.SourceStatus.FALLBACK.value, "Fallback"


class AnswerSource(models.Model):
    """One retrieved source of an answer: a snapshot, its scores and what finalize decided."""

    Status = SourceStatus

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="sources")
    original_number = models.PositiveIntegerField(help_text="Its number in retrieval order.")
    final_number = models.PositiveIntegerField(null=True, blank=True, help_text="Null when dropped.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, blank=True)
    document = models.ForeignKey(
        Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="answer_sources"
    )
    title = models.CharField(max_length=500)
    url = models.CharField(max_length=2000, blank=True)
    excerpt = models.TextField(help_text="The excerpt the model was shown.")
    lexical_score = models.FloatField(default=0.0)
    rerank_score = models.FloatField(default=0.0)
    citation_count = models.PositiveIntegerField(default=0)
    first_cited_offset = models.PositiveIntegerField(
        null=True, blank=True, help_text="Character offset of its first marker in the raw text."
    )
    renumbered = models.BooleanField(
        default=False,
        editable=False,
        help_text="Whether it kept a number in the final text other than its retrieval number.",
    )
    quotes = models.JSONField(
        default=list,
        blank=True,
        editable=False,
        help_text="Passages a provider with native citations said it cited from this source, in order.",
    )

    class Meta:
        ordering = ["answer_id", "original_number"]
        constraints = [
            models.UniqueConstraint(
                fields=["answer", "original_number"], name="answersource_unique_original"
            ),
            models.UniqueConstraint(
                fields=["answer", "final_number"],
                condition=Q(final_number__isnull=False),
                name="answersource_unique_final",
            ),
            models.CheckConstraint(condition=Q(original_number__gte=1), name="answersource_original_gte_1"),
            models.CheckConstraint(
                condition=Q(final_number__isnull=True) | Q(final_number__gte=1),
                name="answersource_final_gte_1",
            ),
            models.CheckConstraint(
                condition=Q(status=SourceStatus.DROPPED, final_number__isnull=True)
                | Q(status=SourceStatus.PENDING)
                | Q(status__in=[SourceStatus.CITED, SourceStatus.FALLBACK], final_number__isnull=False),
                name="answersource_status_matches_number",
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.original_number}] {self.title}"
