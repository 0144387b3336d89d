"""The site's content: documents and their chunks."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class DocumentAccess(models.TextChoices):
    """Who may read a document (Document.Access; docs/reference/access.md); out here for Meta."""

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
    # Indexed: retrieval reads the newest edit before each question (answers.retrieval.rarity).
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

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
