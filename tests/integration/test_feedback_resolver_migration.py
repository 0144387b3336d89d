"""Migration 0023_feedback_resolver on feedback resolved before it: a review's resolution records that
review's reviewer as whoever resolved it; one marked resolved by hand recorded no one, and stays so."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.fixtures.migrations import Migrate

BEFORE = [("answers", "0022_conversation_started_signed_in")]
AFTER = [("answers", "0023_feedback_resolver")]


@pytest.mark.django_db(transaction=True)
def test_feedback_a_review_resolved_gets_its_reviewer(migrate: Migrate) -> None:
    apps = migrate(BEFORE)
    Answer = apps.get_model("answers", "Answer")
    Feedback = apps.get_model("answers", "Feedback")
    Review = apps.get_model("answers", "Review")
    reviewer = apps.get_model("auth", "User").objects.create(username="reviewer")
    answer = Answer.objects.create(
        question="Q?", status="done", delivery="json", provider="stub", min_score=0, max_sources=5
    )
    review = Review.objects.create(answer=answer, reviewer=reviewer, verdict="ok")
    now = timezone.now()
    by_review = Feedback.objects.create(
        answer=answer, verdict="helpful", client="a" * 64, resolved_at=now, resolved_by=review
    )
    by_hand = Feedback.objects.create(answer=answer, verdict="unhelpful", client="b" * 64, resolved_at=now)
    open_one = Feedback.objects.create(answer=answer, verdict="helpful", client="c" * 64)

    Feedback = migrate(AFTER).get_model("answers", "Feedback")

    resolvers = {f.pk: f.resolver_id for f in Feedback.objects.all()}
    assert resolvers == {by_review.pk: reviewer.pk, by_hand.pk: None, open_one.pk: None}
