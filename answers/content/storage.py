"""Storing documents: create or update by key, rebuilding the chunks only when the content changed."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable
from typing import Any

from django.db import IntegrityError, transaction

from answers.content.validation import CleanDocument, Rule, clean_document
from answers.models import Chunk, ChunkEmbedding, Document
from answers.retrieval.chunking import ChunkSpec, chunk_text

HEADING_MAX = 500


def content_hash(*, title: str, body: str) -> str:
    """What the chunks are built from: the title (copied into each chunk) and the body."""
    return hashlib.sha256(f"{title}\x00{body}".encode()).hexdigest()


def document_access(document: Document) -> Rule:
    """A stored document's access as the API and the feeds write it (Rule.value)."""
    return Rule(document.access, tuple(document.access_groups or ()))


def document_values(clean: CleanDocument) -> dict[str, Any]:
    """The stored fields of a document besides its key, content hash included."""
    return {
        "title": clean.title,
        "url": clean.url,
        "body": clean.body,
        "doc_type": clean.doc_type,
        "metadata": clean.metadata,
        "access": clean.access.level,
        "access_groups": list(clean.access.groups),
        "content_hash": content_hash(title=clean.title, body=clean.body),
    }


def build_chunks(document: Document, specs: Iterable[ChunkSpec] | None = None) -> list[Chunk]:
    """The document's chunk rows, from `specs` when already computed (else chunked now)."""
    return [
        Chunk(
            document=document,
            ordinal=i,
            heading=spec.heading[:HEADING_MAX],
            title=document.title,
            text=spec.text,
            start_offset=spec.start,
            end_offset=spec.end,
        )
        for i, spec in enumerate(chunk_text(document.body) if specs is None else specs)
    ]


def document_upsert(
    *,
    key: str,
    title: str,
    url: str = "",
    body: str,
    doc_type: str = "",
    metadata: dict[str, Any] | None = None,
    access: object = None,
) -> tuple[Document, bool, bool]:
    """Create or update the document with this key: (document, created, changed).

    `changed` is True when any stored field changed (always on create). The
    chunks are rebuilt only when the content hash (title and body) changed.
    Raises InvalidDocument; an unsafe URL is stored as "" (see clean_document).
    """
    clean = clean_document(
        key=key, title=title, url=url, body=body, doc_type=doc_type, metadata=metadata, access=access
    )
    return document_store(clean=clean)


def document_store(
    *, clean: CleanDocument, source: str | None = None, unless_changed: Collection[str] = ()
) -> tuple[Document, bool, bool]:
    """document_upsert for input already through clean_document (the API shows its warnings).

    `source`: the registered model it is indexed from (answers.content.indexing), kept as given.
    `unless_changed`: stored fields (document_values' names) of which one at least (or `source`)
    must differ for an existing document to be written at all; none: any field that differs.
    """
    values = document_values(clean)
    if source is not None:
        values["source"] = source
    digest = values["content_hash"]
    with transaction.atomic():
        document = Document.objects.select_for_update().filter(key=clean.key).first()
        if document is None:
            try:
                with transaction.atomic():
                    document = Document.objects.create(key=clean.key, **values)
            except IntegrityError:
                # Someone created it meanwhile: update theirs instead.
                document = Document.objects.select_for_update().get(key=clean.key)
            else:
                Chunk.objects.bulk_create(build_chunks(document), batch_size=500)
                return document, True, True
        changed_fields = [name for name, value in values.items() if getattr(document, name) != value]
        significant = {*unless_changed, "source"} if unless_changed else None
        if not changed_fields or (significant is not None and significant.isdisjoint(changed_fields)):
            return document, False, False
        rebuild = document.content_hash != digest
        for name in changed_fields:
            setattr(document, name, values[name])
        document.save(update_fields=[*changed_fields, "updated_at"])
        if rebuild:
            _delete_chunks(document)
            Chunk.objects.bulk_create(build_chunks(document), batch_size=500)
        return document, False, True


def _delete_chunks(document: Document) -> None:
    """The document's chunks and their vectors, in two statements.

    Nothing else points at a chunk (answers keep snapshots, not chunk ids), so Django's
    delete, which reads every chunk and vector first to cascade and send signals, is not needed.
    """
    using = transaction.get_connection().alias
    ChunkEmbedding.objects.filter(chunk__document_id=document.pk)._raw_delete(using)
    Chunk.objects.filter(document_id=document.pk)._raw_delete(using)


def document_delete(*, document: Document) -> None:
    """Delete a document and its chunks (answers keep their snapshots)."""
    document.delete()
