"""Keeping the registered models' documents in step: on save and delete (after commit) and `reindex`.

An object in its Source's queryset has one document (key `Source.key`, `Document.source` the
model's label); an object outside it, or deleted, has none. A save re-stores the document only
when a field it is built from changed (document_store compares them; the chunks are rebuilt, and
their vectors asked for, only when the content hash of title and body changed). Indexing runs
after the site's transaction commits and never fails the site's save: an error (an embeddings
outage, a body the Source cannot give) is logged, and `manage.py reindex` catches up.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Any

from django.db import transaction
from django.db.models import Model
from django.db.models.signals import post_delete, post_save

from answers.conf import conf
from answers.content.readers import html_to_text
from answers.content.registry import Source, registered, source_for, watch
from answers.content.storage import document_store
from answers.content.validation import CleanDocument, clean_document
from answers.models import Document
from answers.retrieval.embeddings import EmbedOutcome, embed_missing

logger = logging.getLogger(__name__)


class Outcome(enum.Enum):
    ADDED = "added"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    REMOVED = "removed"
    ABSENT = "absent"  # not content, and no document to remove


def clean_object(source: Source, obj: Any) -> CleanDocument:
    """The object's document fields through the same checks as every other document."""
    body = source.body(obj)
    if source.body_format == "html":
        body = html_to_text(body or "")[1]
    updated = source.updated_at(obj)
    return clean_document(
        key=source.key(obj),
        title=source.title(obj),
        url=source.url(obj),
        body=body,
        doc_type=source.label,
        metadata={"updated_at": updated.isoformat()} if updated is not None else {},
        access=source.access(obj),
    )


def remove_documents(source: Source, keys: Iterable[str]) -> int:
    """Delete this source's documents with these keys (chunks and vectors go with them)."""
    _, by_model = Document.objects.filter(source=source.label, key__in=list(keys)).delete()
    return int(by_model.get(Document._meta.label, 0))


def index_object(source: Source, pk: Any, *, embed: bool = True) -> Outcome:
    """Bring the document of the object with primary key `pk` in step with it (raises on bad input)."""
    obj = source.get_queryset().filter(pk=pk).first()
    if obj is None:
        # No longer content (unpublished) or deleted: its document goes, found by its key.
        known = source.model._default_manager.filter(pk=pk).first() or _stand_in(source, pk)
        removed = Document.objects.filter(source=source.label, key=source.key(known)).delete()
        return Outcome.REMOVED if removed[0] else Outcome.ABSENT
    clean = clean_object(source, obj)
    # A save that changes nothing indexed (only a timestamp, or fields the Source does not read)
    # writes nothing: one locked read of the document, in the transaction that would write it.
    document, created, changed = document_store(clean=clean, source=source.label, unless_changed=COMPARED)
    if changed and embed:
        _embed([document.pk])
    if created:
        return Outcome.ADDED
    return Outcome.UPDATED if changed else Outcome.UNCHANGED


# What a document says, besides its metadata (where Source.updated_at goes): a save that changes
# none of these (nor the document's source) leaves the document as it is.
COMPARED = ("content_hash", "title", "url", "doc_type", "access", "access_groups")


def _stand_in(source: Source, pk: Any) -> Any:
    """An unsaved object with only its primary key: enough for the default key (label:pk)."""
    obj = source.model()
    obj.pk = pk
    return obj


def _embed(document_ids: list[int]) -> EmbedOutcome:
    # embed_missing never raises for an unreachable server: it logs, and the chunks wait for reindex.
    return embed_missing(document_ids, deadline=conf.EMBEDDINGS_TIMEOUT)


def _index_after_commit(source: Source, pk: Any, key: str | None) -> None:
    try:
        if key is not None:
            remove_documents(source, [key])
        else:
            index_object(source, pk)
    except Exception:
        # The site's own save has committed; a document that cannot be built must not undo or
        # fail it. `manage.py reindex` reports the same object again.
        logger.exception("answers: could not index %s %r (run `manage.py reindex`)", source.label, pk)


def on_save(sender: type[Model], instance: Any, raw: bool = False, **kwargs: Any) -> None:
    source = source_for(sender)
    if source is None or raw:  # raw: loaddata, whose objects may not be complete yet
        return
    transaction.on_commit(partial(_index_after_commit, source, instance.pk, None))


def on_delete(sender: type[Model], instance: Any, **kwargs: Any) -> None:
    source = source_for(sender)
    if source is None:
        return
    # The key is taken now: after the delete the object can no longer give it.
    try:
        key = source.key(instance)
    except Exception:
        logger.exception("answers: could not compute the key of deleted %s %r", source.label, instance.pk)
        return
    transaction.on_commit(partial(_index_after_commit, source, instance.pk, key))


def connect() -> None:
    """Watch the saves and deletes of the registered models (those registered later too).

    Connected per model, not for every sender: a delete receiver for every model would cost
    every delete in the site (and the chunks deleted at each re-index) Django's fast path,
    a read of each row (and of the rows that cascade from it) before deleting it.
    """
    watch(_connect_model)


def _connect_model(model: type[Model]) -> None:
    uid = f"answers.content.indexing:{model._meta.label_lower}"
    post_save.connect(on_save, sender=model, dispatch_uid=f"{uid}:save")
    post_delete.connect(on_delete, sender=model, dispatch_uid=f"{uid}:delete")


@dataclass
class ReindexReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (label:pk, reason)
    embeddings: EmbedOutcome | None = None

    def summary(self) -> str:
        counts = (
            ("added", self.added),
            ("updated", self.updated),
            ("unchanged", self.unchanged),
            ("removed", self.removed),
            ("failed", len(self.failures)),
        )
        return ", ".join(f"{name} {n}" for name, n in counts)


BATCH = 200


def _reindex_one(source: Source, obj: Any, report: ReindexReport, seen: set[str]) -> None:
    try:
        clean = clean_object(source, obj)
        _, created, changed = document_store(clean=clean, source=source.label)
    except Exception as exc:
        report.failures.append((f"{source.label}:{obj.pk}", str(exc) or type(exc).__name__))
        return
    seen.add(clean.key)
    if created:
        report.added += 1
    elif changed:
        report.updated += 1
    else:
        report.unchanged += 1


def sources_named(labels: Iterable[str]) -> list[Source]:
    """The registered sources for `app_label.ModelName` labels (any case); ValueError naming unknown ones."""
    by_label = {source.label: source for source in registered()}
    wanted = [label.lower() for label in labels]
    unknown = [label for label in wanted if label not in by_label]
    if unknown:
        known = ", ".join(sorted(by_label)) or "none"
        raise ValueError(f"not registered: {', '.join(unknown)} (registered: {known})")
    return [by_label[label] for label in wanted]


def reindex(
    sources: list[Source] | None = None,
    *,
    on_total: Callable[[int], object] | None = None,
    progress: Callable[[int], object] | None = None,
    embed: bool = True,
) -> ReindexReport:
    """Rebuild the sources' documents from their querysets; remove those of objects no longer in them.

    Objects that fail are reported, never raised; the rest go in. With embeddings on, every chunk
    of these sources that has no vector gets one (what an outage during a save left out).
    """
    sources = registered() if sources is None else sources
    report = ReindexReport()
    if on_total is not None:
        on_total(sum(source.get_queryset().count() for source in sources))
    for source in sources:
        seen: set[str] = set()
        objects = source.get_queryset().order_by("pk").iterator(chunk_size=BATCH)
        while batch := list(islice(objects, BATCH)):
            # One commit per batch, not per object (a commit is a disk flush); each object's
            # write is a savepoint of it, so one that fails leaves the others in.
            with transaction.atomic():
                for obj in batch:
                    _reindex_one(source, obj, report, seen)
            if progress is not None:
                progress(len(batch))
        stored = Document.objects.filter(source=source.label).values_list("key", flat=True)
        stale_keys = [key for key in stored.iterator(chunk_size=2000) if key not in seen]
        for start in range(0, len(stale_keys), 500):
            report.removed += remove_documents(source, stale_keys[start : start + 500])
    if embed:
        labels = [source.label for source in sources]
        ids = list(Document.objects.filter(source__in=labels).values_list("pk", flat=True))
        report.embeddings = _embed(ids) if ids else None
    return report
