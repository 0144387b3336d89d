"""Reader feedback: the services that write it (a reader sends it; a review or a reviewer resolves it).

Feedback is about an answer and never edits its trail. Who may send it is
who may read the answer (answers.selectors); only a `done` answer takes it,
and a flagged source must be one of its final list (by the number the reader saw).
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.crypto import salted_hmac

from answers.models import Answer, AnswerSource, Feedback, Review

_CLIENT_SALT = "answers.feedback.client"


class FeedbackRefused(Exception):
    """Feedback that is not stored; `field` names the input at fault, or None for the answer's state."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class AnswerNotDone(FeedbackRefused):
    pass


class SourceNotInFinalList(FeedbackRefused):
    pass


def anonymous_client(ident: str) -> str:
    """Who an anonymous reader is, as stored: a keyed hash (SECRET_KEY) of `ident`, never `ident` itself.

    `ident` is what the throttles count by (the client's address): the same client gets the same
    value, which tells reviewers that several notes came from one reader without keeping the address.
    """
    return salted_hmac(_CLIENT_SALT, ident, algorithm="sha256").hexdigest()


@transaction.atomic
def feedback_create(
    *,
    answer: Answer,
    verdict: str,
    source_number: int | None,
    comment: str,
    user: Any,
    client: str,
) -> Feedback:
    """Store one reader's feedback on `answer` (which the caller checked `user` may read).

    Refused (FeedbackRefused, nothing stored) unless the answer is done, and unless
    `source_number` is None or a number of its final list. A flagged source is
    always `unhelpful`. The reader's earlier verdict (or earlier flag of the same
    source) is replaced, keeping its id.
    """
    if source_number is not None and verdict != Feedback.Verdict.UNHELPFUL:
        raise FeedbackRefused(
            'A flagged source does not back the answer: send the verdict "unhelpful" with it.',
            field="source",
        )
    if answer.status != Answer.Status.DONE:
        raise AnswerNotDone("Feedback is taken on finished answers only; this one is not done.")
    source: AnswerSource | None = None
    if source_number is not None:
        source = AnswerSource.objects.filter(answer=answer, final_number=source_number).first()
        if source is None:
            final = AnswerSource.objects.filter(answer=answer, final_number__isnull=False).count()
            raise SourceNotInFinalList(
                f"This answer's Sources list has no number {source_number}"
                + (f" (it has 1 to {final})." if final else " (it lists no sources)."),
                field="source",
            )
    signed_in = user is not None and user.is_authenticated
    reader = {"user": user} if signed_in else {"user": None, "client": client}

    # One verdict per reader per answer, one flag per reader per source (the model's constraints):
    # a later one replaces the earlier, as a new, unresolved note (a reviewer should look again).
    def earlier_one() -> Feedback | None:
        # `of`: PostgreSQL locks no row of the nullable side of the outer join to the source.
        mine = Feedback.objects.select_for_update(of=("self",)).select_related("source")
        return mine.filter(answer=answer, source=source, **reader).first()

    earlier = earlier_one()
    if earlier is None:
        try:
            with transaction.atomic():
                return Feedback.objects.create(
                    answer=answer,
                    verdict=verdict,
                    source=source,
                    comment=comment,
                    user=user if signed_in else None,
                    client="" if signed_in else client,
                )
        except IntegrityError:
            # The same reader's other request stored one first (a double click): replace it.
            earlier = earlier_one()
            if earlier is None:
                raise
    earlier.verdict = verdict
    earlier.comment = comment
    earlier.created_at = timezone.now()
    earlier.resolved_at = None
    earlier.resolved_by = None
    earlier.resolver = None
    earlier.save(update_fields=["verdict", "comment", "created_at", "resolved_at", "resolved_by", "resolver"])
    return earlier


def feedback_resolve_for_review(*, review: Review) -> int:
    """A review resolves the answer's feedback it covers: all unresolved feedback sent before it.

    Returns how many were resolved.
    """
    covered = Feedback.objects.filter(
        answer_id=review.answer_id, resolved_at__isnull=True, created_at__lte=review.created_at
    )
    return covered.update(resolved_at=timezone.now(), resolved_by=review, resolver_id=review.reviewer_id)


def feedback_resolve(*, queryset: QuerySet[Feedback], user: Any) -> list[Feedback]:
    """`user` (a reviewer) marks feedback resolved by hand (no review): the feedback it resolved, each
    recording who did. Already resolved feedback stays as it was."""
    with transaction.atomic():
        unresolved = list(queryset.select_for_update(of=("self",)).filter(resolved_at__isnull=True))
        Feedback.objects.filter(pk__in=[f.pk for f in unresolved]).update(
            resolved_at=timezone.now(), resolver=user
        )
    return unresolved
