"""Conversations in the QA admin: the answer page's conversation panel, the follow-up filter, the
conversation's page with its turns and outcomes."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from answers.admin.conversations import asker_label
from answers.models import Answer, Conversation
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


@pytest.mark.django_db
def test_the_list_shows_first_question_turns_and_a_session_tag_never_the_key(
    client, thread, reviewer, django_user_model
) -> None:
    """An anonymous asker is "anonymous session <tag>": the same tag for the same session, another for
    another, and nothing of the key (whoever holds it may continue the conversation)."""
    conversation = thread[0].conversation
    session_key = conversation.session_key
    assert session_key, "the API test client's session started it"
    other = Client()
    other_first = other.post(
        "/api/answers/", {"question": "What is a closure?"}, content_type="application/json"
    ).json()
    alice = django_user_model.objects.create_user("alice", password="pw-alice-1")
    Conversation.objects.filter(pk=other_first["conversation"]).update(
        asker=alice, session_key="", started_signed_in=True
    )
    client.force_login(reviewer)

    response = client.get(reverse("admin:answers_conversation_changelist"))

    html = response.content.decode()
    shown = {str(c.pk): asker_label(c) for c in response.context["cl"].result_list}
    tag = shown[str(conversation.pk)]
    assert re.fullmatch(r"anonymous session [0-9a-f]{8}", tag), tag
    assert f'<td class="field-asker_shown">{tag}</td>' in html
    assert '<td class="field-asker_shown">alice</td>' in html
    assert session_key not in html
    assert tag.split()[-1] not in session_key
    # The first question, linking to the conversation's page, and the number of turns.
    page = reverse("admin:answers_conversation_change", args=[conversation.pk])
    assert f'<a href="{page}">{thread[0].question}</a>' in html
    assert '<td class="field-turn_count">3</td>' in html
    # Stable: another conversation of the same session carries the same tag, another session's another.
    assert asker_label(Conversation.objects.create(session_key=session_key)) == tag
    assert asker_label(Conversation.objects.create(session_key=session_key[::-1])) != tag


@pytest.mark.django_db
def test_the_conversation_page_shows_each_turn_as_read_linked_to_its_trail(client, thread, reviewer) -> None:
    client.force_login(reviewer)
    url = reverse("admin:answers_conversation_change", args=[thread[0].conversation_id])

    html = client.get(url).content.decode()

    summaries = html.split("data-answer-summary=")[1:]
    assert len(summaries) == 3
    for answer, summary in zip(thread, summaries, strict=True):
        trail = reverse("admin:answers_answer_change", args=[answer.pk])
        assert f'<a href="{trail}" data-trail-link>{answer.question}</a>' in summary
        # The final text as readers got it, its citations linking to this turn's own Sources list.
        rendered = summary.split("data-summary-text>", 1)[1].split("</div>", 1)[0]
        assert rendered == answer.html
        anchor = "source-1" if answer.turn == 1 else f"turn-{answer.turn}-source-1"
        assert f'href="#{anchor}"' in rendered
        final = sorted((s for s in answer.sources.all() if s.final_number), key=lambda s: s.final_number)
        assert final
        for source in final:
            assert f'<li id="{anchor[:-1]}{source.final_number}" value="{source.final_number}">' in summary
            assert f">{source.title}</a></li>" in summary


@pytest.mark.django_db
def test_the_conversation_page_escapes_what_readers_and_models_wrote(
    client, reviewer, answer_factory
) -> None:
    hostile = '<img src=x onerror="alert(1)"> and <script>x()</script>?'
    answer = answer_factory(text="It says [1] <b>bold</b>.", source_count=1, question=hostile)
    conversation = Conversation.objects.create()
    Answer.objects.filter(pk=answer.pk).update(conversation=conversation, turn=1)
    client.force_login(reviewer)

    html = client.get(reverse("admin:answers_conversation_change", args=[conversation.pk])).content.decode()
    listed = client.get(reverse("admin:answers_conversation_changelist")).content.decode()

    for page in (html, listed):
        assert "<img src=x" not in page
        assert "<script>x()" not in page
        assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert "<b>bold</b>" not in html
