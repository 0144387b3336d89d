"""A deleted user's answers stay private: readable by staff only, never by whoever holds the id.

The asker key is SET_NULL (the answer and its trail are kept for QA); `asked_signed_in` keeps the
read rule (docs/reference/access.md, "Who may read an answer"). Every surface is asked: the answer object, its
permalink page, its event stream, feedback, and the trail.
"""

from __future__ import annotations

import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from answers import selectors
from answers.models import Answer, Conversation, Feedback, Review

# transaction=True: the event stream checks access on a pooled thread of its own (answers.sse.stream.run_db).
pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "Walruses sip tea [1]."


@pytest.fixture(autouse=True)
def _fresh_throttles():
    cache.clear()


@pytest.fixture
def carols_answer(answer_factory):
    """carol asks signed in, then her user is deleted."""
    carol = User.objects.create_user("carol", password="pw")
    answer = answer_factory(text=TEXT, source_count=2, asker_id=carol.pk)
    assert answer.status == Answer.Status.DONE
    carol.delete()
    answer.refresh_from_db()
    return answer


def _surfaces(client: Client, answer_id: object) -> dict[str, int]:
    return {
        "api": client.get(f"/api/answers/{answer_id}/").status_code,
        "page": client.get(f"/answers/{answer_id}/").status_code,
        "events": client.get(f"/answers/{answer_id}/events/").status_code,
        "feedback": client.post(
            f"/api/answers/{answer_id}/feedback/", {"verdict": "helpful"}, content_type="application/json"
        ).status_code,
    }


def test_the_answer_and_its_trail_are_kept_without_an_asker(carols_answer):
    assert carols_answer.asker_id is None
    assert carols_answer.asked_signed_in is True
    assert carols_answer.sources.count() == 2
    assert carols_answer.final_text == TEXT


def test_nobody_signed_in_reads_a_deleted_users_answer_anywhere(client, carols_answer):
    assert _surfaces(client, carols_answer.id) == {"api": 404, "page": 404, "events": 404, "feedback": 404}
    assert not Feedback.objects.exists()


def test_another_signed_in_user_reads_it_nowhere(client, carols_answer):
    # A new user may even be given the deleted user's id on some databases; the answer is still not theirs.
    client.force_login(User.objects.create_user("dave", password="pw"))

    assert _surfaces(client, carols_answer.id) == {"api": 404, "page": 404, "events": 404, "feedback": 404}
    assert not Feedback.objects.exists()


def test_staff_still_read_it(client, carols_answer):
    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)

    api = client.get(f"/api/answers/{carols_answer.id}/")
    page = client.get(f"/answers/{carols_answer.id}/")
    feedback = client.post(
        f"/api/answers/{carols_answer.id}/feedback/", {"verdict": "helpful"}, content_type="application/json"
    )

    assert api.status_code == 200
    assert api.json()["text"] == TEXT
    assert page.status_code == 200
    assert "Walruses sip tea" in page.content.decode()
    assert feedback.status_code == 201, feedback.content
    # The stream's access check (the same one its view asks before streaming).
    assert selectors.answer_access(answer_id=carols_answer.id, user=staff) is selectors.Access.READ


def test_an_anonymous_answer_is_still_read_by_whoever_holds_the_id(client, answer_factory):
    answer = answer_factory(text=TEXT, source_count=2)

    assert answer.asked_signed_in is False
    assert client.get(f"/api/answers/{answer.id}/").status_code == 200
    assert client.get(f"/answers/{answer.id}/").status_code == 200


def _conversation_surfaces(client: Client, conversation_id: object) -> dict[str, int]:
    follow_up = {"question": "And the walruses?", "conversation": str(conversation_id)}
    return {
        "api": client.get(f"/api/conversations/{conversation_id}/").status_code,
        "page": client.get(f"/conversations/{conversation_id}/").status_code,
        "follow-up": client.post("/api/answers/", follow_up, content_type="application/json").status_code,
        "form": client.post("/ask/", follow_up).status_code,
    }


def test_a_deleted_users_conversation_is_staffs_only(client, carols_answer):
    conversation = carols_answer.conversation
    assert conversation is not None
    assert (conversation.asker_id, conversation.started_signed_in) == (None, True)
    missing = uuid.uuid4()

    # Nobody signed in, and another user, learn nothing: the 404 of a conversation that does not exist.
    assert _conversation_surfaces(client, conversation.id) == dict.fromkeys(
        ("api", "page", "follow-up", "form"), 404
    )
    assert _conversation_surfaces(client, missing) == dict.fromkeys(("api", "page", "follow-up", "form"), 404)
    client.force_login(User.objects.create_user("dave", password="pw"))
    assert _conversation_surfaces(client, conversation.id) == dict.fromkeys(
        ("api", "page", "follow-up", "form"), 404
    )
    # Staff read it, as they read its answers (and, as for any conversation they did not start, may not add).
    client.force_login(User.objects.create_user("staff", password="pw", is_staff=True))
    read = client.get(f"/api/conversations/{conversation.id}/")
    assert read.status_code == 200
    assert read.json()["answers"][0]["text"] == TEXT
    assert _conversation_surfaces(client, conversation.id)["follow-up"] == 403
    assert Answer.objects.filter(conversation=conversation).count() == 1


def test_the_way_the_deploy_guide_gives_deletes_a_users_answers_before_the_user(client, answer_factory):
    """docs/howto/deploy.md: admin deletes no answer; `manage.py delete_user_answers USERNAME` does, before
    the user."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "howto" / "deploy.md").read_text()
    assert "delete them in\nadmin" not in guide
    assert "manage.py delete_user_answers USERNAME" in guide
    carol = User.objects.create_user("carol", password="pw")
    theirs = [answer_factory(text=TEXT, source_count=2, asker_id=carol.pk) for _ in range(2)]
    someone_elses = answer_factory(text=TEXT, source_count=2)
    Review.objects.create(answer=theirs[1], verdict="ok")
    client.force_login(User.objects.create_superuser("root", password="pw"))
    # What the docs once said does not work: admin refuses to delete an answer.
    refused = client.get(reverse("admin:answers_answer_delete", args=[theirs[0].pk]))
    assert refused.status_code == 403

    # A reviewed answer is the audit record: nothing goes unless asked for.
    with pytest.raises(CommandError, match="1 of carol's answers have QA reviews"):
        call_command("delete_user_answers", "carol", stdout=StringIO())
    assert Answer.objects.filter(asker=carol).count() == 2
    out = StringIO()
    call_command("delete_user_answers", "carol", "--include-reviewed", stdout=out)

    assert "Deleted 2 answer(s) in 2 conversation(s) and 1 review(s) of carol." in out.getvalue()
    assert not Answer.objects.filter(pk__in=[a.pk for a in theirs]).exists()
    assert not Conversation.objects.filter(asker=carol).exists()
    assert Answer.objects.filter(pk=someone_elses.pk).exists()
    carol.delete()  # and nothing of theirs is left behind
    assert not Answer.objects.filter(asked_signed_in=True).exists()
