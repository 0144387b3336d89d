"""Deleting a user's answers, before the user: their conversations, answers, sources and feedback.

Deleting a user keeps their answers (staff only, for QA and the audit: docs/reference/access.md, "Who may read
an answer"), and admin deletes no answer; this is the way to remove them too (`manage.py
delete_user_answers`). A reviewed answer is part of the audit record (Review's PROTECT): it goes,
with its reviews, only when asked for in so many words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from answers.models import Answer, Conversation, Review


class ReviewedAnswers(Exception):
    """Some of the user's answers have QA reviews, and their deletion was not asked for."""

    def __init__(self, count: int) -> None:
        super().__init__(f"{count} of the user's answers have QA reviews")
        self.count = count


@dataclass(frozen=True)
class Deleted:
    answers: int
    conversations: int
    reviews: int


def user_answers_delete(*, user: Any, include_reviewed: bool = False, dry_run: bool = False) -> Deleted:
    """Delete every answer `user` asked (their conversations, sources and readers' feedback with them).

    ReviewedAnswers (nothing deleted) when some have reviews and `include_reviewed` is false.
    `dry_run`: count only.
    """
    with transaction.atomic():
        answers = Answer.objects.filter(asker=user)
        # Reviews are append-only (answers.models.reviews): nothing changes or deletes one, except
        # erasing the answer it judges, on purpose (include_reviewed), through the base manager.
        reviews = Review._base_manager.filter(answer__asker=user)
        reviewed = answers.filter(reviews__isnull=False).distinct().count()
        if reviewed and not include_reviewed:
            raise ReviewedAnswers(reviewed)
        counts = Deleted(
            answers=answers.count(),
            conversations=Conversation.objects.filter(asker=user).count(),
            reviews=reviews.count(),
        )
        if not dry_run:
            reviews.delete()
            Conversation.objects.filter(asker=user).delete()  # their turns go with them
            answers.delete()  # answers stored before conversations existed
    return counts
