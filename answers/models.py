"""The site's content (documents and their chunks) and the answers' citation trail."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse


class Document(models.Model):
    """One piece of the site's content, identified by a stable external key."""

    key = models.CharField(max_length=2000, unique=True, help_text="The document's URL or feed id.")
    title = models.CharField(max_length=500)
    url = models.CharField(
        max_length=2000, blank=True, help_text="An http(s) or site-relative URL, or empty."
    )
    body = models.TextField()
    doc_type = models.CharField("type", max_length=100, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["title", "id"]

    def __str__(self) -> str:
        return self.title


class Chunk(models.Model):
    """A retrievable passage of a document: whole sentences under one heading."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    heading = models.CharField(max_length=500, blank=True)
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


class Answer(models.Model):
    """One question asked and everything that was decided while answering it.

    Append-only: the pipeline (answers.services) is the only writer.
    """

    class Delivery(models.TextChoices):
        JSON = "json", "JSON"
        SSE = "sse", "SSE"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        STREAMING = "streaming", "Streaming"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    question = models.TextField()
    asker = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="answers",
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
    truncated = models.BooleanField(default=False)
    error_kind = models.CharField(max_length=32, blank=True)
    error_message = models.TextField(blank=True)
    retrieval_ms = models.FloatField(null=True, blank=True)
    first_piece_ms = models.FloatField(null=True, blank=True)
    generation_ms = models.FloatField(null=True, blank=True)
    total_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [("view_trail", "Can view answers' citation trails")]
        indexes = [models.Index(fields=["status", "created_at"], name="answer_status_created")]

    def __str__(self) -> str:
        return self.question[:80]

    def get_absolute_url(self) -> str:
        return reverse("answers:permalink", kwargs={"answer_id": self.id})


class AnswerSource(models.Model):
    """One retrieved source of an answer: a snapshot, its scores and what finalize decided."""

    class Status(models.TextChoices):
        PENDING = "", "Not finalized"
        CITED = "cited", "Cited"
        DROPPED = "dropped", "Dropped"
        FALLBACK = "fallback", "Fallback"

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
                condition=Q(status="dropped", final_number__isnull=True)
                | Q(status="")
                | Q(status__in=["cited", "fallback"], final_number__isnull=False),
                name="answersource_status_matches_number",
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.original_number}] {self.title}"
