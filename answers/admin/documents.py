"""Admin pages for the site's content: documents and their chunks, to see what retrieval can find.

Read-only apart from deleting: documents come in through `ingest` or the
documents API, which validate them and rebuild their chunks and search index.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from answers.models import Chunk, Document


class ChunkInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Chunk
    fields = ("ordinal", "heading", "text", "start_offset", "end_offset")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class NamedValuesFilter(admin.AllValuesFieldListFilter):
    """A field's stored values to filter on, the empty one named "(none)" (else its link has no text)."""

    def choices(self, changelist: Any) -> Iterator[Any]:
        for choice in super().choices(changelist):
            if choice["display"] == "":
                choice["display"] = "(none)"
            yield choice


class DocumentAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("title", "doc_type", "access_display", "url", "chunk_count", "updated_at")
    list_filter = ("access", ("source", NamedValuesFilter), ("doc_type", NamedValuesFilter))
    search_fields = ("title", "key", "url")
    ordering = ("title", "id")
    fields = (
        "key",
        "title",
        "url",
        "doc_type",
        "metadata",
        "access_display",
        "source",
        "content_hash",
        "created_at",
        "updated_at",
        "body",
    )
    readonly_fields = fields
    inlines = (ChunkInline,)
    list_per_page = 50

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        documents: QuerySet[Document] = super().get_queryset(request)
        return documents.annotate(chunk_total=Count("chunks"))

    @admin.display(description="access", ordering="access")
    def access_display(self, obj: Document) -> str:
        """The level, and for `groups` the group names (members of any may read it)."""
        if obj.access == Document.Access.GROUPS:
            return f"groups: {', '.join(obj.access_groups or [])}"
        return str(obj.access)

    @admin.display(description="chunks", ordering="chunk_total")
    def chunk_count(self, obj: Document) -> int:
        return int(getattr(obj, "chunk_total", 0))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
