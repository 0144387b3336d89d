"""Conversations end to end (docs/api.md, "Conversations"): three turns where turn 2 says "it" and turn 3
"the second one", against the OpenAI-compatible stub and the Anthropic stub, on the JSON path (the API test
client) and the SSE path (a real server); the read and continue rules; the no-JS form post."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from answers.models import Answer, Conversation
from tests.fixtures.anthropic_stub import StubAnthropicServer, anthropic_env
from tests.fixtures.conversations import (
    GLOBAL,
    MARKER,
    NONLOCAL,
    SCOPE_DOCUMENTS,
    TURNS,
    anthropic_script,
    final_text,
    history_of,
    openai_script,
)
from tests.fixtures.live_server import LiveServer, SeedDocument, running_server
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.sse_client import client_for, read_stream

# The documents each turn's standalone question names: retrieval must rank one of them first and find all.
NAMED = ({NONLOCAL}, {NONLOCAL, GLOBAL}, {GLOBAL})


def _ask(client: Client, question: str, conversation: str | None = None, **extra: Any) -> Any:
    body: dict[str, Any] = {"question": question, **extra}
    if conversation is not None:
        body["conversation"] = conversation
    return client.post("/api/answers/", body, content_type="application/json")


def _three_turns_json(client: Client) -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []
    conversation = None
    for turn in TURNS:
        response = _ask(client, turn.question, conversation)
        assert response.status_code == 201, response.content
        bodies.append(response.json())
        conversation = bodies[0]["conversation"]
    return bodies


def _check_turns(bodies: list[dict[str, Any]], *, one_marker: bool = False) -> None:
    """Each turn done on its own: numbered from 1, its references the documents it cited, in order."""
    assert [b["turn"] for b in bodies] == [1, 2, 3]
    assert len({b["conversation"] for b in bodies}) == 1
    for body, turn in zip(bodies, TURNS, strict=True):
        assert body["status"] == "done"
        assert body["text"] == final_text(turn, one_marker=one_marker)
        assert [r["title"] for r in body["references"]] == list(turn.cites)
        assert [r["number"] for r in body["references"]] == list(range(1, len(turn.cites) + 1))


def _check_stored(bodies: list[dict[str, Any]], *, method: str = "model") -> None:
    answers = [Answer.objects.prefetch_related("sources").get(id=b["id"]) for b in bodies]
    assert [a.standalone_question for a in answers] == ["", TURNS[1].rewrite, TURNS[2].rewrite]
    assert answers[0].rewrite is None
    assert [a.rewrite["method"] for a in answers[1:]] == [method, method]  # type: ignore[index]
    assert all(a.rewrite["fallback"] is None for a in answers[1:])  # type: ignore[index]
    # Retrieval ran on the standalone question and found the document it names, first.
    for answer, named in zip(answers, NAMED, strict=True):
        retrieved = [s.title for s in sorted(answer.sources.all(), key=lambda s: s.original_number)]
        assert retrieved[0] in named, retrieved
        assert named <= set(retrieved), retrieved
    assert [a.history["sent"] for a in answers[1:]] == [[1], [1, 2]]  # type: ignore[index]


def _check_history(answer_requests: list[dict[str, Any]]) -> None:
    """The answer requests carried the earlier answers, every marker removed."""
    assert history_of(answer_requests[0]) == []
    expected = [f"{turn.sentence}." for turn in TURNS[:2]]
    assert history_of(answer_requests[1]) == expected[:1]
    assert history_of(answer_requests[2]) == expected
    for request in answer_requests:
        assert not any(MARKER.search(text) for text in history_of(request))


@pytest.mark.django_db
def test_three_turns_json_openai(
    client, scope_documents, openai_settings, stub_openai: StubOpenAIServer
) -> None:
    stub_openai.enqueue(*openai_script())

    bodies = _three_turns_json(client)

    _check_turns(bodies)
    _check_stored(bodies)
    requests = stub_openai.requests
    assert [bool(r.get("stream")) for r in requests] == [True, False, True, False, True]
    _check_history([r for r in requests if r.get("stream")])
    # The rewrite request carries the follow-up and the marker-free history, under its own prompt.
    rewrite = requests[1]["messages"][-1]["content"]
    assert TURNS[1].question in rewrite
    assert "[1]" not in rewrite
    conversation = client.get(f"/api/conversations/{bodies[0]['conversation']}/").json()
    assert [a["id"] for a in conversation["answers"]] == [b["id"] for b in bodies]
    assert [a["text"] for a in conversation["answers"]] == [b["text"] for b in bodies]


@pytest.mark.django_db
def test_three_turns_json_anthropic(
    client, scope_documents, anthropic_settings, stub_anthropic: StubAnthropicServer
) -> None:
    stub_anthropic.enqueue(*anthropic_script())

    bodies = _three_turns_json(client)

    _check_turns(bodies, one_marker=True)
    _check_stored(bodies)
    requests = stub_anthropic.requests
    assert [bool(r.get("stream")) for r in requests] == [True, False, True, False, True]
    _check_history([r for r in requests if r.get("stream")])
    # The documents travel with the current turn only, after the marker-free history.
    last = [r for r in requests if r.get("stream")][-1]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert next(d["title"] for d in last[-1]["content"] if d.get("type") == "document") == GLOBAL


@pytest.mark.django_db
def test_extractive_follow_up_uses_the_heuristic_on_the_previous_question(client, scope_documents, settings):
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MIN_SCORE = 0.0
    first = _ask(client, TURNS[0].question).json()

    second = _ask(client, "And what does it exclude?", first["conversation"]).json()

    answer = Answer.objects.get(id=second["id"])
    assert answer.rewrite == {
        "method": "heuristic",
        "ms": answer.rewrite["ms"],
        "fallback": None,
        "prompt_version": None,
    }
    assert answer.standalone_question.split() == ["exclude", "nonlocal", "statement"]
    assert second["references"][0]["title"] == NONLOCAL
    assert "excluding module globals" in second["text"]


@pytest.mark.django_db
def test_a_failed_rewrite_falls_back_to_the_heuristic_and_the_trail_says_so(
    client, scope_documents, openai_settings, stub_openai: StubOpenAIServer, admin_user
) -> None:
    answer = Reply(pieces=["Nonlocal binds enclosing names [1]."])
    # Turn 2's rewrite fails (500), turn 3's comes back blank: the heuristic stands in for both.
    stub_openai.enqueue(answer, Reply(status=500), answer, Reply(pieces=["  "]), answer)
    first = _ask(client, TURNS[0].question).json()
    second = _ask(client, TURNS[1].question, first["conversation"]).json()
    third = _ask(client, "And the second one?", first["conversation"]).json()

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
    anonymous = _ask(client, TURNS[0].question).json()["conversation"]
    other = Client()
    assert other.get(f"/api/conversations/{anonymous}/").status_code == 200
    assert _ask(other, "And it?", anonymous).status_code == 403
    assert _ask(client, "And it?", anonymous).status_code == 201
    # A signed-in user's: that user adds; staff reads but may not add; anyone else learns nothing.
    owner = Client()
    owner.force_login(alice)
    signed = _ask(owner, TURNS[0].question).json()["conversation"]
    reader = Client()
    reader.force_login(staff)
    assert reader.get(f"/api/conversations/{signed}/").status_code == 200
    assert _ask(reader, "And it?", signed).status_code == 403
    stranger = Client()
    stranger.force_login(bob)
    for who in (stranger, Client()):
        assert who.get(f"/api/conversations/{signed}/").status_code == 404
        assert _ask(who, "And it?", signed).status_code == 404
    assert _ask(owner, "And it?", signed).status_code == 201
    assert _ask(owner, "And it?", str(uuid.uuid4())).status_code == 404
    assert _ask(owner, "And it?", "not-an-id").status_code == 400
    assert Answer.objects.filter(conversation_id=signed).count() == 2


@pytest.mark.django_db
def test_a_turn_in_flight_or_past_the_limit_is_409(client, scope_documents, settings) -> None:
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MIN_SCORE = 0.0
    settings.ANSWERS_CONVERSATION_TURNS = 2
    first = _ask(client, TURNS[0].question).json()
    Answer.objects.filter(id=first["id"]).update(status=Answer.Status.STREAMING)
    busy = _ask(client, "And it?", first["conversation"])
    assert busy.status_code == 409, busy.content
    assert "still being written" in busy.json()["detail"]
    Answer.objects.filter(id=first["id"]).update(status=Answer.Status.DONE)
    assert _ask(client, "And it?", first["conversation"]).status_code == 201
    full = _ask(client, "And again?", first["conversation"])
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
        "/ask/", {"question": "And what does it exclude?", "conversation": str(conversation.id)}
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


# --- The SSE path, on a real server (SQLite or PostgreSQL, as this run's database) ------------------


@pytest.fixture(scope="module")
def conversation_anthropic_stub() -> Iterator[StubAnthropicServer]:
    with StubAnthropicServer() as server:
        yield server


@pytest.fixture(scope="module")
def live_documents() -> list[SeedDocument]:
    """The module's live server (`live`, the openai provider on `stub`) is seeded with these."""
    return SCOPE_DOCUMENTS


@pytest.fixture(scope="module")
def conversation_anthropic_server(conversation_anthropic_stub: StubAnthropicServer) -> Iterator[LiveServer]:
    env = anthropic_env(conversation_anthropic_stub)
    with running_server(
        openai_base_url="http://127.0.0.1:9/v1", documents=SCOPE_DOCUMENTS, extra_env=env
    ) as live:
        yield live


async def _three_turns_sse(live: LiveServer, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    dones: list[dict[str, Any]] = []
    conversation = None
    async with client_for(live) as client:
        for turn in TURNS:
            body: dict[str, Any] = {"question": turn.question, "stream": True, "conversation": conversation}
            response = await client.post("/api/answers/", json=body, headers=headers)
            assert response.status_code == 202, response.text
            accepted = response.json()
            conversation = accepted["conversation"]
            stream = await read_stream(client, accepted["events_url"], headers=headers)
            assert stream.types[-1] == "done", live.log_tail()
            # The live numbers agree with the final pair: cites in order, the display adds up to the text.
            done = stream.events[-1].data
            assert [e.data["number"] for e in stream.of("cite")] == [r["number"] for r in done["references"]]
            assert stream.display_text == done["text"]
            dones.append(
                {**done, "turn": accepted["turn"], "conversation": conversation, "id": accepted["id"]}
            )
    return dones


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_three_turns_sse(provider: str, request: pytest.FixtureRequest) -> None:
    if provider == "openai":
        stub = request.getfixturevalue("stub")
        live = request.getfixturevalue("live")  # the stub reset
        stub.enqueue(*openai_script())
    else:
        stub = request.getfixturevalue("conversation_anthropic_stub")
        live = request.getfixturevalue("conversation_anthropic_server")
        stub.reset()
        stub.enqueue(*anthropic_script())

    dones = await _three_turns_sse(live)

    one_marker = provider == "anthropic"
    _check_turns([{**d, "status": "done"} for d in dones], one_marker=one_marker)
    requests = stub.requests
    assert [bool(r.get("stream")) for r in requests] == [True, False, True, False, True]
    _check_history([r for r in requests if r.get("stream")])
    # The done html links each turn's markers to its own anchors.
    assert 'href="#source-1"' in dones[0]["html"]
    assert 'href="#turn-2-source-1"' in dones[1]["html"]
    assert 'href="#turn-2-source-2"' in dones[1]["html"]
    assert 'href="#turn-3-source-1"' in dones[2]["html"]


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
    bodies = _three_turns_json(client)
    assert _ask(client, "And the first one?", bodies[0]["conversation"]).status_code == 201

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
    first = _ask(client, TURNS[0].question).json()
    sent = client.post(
        f"/api/answers/{first['id']}/feedback/", {"verdict": "helpful"}, content_type="application/json"
    )
    assert sent.status_code == 201, sent.content
    declined = _ask(client, "How do zeppelins moor in Patagonia?", first["conversation"]).json()
    assert (declined["turn"], declined["declined"]) == (2, True)

    page = client.get(f"/conversations/{first['conversation']}/").content.decode()

    turns = page.split('data-turn="')[1:3]  # the two turns (the template for the next one follows)
    assert 'data-feedback-sent="helpful"' in turns[0]
    assert 'aria-pressed="true">Helpful' in turns[0]
    assert "data-answer-declined" in turns[1]
    assert "data-answer-declined" not in turns[0]
