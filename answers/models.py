"""The site's content (documents and their chunks) and the answers' citation trail."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import models
from django.db.models import Q
from django.urls import reverse

from answers.citations import trail
from answers.providers.base import ErrorKind as AnswerErrorKind


class DocumentAccess(models.TextChoices):
    """Who may read a document (Document.Access; docs/api.md, "Document access"); out here for Meta."""

    PUBLIC = "public", "Public"
    SIGNED_IN = "signed-in", "Signed-in users"
    STAFF = "staff", "Staff"
    GROUPS = "groups", "Members of groups"


class Document(models.Model):
    """One piece of the site's content, identified by a stable external key."""

    Access = DocumentAccess

    key = models.CharField(max_length=2000, unique=True, help_text="The document's URL or feed id.")
    title = models.CharField(max_length=500)
    url = models.CharField(
        max_length=2000, blank=True, help_text="An http(s) or site-relative URL, or empty."
    )
    body = models.TextField()
    doc_type = models.CharField("type", max_length=100, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64, editable=False)
    access = models.CharField(
        max_length=16,
        choices=Access.choices,
        default=Access.PUBLIC,
        db_index=True,
        help_text="Who may read it; staff may read every document.",
    )
    access_groups = models.JSONField(
        default=list, blank=True, help_text="With access `groups`: the group names whose members may read it."
    )
    source = models.CharField(
        max_length=200,
        blank=True,
        db_index=True,
        editable=False,
        help_text="The registered model (app_label.model_name) it comes from; empty for files and the API.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["title", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(access__in=DocumentAccess.values), name="document_access_known"
            )
        ]

    def __str__(self) -> str:
        return self.title


class Chunk(models.Model):
    """A retrievable passage of a document: whole sentences under one heading."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    heading = models.CharField(max_length=500, blank=True)
    # A copy of the document's title: the search index weights it per chunk, and a
    # PostgreSQL generated column cannot read another table.
    title = models.CharField(max_length=500, blank=True)
    text = models.TextField()
    start_offset = models.PositiveIntegerField()
    end_offset = models.PositiveIntegerField()

    class Meta:
        ordering = ["document_id", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["document", "ordinal"], name="chunk_unique_ordinal"),
            models.CheckConstraint(
                condition=Q(end_offset__gte=models.F("start_offset")), name="chunk_offsets_ordered"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal}"


class Conversation(models.Model):
    """Answers asked one after the other, each a turn with its own retrieval, Sources list and trail.

    Read by whoever may read its answers; continued only by whoever started it: the signed-in
    asker, or for an anonymous one the same session (answers/conversations/services.py).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    asker = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="conversations",
    )
    session_key = models.CharField(
        max_length=64,
        blank=True,
        editable=False,
        help_text="For an anonymous conversation, the session that may add turns to it.",
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Conversation {self.id}"

    def get_absolute_url(self) -> str:
        return reverse("answers:conversation", kwargs={"conversation_id": self.id})


class Answer(models.Model):
    """One question asked and everything that was decided while answering it.

    Append-only: the pipeline (answers.pipeline) is the only writer.
    """

    class Delivery(models.TextChoices):
        JSON = "json", "JSON"
        SSE = "sse", "SSE"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        STREAMING = "streaming", "Streaming"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    # The providers' vocabulary (answers.providers.base.ErrorKind), as choices (the functional
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
    # deleted user's answers (asker then null) stay private, readable by staff only (docs/api.md).
    asked_signed_in = models.BooleanField(
        default=False,
        editable=False,
        help_text=(
            "Asked by a signed-in user: readable by that user and staff only, even once the user is deleted."
        ),
    )
    delivery = models.CharField(max_length=8, choices=Delivery.choices)
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
        help_text="Which sentences the sources back (docs/api.md, trail `support`); null until computed.",
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
        "(docs/api.md, trail `coverage`); null until computed, with `support`.",
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


class ReviewVerdict(models.TextChoices):
    """A reviewer's verdict (Review.Verdict); defined out here for Meta."""

    OK = "ok", "OK"
    WRONG_CITATION = "wrong_citation", "Wrong citation"
    MISSING_CITATION = "missing_citation", "Missing citation"
    UNSUPPORTED_CLAIM = "unsupported_claim", "Unsupported claim"
    OTHER = "other", "Other"


class Review(models.Model):
    """A QA reviewer's verdict on one answer. Several per answer; the trail itself is never edited."""

    Verdict = ReviewVerdict

    # PROTECT: a reviewed answer is part of the audit record; deleting it must be deliberate.
    answer = models.ForeignKey(Answer, on_delete=models.PROTECT, related_name="reviews")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="answer_reviews",
        editable=False,
    )
    verdict = models.CharField(max_length=32, choices=Verdict.choices)
    notes = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = (models.Index(fields=["answer", "-created_at"], name="review_answer_created"),)
        constraints = (
            models.CheckConstraint(
                condition=Q(verdict__in=ReviewVerdict.values),
                name="review_verdict_valid",
            ),
        )

    def __str__(self) -> str:
        return f"{self.get_verdict_display()} on {self.answer_id}"


class SourceFlag(models.TextChoices):
    """A reviewer's remark on a source (ReviewSourceFlag.Flag); defined out here for Meta."""

    DOES_NOT_SUPPORT = "does_not_support", "Cited but does not support the claim"
    SHOULD_BE_CITED = "should_be_cited", "Should have been cited"
    IRRELEVANT = "irrelevant", "Irrelevant retrieval"
    OTHER = "other", "Other"


class ReviewSourceFlag(models.Model):
    """A reviewer's remark on one retrieved source of the reviewed answer."""

    Flag = SourceFlag

    review = models.ForeignKey(Review, on_delete=models.CASCADE, related_name="source_flags")
    source = models.ForeignKey(AnswerSource, on_delete=models.PROTECT, related_name="review_flags")
    flag = models.CharField(max_length=32, choices=Flag.choices)
    note = models.CharField(max_length=1000, blank=True)

    class Meta:
        ordering = ("review_id", "source_id", "id")
        constraints = (
            models.UniqueConstraint(fields=["review", "source", "flag"], name="reviewsourceflag_unique"),
            models.CheckConstraint(
                condition=Q(flag__in=SourceFlag.values),
                name="reviewsourceflag_flag_valid",
            ),
        )

    def __str__(self) -> str:
        return f"{self.get_flag_display()}: source {self.source_id}"

    def clean(self) -> None:
        # A cross-table rule a CheckConstraint cannot express.
        try:
            review, source = self.review, self.source
        except ObjectDoesNotExist:
            return  # the missing field reports itself
        if source.answer_id != review.answer_id:
            raise ValidationError({"source": "Pick a source of the reviewed answer."})


class ChunkEmbedding(models.Model):
    """A chunk's vector and the model it came from (answers.retrieval.dense; one per chunk).

    `vector` holds little-endian float32s (the SQLite search reads it). On PostgreSQL
    with embeddings on, migration 0007 adds a pgvector `halfvec` column `embedding` that holds
    the vector instead (with an HNSW cosine index per dimension); `vector` stays empty.
    Deleting a chunk (so a document) deletes its vector.
    """

    chunk = models.OneToOneField(Chunk, on_delete=models.CASCADE, related_name="embedding")
    model = models.CharField(max_length=200, db_index=True)
    dimensions = models.PositiveIntegerField()
    vector = models.BinaryField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(dimensions__gte=1), name="chunkembedding_dimensions_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.chunk_id} ({self.model})"


FEEDBACK_COMMENT_MAX_LENGTH = 1000


class FeedbackVerdict(models.TextChoices):
    """A reader's verdict on an answer (Feedback.Verdict); defined out here for Meta."""

    HELPFUL = "helpful", "Helpful"
    UNHELPFUL = "unhelpful", "Unhelpful"


class Feedback(models.Model):
    """A reader's verdict on a done answer, maybe naming one source of its final list that does not
    back it. Readers only add; reviewers only resolve (a review resolves the feedback it covers).
    The trail itself is never edited.
    """

    Verdict = FeedbackVerdict

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="feedback", editable=False)
    verdict = models.CharField(max_length=16, choices=Verdict.choices, editable=False)
    source = models.ForeignKey(
        AnswerSource,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="feedback",
        editable=False,
        help_text="The source of the final list the reader says does not back the answer.",
    )
    comment = models.CharField(max_length=FEEDBACK_COMMENT_MAX_LENGTH, blank=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="answer_feedback",
        editable=False,
    )
    client = models.CharField(
        max_length=64,
        blank=True,
        editable=False,
        help_text="An anonymous reader: a keyed hash of the client's address (never the address).",
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    resolved_at = models.DateTimeField(null=True, blank=True, editable=False)
    resolved_by = models.ForeignKey(
        Review,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="resolved_feedback",
        editable=False,
        help_text="The review that resolved it (empty when a reviewer marked it resolved by hand).",
    )

    class Meta:
        ordering = ("-created_at", "-id")
        verbose_name_plural = "feedback"
        indexes = (models.Index(fields=["answer", "resolved_at"], name="feedback_answer_resolved"),)
        constraints = (
            models.CheckConstraint(
                condition=Q(verdict__in=FeedbackVerdict.values), name="feedback_verdict_valid"
            ),
            # A flagged source means the source does not back the answer: never "helpful".
            models.CheckConstraint(
                condition=Q(source__isnull=True) | Q(verdict=FeedbackVerdict.UNHELPFUL),
                name="feedback_flag_is_unhelpful",
            ),
            models.CheckConstraint(
                condition=Q(resolved_by__isnull=True) | Q(resolved_at__isnull=False),
                name="feedback_resolved_by_has_time",
            ),
            # One verdict per reader per answer, and one flag per reader per source: a later one
            # replaces the earlier (answers.feedback.feedback_create). A reader is a user, or for
            # an anonymous reader the client hash; a row whose user was deleted has neither.
            models.UniqueConstraint(
                fields=["answer", "user"],
                condition=Q(source__isnull=True, user__isnull=False),
                name="feedback_one_verdict_per_user",
            ),
            models.UniqueConstraint(
                fields=["answer", "client"],
                condition=Q(source__isnull=True, user__isnull=True) & ~Q(client=""),
                name="feedback_one_verdict_per_client",
            ),
            models.UniqueConstraint(
                fields=["answer", "user", "source"],
                condition=Q(source__isnull=False, user__isnull=False),
                name="feedback_one_flag_per_user",
            ),
            models.UniqueConstraint(
                fields=["answer", "client", "source"],
                condition=Q(source__isnull=False, user__isnull=True) & ~Q(client=""),
                name="feedback_one_flag_per_client",
            ),
        )

    def __str__(self) -> str:
        flagged = f", source {self.source_id}" if self.source_id else ""
        return f"{self.get_verdict_display()}{flagged} on {self.answer_id}"

    @property
    def resolved(self) -> bool:
        return self.resolved_at is not None
