"""Conversations in the QA admin: the answer page's conversation panel, the follow-up filter, the
conversation's page with its turns and outcomes."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from answers.models import Answer
from tests.fixtures.conversations import TURNS


@pytest.fixture
def thread(client, scope_documents, settings) -> list[Any]:
    """Three turns asked through the API with the extractive provider (the heuristic makes turns 2 and 3)."""
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MIN_SCORE = 0.0
    settings.ANSWERS_CONVERSATION_HISTORY_CHARS = 200  # turn 1 is cut from turn 3's history
    bodies = []
    conversation = None
    for turn in TURNS:
        body = {"question": turn.question, "conversation": conversation}
        response = client.post("/api/answers/", body, content_type="application/json")
        assert response.status_code == 201, response.content
        bodies.append(response.json())
        conversation = bodies[0]["conversation"]
    return [Answer.objects.get(id=b["id"]) for b in bodies]


@pytest.fixture
def reviewer(django_user_model):
    user = django_user_model.objects.create_user("reviewer", password="pw-reviewer-1", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_trail"))
    return user


@pytest.mark.django_db
def test_answer_page_shows_its_conversation_standalone_question_and_history(client, thread, reviewer) -> None:
    client.force_login(reviewer)
    third = thread[2]
    assert third.history is not None
    assert third.history["cut"], "the budget must have cut an earlier turn for this test"

    html = client.get(reverse("admin:answers_answer_change", args=[third.pk])).content.decode()

    assert "Turn 3 of" in html
    assert third.standalone_question in html
    assert "Made by: heuristic" in html
    assert "cut to fit: turn" in html
    for earlier in thread[:2]:
        assert reverse("admin:answers_answer_change", args=[earlier.pk]) in html
    assert reverse("admin:answers_conversation_change", args=[third.conversation_id]) in html


@pytest.mark.django_db
def test_the_list_filters_follow_ups(client, thread, reviewer) -> None:
    client.force_login(reviewer)
    url = reverse("admin:answers_answer_changelist")

    follow_ups = client.get(url, {"follow_up": "yes"}).context["cl"].result_list
    first_turns = client.get(url, {"follow_up": "no"}).context["cl"].result_list

    assert {a.pk for a in follow_ups} == {thread[1].pk, thread[2].pk}
    assert {a.pk for a in first_turns} == {thread[0].pk}


@pytest.mark.django_db
def test_the_conversation_page_lists_its_turns_with_outcomes(
    client, thread, reviewer, django_user_model
) -> None:
    client.force_login(reviewer)
    url = reverse("admin:answers_conversation_change", args=[thread[0].conversation_id])

    html = client.get(url).content.decode()

    positions = [html.index(answer.question) for answer in thread]
    assert positions == sorted(positions)
    assert thread[1].standalone_question in html
    assert "1/" in html  # cited / retrieved
    # Staff without the QA reviewers' permission are refused, as on the answer pages.
    plain = django_user_model.objects.create_user("plainstaff", password="pw-plain-1", is_staff=True)
    client.force_login(plain)
    assert client.get(url).status_code == 403
