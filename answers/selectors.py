"""Read queries shared by the API, the pages, the event streams and admin: who may read an answer
(access, trail permission, redaction), the answer and its sources as stored, and a reader's feedback.
An answer shaped for clients is answers.payloads; the first screen's examples, answers.examples."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable
from typing import Any

from django.db.models import Prefetch, Q

from answers.models import Answer, AnswerSource, Feedback
from answers.retrieval.access import (
    NOTHING_WITHHELD,
    Redaction,
    reader_for,
    unreadable_documents,
)


class Access(enum.Enum):
    """What a user may do with an answer id: read it, or nothing (as if it did not exist)."""

    READ = "read"
    MISSING = "missing"


def parse_answer_id(raw: str) -> uuid.UUID | None:
    """The answer id in its one accepted form, or None (every surface then answers as for a missing
    answer): the UUID as the API writes it, lowercase with hyphens (36 characters), nothing else
    (no uppercase, no hyphenless, braced or `urn:uuid:` spelling). The pages' and streams' routes
    take the same form (Django's `uuid` path converter)."""
    try:
        parsed = uuid.UUID(raw)
    except (TypeError, ValueError, AttributeError):
        return None
    return parsed if str(parsed) == raw else None


def answer_access(*, answer_id: uuid.UUID, user: Any) -> Access:
    """Signed-in askers' answers: them and staff. Anonymous answers: whoever holds the id.

    Anyone else, signed in or not, learns nothing: the answer is as missing (a 404 everywhere).
    A deleted user's answers stay signed-in answers with no asker: staff only. An evaluation run's
    answers are nobody's to read here: QA reviewers read their trails in admin.
    """
    row = Answer.objects.filter(id=answer_id).values("asker_id", "asked_signed_in", "origin").first()
    if row is None:
        return Access.MISSING
    signed_in, origin = row["asked_signed_in"], row["origin"]
    return _access(asker_id=row["asker_id"], signed_in=signed_in, origin=origin, user=user)


def _access(*, asker_id: int | None, signed_in: bool, origin: str, user: Any) -> Access:
    if origin == Answer.Origin.EVALUATION:
        return Access.MISSING
    return Access.READ if _may_read(asker_id=asker_id, signed_in=signed_in, user=user) else Access.MISSING


def _may_read(*, asker_id: int | None, signed_in: bool, user: Any) -> bool:
    if not signed_in:
        return True
    if user is None or not user.is_authenticated:
        return False
    return bool(user.is_staff or (asker_id is not None and user.pk == asker_id))


TRAIL_PERMISSION = "answers.view_trail"


def may_read_trails(user: Any) -> bool:
    """The QA reviewers' permission (superusers have it too): the trail API and the admin answer pages
    both ask this, so a reviewer and staff without it get the same answer from both. Staff status alone
    is not enough (it only lets one sign in to admin)."""
    return bool(
        user is not None and user.is_authenticated and user.is_active and user.has_perm(TRAIL_PERMISSION)
    )


# What reading an answer (API object, page, feedback) never needs, only its trail: a maximal
# answer's marker record alone is megabytes of JSON to decode (bench/RESULTS_hostile.md).
TRAIL_ONLY_FIELDS = ("raw_text", "markers", "normalized", "retrieval_trace")
# Loaded only by the reads that show them (the page: one query each): a maximal answer's html is
# over a megabyte, its support record a tenth of one.
LARGE_FIELDS = ("html", "support")


def answer_get_with_access(*, answer_id: uuid.UUID, user: Any) -> tuple[Answer | None, Access]:
    """The answer with its sources (None unless `user` may read it), and what `user` may do.

    Without its trail's records nor its large fields (loaded if touched): answer_trail_get has them.
    """
    deferred = Answer.objects.defer(*TRAIL_ONLY_FIELDS, *LARGE_FIELDS)
    answer = deferred.prefetch_related(with_sources()).filter(id=answer_id).first()
    if answer is None:
        return None, Access.MISSING
    access = _access(
        asker_id=answer.asker_id, signed_in=answer.asked_signed_in, origin=answer.origin, user=user
    )
    return (answer if access is Access.READ else None), access


def answer_get(*, answer_id: uuid.UUID, user: Any) -> Answer | None:
    """The answer with its sources, or None when it does not exist or `user` may not read it."""
    return answer_get_with_access(answer_id=answer_id, user=user)[0]


def with_sources() -> Prefetch[Any]:
    """Load an answer's sources with it, in retrieval order."""
    return Prefetch("sources", queryset=AnswerSource.objects.order_by("original_number"))


def answer_trail_get(*, answer_id: uuid.UUID) -> Answer | None:
    """The answer with its sources in retrieval order, whoever asks (callers check access)."""
    return Answer.objects.prefetch_related(with_sources()).filter(id=answer_id).first()


def answer_outcome_get(*, answer_id: uuid.UUID) -> Answer | None:
    """The answer with its sources, as its outcome (`done` or `error` payload) reads it: without the
    trail's records (a marker flood's `markers` run to megabytes) nor its raw text, loaded if touched."""
    deferred = Answer.objects.defer("raw_text", "markers", "normalized")
    return deferred.prefetch_related(with_sources()).filter(id=answer_id).first()


def answer_sources_get(*, answer_id: uuid.UUID) -> Answer | None:
    """The answer's sources and retrieval trace only (what answer_redaction reads), whoever asks:
    a stream's redaction is decided without loading the answer's text and records."""
    only = Answer.objects.only("id", "retrieval_trace")
    return only.prefetch_related(with_sources()).filter(id=answer_id).first()


def sees_every_source(user: Any) -> bool:
    """Staff and QA reviewers read every source of every answer they may read, withheld or not."""
    return bool(
        user is not None
        and user.is_authenticated
        and user.is_active
        and (user.is_staff or may_read_trails(user))
    )


def answer_redaction(*, answer: Answer, user: Any) -> Redaction:
    """Which of the answer's sources `user` may no longer read (their document's access changed, or it
    was deleted, after the answer): those are shown as `{"number", "withheld": true}` to them."""
    if sees_every_source(user):
        return NOTHING_WITHHELD
    ids = {s.document_id for s in answer.sources.all() if s.document_id is not None}
    # The trace keeps each source's document id after a delete cleared the source's (stored events carry it).
    kept = (answer.retrieval_trace or {}).get("kept") or []
    ids |= {int(k["document_id"]) for k in kept if isinstance(k, dict) and k.get("document_id") is not None}
    return documents_redaction(document_ids=ids, user=user)


def documents_redaction(*, document_ids: Iterable[int], user: Any) -> Redaction:
    """Of these documents, those `user` may no longer read (deleted ones too): the rule answer_redaction
    applies to an answer's sources, and a follow-up's history to the sources its earlier turns cited."""
    if sees_every_source(user):
        return NOTHING_WITHHELD
    return Redaction(frozenset(unreadable_documents(reader_for(user), document_ids)), deleted=True)


def answer_redactions(*, answers: list[Answer], user: Any) -> dict[uuid.UUID, Redaction]:
    """answer_redaction of each answer (a conversation's turns), by answer id: the one redaction, per turn."""
    return {answer.id: answer_redaction(answer=answer, user=user) for answer in answers}


def feedback_current(*, answer: Answer, user: Any, client: str) -> dict[str, Any]:
    """What this reader last sent on `answer`: the verdict (or None) and the flagged sources, by final number.

    A reader is the signed-in user, or for an anonymous reader the client hash (answers.feedback).
    """
    signed_in = user is not None and user.is_authenticated
    reader = Q(user=user) if signed_in else Q(user__isnull=True, client=client) & ~Q(client="")
    verdict: dict[str, Any] | None = None
    flags: list[dict[str, Any]] = []
    for row in (
        Feedback.objects.filter(reader, answer=answer).select_related("source").order_by("created_at", "id")
    ):
        if row.source is None:
            verdict = {"verdict": row.verdict, "comment": row.comment, "created_at": row.created_at}
        elif row.source.final_number is not None:
            flags.append(
                {"source": row.source.final_number, "comment": row.comment, "created_at": row.created_at}
            )
    flags.sort(key=lambda flag: flag["source"])
    return {"verdict": verdict, "flags": flags}
