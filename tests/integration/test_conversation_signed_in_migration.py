"""Migration 0022_conversation_started_signed_in on conversations stored before it: a signed-in user's,
and one whose user was deleted before it (its answers kept asked_signed_in), are marked started signed
in and so stay private; an anonymous one stays anyone's who holds its id."""

from __future__ import annotations

import pytest

from tests.fixtures.migrations import Migrate

BEFORE = [("answers", "0021_review_verdicts_incomplete_off_topic")]
AFTER = [("answers", "0022_conversation_started_signed_in")]


@pytest.mark.django_db(transaction=True)
def test_stored_conversations_are_marked_from_their_asker_or_their_answers(migrate: Migrate) -> None:
    apps = migrate(BEFORE)
    Answer = apps.get_model("answers", "Answer")
    Conversation = apps.get_model("answers", "Conversation")
    User = apps.get_model("auth", "User")
    alice = User.objects.create(username="alice")
    conversations = {
        "alice's": Conversation.objects.create(asker=alice),
        "a deleted user's": Conversation.objects.create(asker=None),
        "anonymous": Conversation.objects.create(asker=None, session_key="s" * 32),
    }
    for name, conversation in conversations.items():
        Answer.objects.create(
            question="Q?",
            status="done",
            delivery="json",
            provider="stub",
            min_score=0,
            max_sources=5,
            conversation=conversation,
            asker=conversation.asker,
            asked_signed_in=name != "anonymous",
        )

    Conversation = migrate(AFTER).get_model("answers", "Conversation")
    marked = {
        name: Conversation.objects.get(pk=conversation.pk).started_signed_in
        for name, conversation in conversations.items()
    }
    assert marked == {"alice's": True, "a deleted user's": True, "anonymous": False}
