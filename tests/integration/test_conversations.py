"""Conversations end to end (docs/explanation/conversations.md): three turns where turn 2 says "it" and turn 3
"the second one", against the OpenAI-compatible stub, on the JSON path (the API test client) and the SSE
path (a real server); the read and continue rules; the no-JS form post. The same turns against the
Anthropic stub: test_conversations_anthropic.py."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from answers.models import Answer, Conversation
from answers.providers.extractive import NOTHING_NEW
from tests.fixtures.api import ask
from tests.fixtures.conversations import (
    NONLOCAL,
    SCOPE_DOCUMENTS,
    TURNS,
    check_three_turns_sse,
    final_text,
    openai_script,
    three_turns_json,
    three_turns_json_checked,
    three_turns_sse,
)
from tests.fixtures.live_server import LiveServer, SeedDocument
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.sse_client import client_for, read_stream
from tests.fixtures.waiting import await_until


@pytest.mark.django_db
def test_three_turns_json_openai(client, scope_documents, openai_settings, stub_openai) -> None:
    bodies, requests = three_turns_json_checked(client, stub_openai, openai_script())

    # The rewrite request carries the follow-up and the marker-free history, under its own prompt.
    rewrite = requests[1]["messages"][-1]["content"]
    assert TURNS[1].question in rewrite
    assert "[1]" not in rewrite
    conversation = client.get(f"/api/conversations/{bodies[0]['conversation']}/").json()
    assert [a["id"] for a in conversation["answers"]] == [b["id"] for b in bodies]
    assert [a["text"] for a in conversation["answers"]] == [b["text"] for b in bodies]


@pytest.mark.django_db
def test_extractive_follow_up_uses_the_heuristic_on_the_previous_question(client, scope_documents, settings):
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MIN_SCORE = 0.0
    first = ask(client, TURNS[0].question).json()

    second = ask(client, "And what does it exclude?", conversation=first["conversation"]).json()

    answer = Answer.objects.get(id=second["id"])
    assert answer.rewrite == {
        "method": "heuristic",
        "ms": answer.rewrite["ms"],
        "fallback": None,
        "prompt_version": None,
    }
    assert answer.standalone_question.split() == ["exclude", "nonlocal", "statement"]
    assert second["references"][0]["title"] == NONLOCAL
    # The page's one sentence was turn 1's answer: it is not quoted again, and the answer says so.
    assert "excluding module globals" in first["text"]
    assert second["text"] == NOTHING_NEW


@pytest.mark.django_db
def test_a_failed_rewrite_falls_back_to_the_heuristic_and_the_trail_says_so(
    client, scope_documents, openai_settings, stub_openai: StubOpenAIServer, admin_user
) -> None:
    answer = Reply(pieces=["Nonlocal binds enclosing names [1]."])
    # Turn 2's rewrite fails (500), turn 3's comes back blank: the heuristic stands in for both.
    stub_openai.enqueue(answer, Reply(status=500), answer, Reply(pieces=["  "]), answer)
    first = ask(client, TURNS[0].question).json()
    second = ask(client, TURNS[1].question, conversation=first["conversation"]).json()
    third = ask(client, "And the second one?", conversation=first["conversation"]).json()

    client.force_login(admin_user)
    trails = [client.get(f"/api/answers/{b['id']}/trail/").json() for b in (second, third)]
    assert [t["rewrite"]["method"] for t in trails] == ["heuristic", "heuristic"]
    assert trails[0]["rewrite"]["fallback"].startswith("upstream:")
    assert trails[1]["rewrite"]["fallback"].startswith("empty")
    assert trails[0]["standalone_question"].split() == ["global", "nonlocal", "statement"]
    assert (trails[0]["conversation"], trails[0]["turn"]) == (first["conversation"], 2)


@pytest.mark.django_db
def test_read_and_continue_rules_on_the_api(client, scope_documents, settings, django_user_model) -> None:
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MIN_SCORE = 0.0
    alice = django_user_model.objects.create_user("alice", password="pw-alice-1")
    bob = django_user_model.objects.create_user("bob", password="pw-bob-1")
    staff = django_user_model.objects.create_user("staff", password="pw-staff-1", is_staff=True)
    # An anonymous conversation: anyone holding its id reads it; only its session adds turns.
    anonymous = ask(client, TURNS[0].question).json()["conversation"]
    other = Client()
    assert other.get(f"/api/conversations/{anonymous}/").status_code == 200
    assert ask(other, "And it?", conversation=anonymous).status_code == 403
    assert ask(client, "And it?", conversation=anonymous).status_code == 201
    # A signed-in user's: that user adds; staff reads but may not add; anyone else learns nothing.
    owner = Client()
    owner.force_login(alice)
    signed = ask(owner, TURNS[0].question).json()["conversation"]
    reader = Client()
    reader.force_login(staff)
    assert reader.get(f"/api/conversations/{signed}/").status_code == 200
    assert ask(reader, "And it?", conversation=signed).status_code == 403
    stranger = Client()
    stranger.force_login(bob)
    for who in (stranger, Client()):
        assert who.get(f"/api/conversations/{signed}/").status_code == 404
        assert ask(who, "And it?", conversation=signed).status_code == 404
    assert ask(owner, "And it?", conversation=signed).status_code == 201
    assert ask(owner, "And it?", conversation=str(uuid.uuid4())).status_code == 404
    assert ask(owner, "And it?", conversation="not-an-id").status_code == 400
    assert Answer.objects.filter(conversation_id=signed).count() == 2


@pytest.mark.django_db
def test_a_turn_in_flight_or_past_the_limit_is_409(client, scope_documents, settings) -> None:
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MIN_SCORE = 0.0
    settings.ANSWERS_CONVERSATION_TURNS = 2
    first = ask(client, TURNS[0].question).json()
    Answer.objects.filter(id=first["id"]).update(status=Answer.Status.STREAMING)
    busy = ask(client, "And it?", conversation=first["conversation"])
    assert busy.status_code == 409, busy.content
    assert "still being written" in busy.json()["detail"]
    Answer.objects.filter(id=first["id"]).update(status=Answer.Status.DONE)
    assert ask(client, "And it?", conversation=first["conversation"]).status_code == 201
    full = ask(client, "And again?", conversation=first["conversation"])
    assert full.status_code == 409
    assert "limit of 2 turns" in full.json()["detail"]
    assert Answer.objects.filter(conversation_id=first["conversation"]).count() == 2


@pytest.mark.django_db
def test_the_no_js_form_adds_a_turn_and_the_permalink_shows_every_turn(
    client, scope_documents, settings
) -> None:
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MIN_SCORE = 0.0
    first = client.post("/ask/", {"question": TURNS[0].question})
    assert first.status_code == 303
    conversation = Conversation.objects.get()
    assert first["Location"] == f"/conversations/{conversation.id}/#turn-1"
    second = client.post(
        "/ask/", {"question": "And how is it different from global?", "conversation": str(conversation.id)}
    )
    assert second["Location"] == f"/conversations/{conversation.id}/#turn-2"

    page = client.get(f"/conversations/{conversation.id}/").content.decode()
    assert page.count('data-turn="') == 3  # two turns and the template of the next
    assert 'id="source-1"' in page
    assert 'id="turn-2-source-1"' in page
    assert 'href="#turn-2-source-1"' in page
    assert 'name="conversation" value="' + str(conversation.id) in page
    # Another browser reads the thread, without the follow-up form, and cannot post one.
    other = Client()
    assert 'name="conversation"' not in other.get(f"/conversations/{conversation.id}/").content.decode()
    refused = other.post("/ask/", {"question": "And it?", "conversation": str(conversation.id)})
    assert refused.status_code == 403
    assert "Only whoever started this conversation" in refused.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "spelling",
    [str.upper, lambda c: c.replace("-", ""), lambda c: "{" + c + "}", lambda c: "urn:uuid:" + c],
    ids=["uppercase", "without hyphens", "in braces", "as a URN"],
)
def test_the_form_and_the_api_take_a_conversation_id_in_one_form(client, scope_documents, settings, spelling):
    """Another spelling of the id is refused alike by the API and the no-JS form (a 400, nothing asked)."""
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MIN_SCORE = 0.0
    conversation = ask(client, TURNS[0].question).json()["conversation"]
    other = spelling(conversation)

    api = ask(client, "And what does it exclude?", conversation=other)
    form = client.post("/ask/", {"question": "And what does it exclude?", "conversation": other})

    assert (api.status_code, form.status_code) == (400, 400)
    assert Answer.objects.count() == 1
    # The id as the API writes it goes through both.
    assert ask(client, "And what does it exclude?", conversation=conversation).status_code == 201
    assert client.post("/ask/", {"question": "And it?", "conversation": conversation}).status_code == 303


# --- The SSE path, on a real server (SQLite or PostgreSQL, as this run's database) ------------------


@pytest.fixture(scope="module")
def live_documents() -> list[SeedDocument]:
    """The module's live server (`live`, the openai provider on `stub`) is seeded with these."""
    return SCOPE_DOCUMENTS


async def test_three_turns_sse(live: LiveServer, stub: StubOpenAIServer) -> None:
    stub.enqueue(*openai_script())

    dones = await three_turns_sse(live)

    check_three_turns_sse(dones, stub.requests)


async def test_sse_continue_rules_for_signed_in_and_anonymous(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    stub.set_default(
        lambda body: Reply(pieces=["Nonlocal [1]."]) if body.get("stream") else Reply(pieces=["Nonlocal?"])
    )
    alice, bob = live.auth("alice"), live.auth("bob")
    staff = live.auth("staff")
    async with client_for(live) as client:
        started = await client.post(
            "/api/answers/", json={"question": TURNS[0].question, "stream": True}, headers=alice
        )
        accepted = started.json()
        await read_stream(client, accepted["events_url"], headers=alice)
        follow = {"question": "And it?", "stream": True, "conversation": accepted["conversation"]}
        assert (await client.post("/api/answers/", json=follow, headers=bob)).status_code == 404
        assert (await client.post("/api/answers/", json=follow, headers=staff)).status_code == 403
        second = await client.post("/api/answers/", json=follow, headers=alice)
        assert second.status_code == 202
        # While turn 2 streams or once done, its stream is the asker's and staff's only.
        events_url = second.json()["events_url"]
        assert (await client.get(events_url, headers=bob)).status_code == 404
        await read_stream(client, events_url, headers=alice)
    async with client_for(live) as anonymous, client_for(live) as other:
        started = await anonymous.post("/api/answers/", json={"question": TURNS[0].question, "stream": True})
        accepted = started.json()
        await read_stream(anonymous, accepted["events_url"])
        follow = {"question": "And it?", "stream": True, "conversation": accepted["conversation"]}
        assert (await other.post("/api/answers/", json=follow)).status_code == 403
        assert (await anonymous.post("/api/answers/", json=follow)).status_code == 202


async def test_a_follow_up_overtaken_by_another_is_refused_not_answered_without_it(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    """Two follow-ups planned at once, the second done before the first is stored: the first is a 409,
    not a turn whose prompt lacks the turn done meanwhile (its history is read again under the lock
    that numbers it)."""
    release = threading.Event()

    def held_rewrite(body: dict[str, Any]) -> Reply:
        assert not body.get("stream")
        release.wait(60)
        return Reply(pieces=["What does the global statement do?"])

    stub.enqueue(
        Reply(pieces=["Nonlocal binds enclosing names [1]."]),
        held_rewrite,  # the late follow-up's rewrite: held until the other follow-up is done
        Reply(pieces=[str(TURNS[1].rewrite)]),
        Reply(pieces=["Global names live at module level [1]."]),
    )
    async with client_for(live) as client:
        first = (await client.post("/api/answers/", json={"question": TURNS[0].question})).json()
        conversation = first["conversation"]
        late = asyncio.create_task(
            client.post(
                "/api/answers/", json={"question": "And the other one?", "conversation": conversation}
            )
        )
        await await_until(lambda: len(stub.requests) == 2, within=30, what="the late follow-up's rewrite")
        early = await client.post(
            "/api/answers/", json={"question": TURNS[1].question, "conversation": conversation}
        )
        assert (early.status_code, early.json()["turn"]) == (201, 2), early.text
        release.set()
        refused = await late
        turns = (await client.get(f"/api/conversations/{conversation}/")).json()["answers"]

    assert refused.status_code == 409, refused.text
    assert "Another turn was added to this conversation" in refused.json()["detail"]
    assert [t["turn"] for t in turns] == [1, 2]
    assert len(stub.requests) == 4  # the overtaken follow-up's answer was never asked for


# A model's rewrite holding what no stored question may: its NUL and controls removed, its zero-width
# and bidi characters too; half a character (a lone surrogate) makes the rewrite unusable.
HOSTILE_REWRITES = {
    "NUL, zero-width and bidi": ("What\x00 does the glo\u200bbal\u202e statement\x07 do?", "model"),
    "a lone surrogate": ("What does the global \ud800statement do?", "heuristic"),
}
CLEAN_REWRITE = "What does the global statement do?"


async def _follow_up(client: Any, path: str, conversation: str) -> str:
    """A follow-up asked on `path` (the API on the JSON or SSE path, with an Idempotency-Key, or the
    no-JS form); the new answer's id, once it is done."""
    body = {"question": "And the other one?", "conversation": conversation}
    if path == "form":
        await client.get("/")
        form = {**body, "csrfmiddlewaretoken": client.cookies["csrftoken"]}
        response = await client.post("/ask/", data=form)
        assert response.status_code == 303, response.text
        turns = (await client.get(f"/api/conversations/{conversation}/")).json()["answers"]
        return str(turns[-1]["id"])
    headers = {"Idempotency-Key": "hostile-rewrite"} if path == "idempotency-key" else {}
    response = await client.post("/api/answers/", json={**body, "stream": path == "sse"}, headers=headers)
    assert response.status_code == (202 if path == "sse" else 201), response.text
    if path == "sse":
        await read_stream(client, response.json()["events_url"])
    return str(response.json()["id"])


@pytest.mark.parametrize("path", ["json", "sse", "idempotency-key", "form"])
@pytest.mark.parametrize("hostile", list(HOSTILE_REWRITES))
async def test_a_rewrite_holding_controls_or_half_a_character_is_cleaned_or_set_aside(
    live: LiveServer, stub: StubOpenAIServer, path: str, hostile: str
) -> None:
    rewrite, method = HOSTILE_REWRITES[hostile]
    stub.enqueue(
        Reply(pieces=["Nonlocal binds enclosing names [1]."]),
        Reply(pieces=[rewrite]),
        Reply(pieces=["Global names live at module level [1]."]),
    )
    async with client_for(live) as client:
        first = (await client.post("/api/answers/", json={"question": TURNS[0].question})).json()
        answer_id = await _follow_up(client, path, first["conversation"])
        answer = (await client.get(f"/api/answers/{answer_id}/")).json()
        trail = (await client.get(f"/api/answers/{answer_id}/trail/", headers=live.auth("reviewer"))).json()

    assert (answer["status"], answer["turn"]) == ("done", 2)
    assert trail["rewrite"]["method"] == method
    if method == "model":
        assert trail["standalone_question"] == CLEAN_REWRITE
    else:
        assert trail["rewrite"]["fallback"].startswith("bad_response: ")
        assert trail["standalone_question"].split() == ["nonlocal", "statement"]  # the previous question's


@pytest.mark.django_db
def test_the_ask_command_continues_a_conversation(
    capsys, scope_documents, openai_settings, stub_openai: StubOpenAIServer
) -> None:
    stub_openai.enqueue(*openai_script(TURNS[:2]))
    call_command("ask", TURNS[0].question)
    first = Answer.objects.get()
    assert f"Conversation: {first.conversation_id} (turn 1)" in capsys.readouterr().out

    call_command("ask", TURNS[1].question, "--conversation", str(first.conversation_id))

    out = capsys.readouterr().out
    assert final_text(TURNS[1]) in out
    assert "(turn 2)" in out
    assert f"Standalone question: {TURNS[1].rewrite}" in out
    with pytest.raises(CommandError, match="No conversation has the id"):
        call_command("ask", "And then?", "--conversation", str(uuid.uuid4()))


def _turns_counted(client: Client) -> dict[tuple[str, str], float]:
    scraped = client.get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-token").content.decode()
    counted: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(scraped):
        for sample in family.samples:
            if sample.name == "answers_conversation_turns_total":
                counted[(sample.labels["kind"], sample.labels["rewrite"])] = sample.value
    return counted


@pytest.mark.django_db
def test_metrics_count_first_turns_and_follow_ups_by_rewrite(
    client, scope_documents, openai_settings, stub_openai: StubOpenAIServer
) -> None:
    openai_settings.ANSWERS_METRICS_TOKEN = "metrics-token"
    before = _turns_counted(client)
    stub_openai.enqueue(*openai_script(), Reply(status=400), Reply(pieces=["Again [1]."]))
    bodies = three_turns_json(client)
    assert ask(client, "And the first one?", conversation=bodies[0]["conversation"]).status_code == 201

    after = _turns_counted(client)

    def added(kind: str, rewrite: str) -> float:
        return after.get((kind, rewrite), 0.0) - before.get((kind, rewrite), 0.0)

    assert (added("first", "none"), added("follow_up", "model"), added("follow_up", "fallback")) == (1, 2, 1)


@pytest.mark.django_db
def test_a_hostile_follow_up_and_answer_are_escaped_on_the_thread(
    client, scope_documents, openai_settings, stub_openai: StubOpenAIServer
) -> None:
    hostile = '<img src=x onerror="window.__pwned=1"> and it?'
    stub_openai.enqueue(
        Reply(pieces=["Nonlocal binds [1]."]),
        Reply(pieces=["<script>window.__pwned=1</script> nonlocal"]),
        Reply(pieces=['<script>window.__pwned=1</script> It binds [1] <a href="javascript:x">here</a>.']),
    )
    client.post("/ask/", {"question": TURNS[0].question})
    conversation = Conversation.objects.get()
    client.post("/ask/", {"question": hostile, "conversation": str(conversation.id)})

    page = client.get(f"/conversations/{conversation.id}/").content.decode()

    assert "&lt;img src=x onerror=" in page
    assert "<img src=x" not in page
    assert "<script>window.__pwned" not in page
    assert '<a href="javascript:' not in page
    # The rewrite's text is the trail's only (retrieval ran on it), never the page's.
    assert Answer.objects.get(turn=2).standalone_question.startswith("<script>")


def test_the_conversation_page_shows_each_turns_feedback_and_a_declined_turn_as_declined(
    client, scope_documents, settings
) -> None:
    """Reloading lands on the conversation's page: it shows what this reader sent on each turn (and
    offers to change it), and a declined turn as declined (no Sources list), as a permalink does."""
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MIN_SCORE = 0.0
    first = ask(client, TURNS[0].question).json()
    sent = client.post(
        f"/api/answers/{first['id']}/feedback/", {"verdict": "helpful"}, content_type="application/json"
    )
    assert sent.status_code == 201, sent.content
    declined = ask(client, "How do zeppelins moor in Patagonia?", conversation=first["conversation"]).json()
    assert (declined["turn"], declined["declined"]) == (2, True)

    page = client.get(f"/conversations/{first['conversation']}/").content.decode()

    turns = page.split('data-turn="')[1:3]  # the two turns (the template for the next one follows)
    assert 'data-feedback-sent="helpful"' in turns[0]
    assert 'aria-pressed="true">Helpful' in turns[0]
    assert "data-answer-declined" in turns[1]
    assert "data-answer-declined" not in turns[0]


@pytest.mark.django_db
def test_a_follow_ups_markdown_starts_with_the_questions_asked_before_it(client, scope_documents, settings):
    """The download of turn 3 (and what "Copy answer" copies) names turns 1 and 2's questions above its own,
    as text; turn 1's file starts with its own question, as a single answer's does."""
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MIN_SCORE = 0.0
    hostile = "And <b>it</b> [compared]?"
    first = ask(client, TURNS[0].question).json()
    second = ask(client, hostile, conversation=first["conversation"]).json()
    third = ask(client, TURNS[2].question, conversation=first["conversation"]).json()
    assert third["turn"] == 3

    text = client.get(f"/answers/{third['id']}/answer.md").content.decode()

    earlier, _, own = text.partition(f"# {TURNS[2].question}\n")
    assert own, text
    assert earlier == (
        "Earlier in this conversation:\n\n"
        f"1. {TURNS[0].question}\n"
        "2. And \\<b\\>it\\</b\\> \\[compared\\]?\n\n"
    )
    assert own.rstrip().endswith(f"Answer: http://testserver/answers/{third['id']}/")
    assert (
        client.get(f"/answers/{second['id']}/answer.md")
        .content.decode()
        .startswith(f"Earlier in this conversation:\n\n1. {TURNS[0].question}\n\n# ")
    )
    assert (
        client.get(f"/answers/{first['id']}/answer.md")
        .content.decode()
        .startswith(f"# {TURNS[0].question}\n")
    )


@pytest.mark.django_db
def test_another_reader_is_told_the_conversation_is_someone_elses(client, scope_documents, settings):
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MIN_SCORE = 0.0
    first = ask(client, TURNS[0].question).json()
    url = f"/conversations/{first['conversation']}/"
    assert "data-conversation-not-yours" not in client.get(url).content.decode()

    page = Client().get(url).content.decode()

    assert 'name="question"' not in page
    assert "This conversation belongs to another reader" in page
    assert 'href="/" data-ask-another>Ask a new question</a>' in page
