"""Read queries shared by the API, the pages, the event streams and admin."""

from __future__ import annotations

import enum
import uuid
from typing import Any

from django.db.models import Prefetch

from answers.citations.trail import final_markers
from answers.models import Answer, AnswerSource
from answers.rendering import render_answer_html
from answers.retrieval.types import RetrievedSource


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
    """
    row = Answer.objects.filter(id=answer_id).values("asker_id").first()
    return Access.MISSING if row is None else _access(asker_id=row["asker_id"], user=user)


def _access(*, asker_id: int | None, user: Any) -> Access:
    return Access.READ if _may_read(asker_id=asker_id, user=user) else Access.MISSING


def answer_readable_by(*, answer_id: uuid.UUID, user: Any) -> bool:
    return answer_access(answer_id=answer_id, user=user) is Access.READ


def _may_read(*, asker_id: int | None, user: Any) -> bool:
    if asker_id is None:
        return True
    return bool(user is not None and user.is_authenticated and (user.is_staff or user.pk == asker_id))


TRAIL_PERMISSION = "answers.view_trail"


def may_read_trails(user: Any) -> bool:
    """The QA reviewers' permission (superusers have it too): the trail API and the admin answer pages
    both ask this, so a reviewer and staff without it get the same answer from both. Staff status alone
    is not enough (it only lets one sign in to admin)."""
    return bool(
        user is not None and user.is_authenticated and user.is_active and user.has_perm(TRAIL_PERMISSION)
    )


def answer_get_with_access(*, answer_id: uuid.UUID, user: Any) -> tuple[Answer | None, Access]:
    """The answer with its sources (None unless `user` may read it), and what `user` may do."""
    answer = answer_trail_get(answer_id=answer_id)
    if answer is None:
        return None, Access.MISSING
    access = _access(asker_id=answer.asker_id, user=user)
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


def reference_payload(source: AnswerSource | RetrievedSource, number: int) -> dict[str, Any]:
    """A numbered source as clients see it: in `references`, `done`, the API and the pages."""
    return {
        "number": number,
        "document_id": source.document_id,
        "title": source.title,
        "url": source.url,
        "excerpt": source.excerpt,
    }


def answer_references(answer: Answer) -> list[dict[str, Any]]:
    """Done: the final references in final order. Otherwise: every retrieved source, retrieval order."""
    sources = sorted(answer.sources.all(), key=lambda s: s.original_number)
    if answer.status != Answer.Status.DONE:
        return [reference_payload(s, s.original_number) for s in sources]
    final = sorted((s for s in sources if s.final_number is not None), key=lambda s: s.final_number or 0)
    return [reference_payload(s, s.final_number or 0) for s in final]


def answer_done_payload(*, answer: Answer) -> dict[str, Any]:
    """The `done` event: the finalized pair, equal to what GET /api/answers/<id>/ returns,
    plus `html`: the final text rendered and sanitized by the server, markers linked to `#source-N`.
    `truncated`: the provider stopped at its length limit (the page says the answer was cut short).
    """
    references = answer_references(answer)
    return {
        "text": answer.final_text,
        "references": references,
        "fallback": answer.fallback,
        "truncated": answer.truncated,
        "html": render_answer_html(
            answer.final_text, reference_count=len(references), markers=final_markers(answer.markers) or None
        ),
    }
