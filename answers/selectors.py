"""Read queries shared by the API, the pages, the event streams and admin."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Prefetch

from answers.models import Answer, AnswerSource


def answer_readable_by(*, answer_id: uuid.UUID, user: Any) -> bool:
    """Signed-in askers' answers: them and staff. Anonymous answers: whoever holds the id."""
    row = Answer.objects.filter(id=answer_id).values("asker_id").first()
    if row is None:
        return False
    return _may_read(asker_id=row["asker_id"], user=user)


def _may_read(*, asker_id: int | None, user: Any) -> bool:
    if asker_id is None:
        return True
    return bool(user is not None and user.is_authenticated and (user.is_staff or user.pk == asker_id))


def answer_get(*, answer_id: uuid.UUID, user: Any) -> Answer | None:
    """The answer with its sources, or None when it does not exist or `user` may not read it."""
    answer = (
        Answer.objects.prefetch_related(
            Prefetch("sources", queryset=AnswerSource.objects.order_by("original_number"))
        )
        .filter(id=answer_id)
        .first()
    )
    if answer is None or not _may_read(asker_id=answer.asker_id, user=user):
        return None
    return answer


def answer_trail_get(*, answer_id: uuid.UUID) -> Answer | None:
    return (
        Answer.objects.prefetch_related(
            Prefetch("sources", queryset=AnswerSource.objects.order_by("original_number"))
        )
        .filter(id=answer_id)
        .first()
    )


def answer_done_payload(*, answer: Answer) -> dict[str, Any]:
    """The `done` event: the finalized pair, equal to what GET /api/answers/<id>/ returns,
    plus `html`: the final text rendered and sanitized by the server, markers linked to `#source-N`.
    """
    from answers.api.serializers import references_of
    from answers.rendering import render_answer_html

    references = references_of(answer)
    return {
        "text": answer.final_text,
        "references": references,
        "fallback": answer.fallback,
        "html": render_answer_html(answer.final_text, reference_count=len(references)),
    }
