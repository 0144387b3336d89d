"""Document access: who may read a document, and the filter retrieval applies for each asker.

A document's access (docs/reference/access.md) is `"public"`, `"signed-in"`, `"staff"`, or a
list of group names (members of any may read it). Staff and superusers read every document.
Retrieval removes what the asker may not read from the engines' candidates before anything is
scored, capped or put in a prompt (`AccessFilteredBackend`, `readable_chunks`), and weighs the
question's terms by their rarity among the chunks the asker may read (`closed_documents`,
answers.retrieval.rarity); reading an old answer redacts the sources its reader may no longer read
(answers.selectors.withheld_documents).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model

from answers.models import Document
from answers.retrieval.backends import Candidate, SearchBackend, SearchResult

# When candidates were withheld and the engine filled its limit, it is asked again for this many
# times more, so that an asker still gets `limit` readable candidates when the best matches are
# documents they may not read (bounded: a corpus almost wholly closed to the asker costs two searches).
OVERFETCH = 4


@dataclass(frozen=True)
class Reader:
    """Who reads (or asks): what the access rules need to know about them, loaded once."""

    signed_in: bool = False
    staff: bool = False
    groups: frozenset[str] = frozenset()

    def may_read(self, level: str, groups: Iterable[str] = ()) -> bool:
        if self.staff or level == Document.Access.PUBLIC:
            return True
        if level == Document.Access.SIGNED_IN:
            return self.signed_in
        if level == Document.Access.GROUPS:
            return self.signed_in and not self.groups.isdisjoint(groups)
        return False  # staff, or a level this version does not know


ANONYMOUS = Reader()


def reader_for(user: Any) -> Reader:
    """The reader for a user object (AnonymousUser or None: anonymous). One query for the groups."""
    if user is None or not user.is_authenticated or not user.is_active:
        return ANONYMOUS
    if user.is_staff or user.is_superuser:
        return Reader(signed_in=True, staff=True)
    return Reader(signed_in=True, groups=frozenset(user.groups.values_list("name", flat=True)))


def reader_for_id(user_id: int | None) -> Reader:
    """The reader for an asker's id (None: anonymous); a user deleted meanwhile reads as anonymous."""
    if user_id is None:
        return ANONYMOUS
    user = get_user_model().objects.filter(pk=user_id).first()
    return reader_for(user)


def unreadable_documents(reader: Reader, document_ids: Iterable[int]) -> set[int]:
    """Of these document ids, those the reader may not read (a missing document counts as unreadable)."""
    ids = set(document_ids)
    if not ids:
        return set()
    found = Document.objects.filter(pk__in=ids).values_list("pk", "access", "access_groups")
    readable = {pk for pk, level, groups in found if reader.may_read(level, groups or ())}
    return ids - readable


def closed_documents(reader: Reader) -> list[int]:
    """The ids of every document the reader may not read, in id order (none for staff).

    One query over the documents that are not public (public ones are open to everyone)."""
    if reader.staff:
        return []
    rows = (
        Document.objects.exclude(access=Document.Access.PUBLIC)
        .order_by("pk")
        .values_list("pk", "access", "access_groups")
    )
    return [pk for pk, level, groups in rows if not reader.may_read(level, groups or ())]


def readable_candidates(reader: Reader, candidates: list[Candidate]) -> tuple[list[Candidate], set[int]]:
    """The candidates the reader may read, in order, and the chunk ids of those withheld."""
    if reader.staff or not candidates:
        return candidates, set()
    unreadable = unreadable_documents(reader, {c.document_id for c in candidates})
    if not unreadable:
        return candidates, set()
    kept = [c for c in candidates if c.document_id not in unreadable]
    return kept, {c.chunk_id for c in candidates if c.document_id in unreadable}


class AccessFilteredBackend:
    """A search backend that returns only what `reader` may read and remembers what it withheld."""

    def __init__(self, backend: SearchBackend, reader: Reader) -> None:
        self.backend = backend
        self.reader = reader
        self.name = backend.name
        self.withheld: set[int] = set()  # chunk ids

    def search(self, terms: list[str], *, limit: int, subjects: frozenset[str] = frozenset()) -> SearchResult:
        found = self.backend.search(terms, limit=limit, subjects=subjects)
        kept, withheld = readable_candidates(self.reader, found.candidates)
        if withheld and len(found.candidates) >= limit:
            found = self.backend.search(terms, limit=limit * OVERFETCH, subjects=subjects)
            kept, withheld = readable_candidates(self.reader, found.candidates)
            kept = kept[:limit]
            # Only those ranked above the last candidate kept were withheld from this asker.
            last = found.candidates.index(kept[-1]) if kept else len(found.candidates) - 1
            withheld = {c.chunk_id for c in found.candidates[: last + 1] if c.chunk_id in withheld}
        self.withheld |= withheld
        return dataclasses.replace(found, candidates=kept)


@dataclass(frozen=True)
class Redaction:
    """The sources of an old answer its reader may no longer read, shown as `{"number", "withheld": true}`.

    `documents`: ids of documents the reader may not read now (deleted ones included);
    `deleted`: whether a source whose document is gone (its id cleared) is withheld too.
    """

    documents: frozenset[int] = frozenset()
    deleted: bool = False

    def withholds(self, document_id: int | None) -> bool:
        if document_id is None:
            return self.deleted
        return document_id in self.documents

    def __bool__(self) -> bool:
        return self.deleted or bool(self.documents)


NOTHING_WITHHELD = Redaction()
# The reference fields a withheld source keeps (docs/reference/http.md, the `Reference` schema).
WITHHELD_KEEPS = ("number",)


def withheld_reference(reference: dict[str, Any]) -> dict[str, Any]:
    return {**{k: reference[k] for k in WITHHELD_KEEPS if k in reference}, "withheld": True}


def redact_event(event_type: str, data: Any, redaction: Redaction) -> Any:
    """A stored or live answer event as this reader may see it (`references`, `cite`, `done` carry
    references; the others pass unchanged). `data` is the event's payload, parsed."""
    if not redaction or not isinstance(data, dict):
        return data
    if event_type == "cite" and isinstance(data.get("reference"), dict):
        reference = data["reference"]
        if redaction.withholds(reference.get("document_id")):
            return {**data, "reference": withheld_reference(reference)}
        return data
    if event_type in ("references", "done") and isinstance(data.get("references"), list):
        references = []
        hidden: set[str] = set()
        for reference in data["references"]:
            if isinstance(reference, dict) and redaction.withholds(reference.get("document_id")):
                references.append(withheld_reference(reference))
                hidden.add(str(reference.get("number")))
            else:
                references.append(reference)
        redacted = {**data, "references": references}
        if isinstance(data.get("quotes"), dict):
            redacted["quotes"] = {n: q for n, q in data["quotes"].items() if n not in hidden}
        return redacted
    return data
