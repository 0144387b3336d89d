"""Migration 0015_feedback_one_verdict on feedback stored before it: each reader keeps their latest verdict
and their latest flag of each source; other readers' feedback, and a deleted user's, stay."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.fixtures.migrations import Migrate

BEFORE = [("answers", "0014_answer_owner")]
AFTER = [("answers", "0015_feedback_one_verdict")]


@pytest.mark.django_db(transaction=True)
def test_stored_duplicates_keep_each_readers_latest(migrate: Migrate) -> None:
    apps = migrate(BEFORE)
    Answer = apps.get_model("answers", "Answer")
    AnswerSource = apps.get_model("answers", "AnswerSource")
    Feedback = apps.get_model("answers", "Feedback")
    User = apps.get_model("auth", "User")
    answer = Answer.objects.create(
        question="Q?",
        status="done",
        final_text="A [1].",
        delivery="json",
        provider="stub",
        min_score=0,
        max_sources=5,
    )
    source = AnswerSource.objects.create(
        answer=answer, original_number=1, final_number=1, title="T", url="", excerpt="E"
    )
    user = User.objects.create(username="reader")
    now = timezone.now()

    def note(minutes: int, **fields: object) -> int:
        row = Feedback.objects.create(answer=answer, **fields)
        Feedback.objects.filter(pk=row.pk).update(created_at=now + timedelta(minutes=minutes))
        return row.pk

    note(0, verdict="helpful", client="a" * 64)
    latest_a = note(1, verdict="unhelpful", client="a" * 64)
    other_b = note(0, verdict="helpful", client="b" * 64)
    note(0, verdict="unhelpful", user=user)
    latest_user = note(2, verdict="helpful", user=user)
    note(0, verdict="unhelpful", source=source, client="a" * 64, comment="first")
    latest_flag = note(3, verdict="unhelpful", source=source, client="a" * 64, comment="second")
    orphans = [note(0, verdict="helpful", client=""), note(1, verdict="helpful", client="")]

    Feedback = migrate(AFTER).get_model("answers", "Feedback")
    assert set(Feedback.objects.values_list("pk", flat=True)) == {
        latest_a,
        other_b,
        latest_user,
        latest_flag,
        *orphans,
    }
