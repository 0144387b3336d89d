"""What a hostile or runaway model reply cannot do (issue 35): NUL and other control characters never
reach the database or a client, a marker flood ends `done` on the SSE path as on the JSON path, and
output is bounded (`max_tokens` sent, ANSWERS_MAX_ANSWER_CHARS cuts the stream).

Both providers through their real clients against the stub servers (real HTTP, the real streaming
protocols), on whichever database the run uses (SQLite or PostgreSQL): the JSON path through the API
test client, the SSE path through the flow with the SSE publisher, its events read from the store.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from asgiref.sync import sync_to_async

from answers import payloads
from answers.citations.trail import compute_trail
from answers.conf import conf
from answers.models import Answer, AnswerSource
from answers.pipeline import flow, lifecycle
from answers.sse.channels import channel_for
from answers.sse.publish import SSE
from answers.sse.storage import AnswerEventStorage
from tests.fixtures.answers import QUESTION, stub_provider_settings
from tests.fixtures.anthropic_stub import Block, Cite, Message, StubAnthropicServer
from tests.fixtures.db_faults import ALLOW_DONE, execute_for_vendor
from tests.fixtures.live_events import assert_live_events
from tests.fixtures.providers import Reply, StubOpenAIServer

pytestmark = pytest.mark.usefixtures("corpus")

CONTROLS = "\x00\x01\x07\x08\x0b\x0c\x1b\x1f"


@dataclass
class Scripted:
    """One provider against its stub: `reply(pieces, quote)` scripts its next reply, whose raw text
    is `raw(text)` (the anthropic provider adds the marker of its citation of document 1)."""

    name: str
    stub: StubOpenAIServer
    reply: Callable[..., None]
    raw: Callable[[str], str]


@pytest.fixture(params=["openai", "anthropic"])
def provider(
    request, settings, stub_openai: StubOpenAIServer, stub_anthropic: StubAnthropicServer
) -> Scripted:
    if request.param == "openai":
        stub_provider_settings(
            settings,
            "openai",
            "stub-model",
            ANSWERS_OPENAI_BASE_URL=stub_openai.base_url,
            ANSWERS_OPENAI_API_KEY="sk-test",
        )
        return Scripted(
            "openai",
            stub_openai,
            lambda pieces, quote=None: stub_openai.set_default(Reply(pieces=[*pieces, " [1]."])),
            lambda text: f"{text} [1].",
        )
    stub_provider_settings(
        settings,
        "anthropic",
        "claude-stub",
        ANSWERS_ANTHROPIC_BASE_URL=stub_anthropic.base_url,
        ANSWERS_ANTHROPIC_API_KEY="sk-ant-test",
    )
    return Scripted(
        "anthropic",
        stub_anthropic,
        lambda pieces, quote=None: stub_anthropic.set_default(
            Message(blocks=[Block(*pieces, Cite(0, quote))])
        ),
        # The marker goes before the block's trailing whitespace.
        lambda text: f"{text.rstrip()} [1]{text[len(text.rstrip()) :]}",
    )


def stored_events(answer_id) -> list[tuple[str, str]]:
    return [
        (event.type, event.data)
        for event in AnswerEventStorage().get_events(channel_for(answer_id), 0, limit=10_000)
    ]


def strings(value: object) -> Iterator[str]:
    """Every string in a decoded JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


# --- 1. NUL and other C0 controls -----------------------------------------------------------------


@pytest.mark.django_db
def test_json_a_nul_and_controls_in_the_reply_are_removed_and_the_answer_stored(client, provider) -> None:
    provider.reply([f"With NUL {CONTROLS}in it,", " tab\tand\nline kept"], quote=f"a quote\x00{CONTROLS}")

    response = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json")

    assert response.status_code == 201, response.content
    body = response.json()
    answer = Answer.objects.get(id=body["id"])
    assert answer.raw_text == provider.raw("With NUL in it, tab\tand\nline kept")
    assert body["text"].startswith("With NUL in it, tab\tand\nline kept [1]")
    if provider.name == "anthropic":
        # The citation's cited_text is kept as a quote, without its controls.
        assert AnswerSource.objects.get(answer=answer, original_number=1).quotes == ["a quote"]


@pytest.mark.django_db(transaction=True)
async def test_sse_a_nul_in_the_reply_never_reaches_an_event_and_the_answer_is_done(provider) -> None:
    await sync_to_async(provider.reply)(["With NUL \x00", "in it\x1b and more"], quote="cited\x00 text")

    accepted = await flow.ask(question=QUESTION, asker_id=None, publisher=SSE)
    await lifecycle.wait_for_background()

    answer = await Answer.objects.aget(id=accepted.id)
    assert answer.status == "done", answer.error_message
    assert answer.raw_text == provider.raw("With NUL in it and more")
    events = await sync_to_async(stored_events)(answer.id)
    parsed = [(kind, json.loads(data)) for kind, data in events if kind]
    assert not [text for _, data in parsed for text in strings(data) if any(ch in text for ch in CONTROLS)]
    assert_live_events(parsed)
    assert "".join(data["text"] for kind, data in parsed if kind == "delta") == answer.raw_text


# --- Storage errors end the answer `failed` (error event, 502 with the id), never `streaming` -------

_REFUSE_TEXT = {
    # Neither `done` nor a failed answer that keeps its text can be stored: only the bare failure.
    "sqlite": [
        "CREATE TRIGGER refuse_done BEFORE UPDATE OF status ON answers_answer "
        "WHEN NEW.status = 'done' OR (NEW.status = 'failed' AND NEW.raw_text != '') "
        "BEGIN SELECT RAISE(ABORT, 'cannot store this (simulated)'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION refuse_done() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'cannot store this (simulated)'; END $$",
        "CREATE TRIGGER refuse_done BEFORE UPDATE ON answers_answer FOR EACH ROW "
        "WHEN (NEW.status = 'done' OR (NEW.status = 'failed' AND NEW.raw_text <> '')) "
        "EXECUTE FUNCTION refuse_done()",
    ],
}


@pytest.fixture
def refusing_database() -> Iterator[None]:
    execute_for_vendor(_REFUSE_TEXT)
    yield
    execute_for_vendor(ALLOW_DONE)


@pytest.mark.django_db
def test_json_text_the_database_refuses_is_a_502_with_the_id_and_a_retry_gets_it_at_once(
    client, provider, refusing_database
) -> None:
    provider.reply(["Stored nowhere"])
    headers = {"HTTP_IDEMPOTENCY_KEY": "refused-1"}

    response = client.post(
        "/api/answers/", {"question": QUESTION}, content_type="application/json", **headers
    )

    assert response.status_code == 502, response.content
    body = response.json()
    answer = Answer.objects.get(id=body["id"])
    assert (answer.status, answer.error_kind, answer.raw_text) == ("failed", "storage", "")
    assert answer.error_message == body["detail"]
    # The retry finds the failed answer, not one still in flight.
    retry = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json", **headers)
    assert (retry.status_code, retry.json()["id"], retry["Idempotent-Replayed"]) == (502, body["id"], "true")


@pytest.mark.django_db(transaction=True)
async def test_sse_text_the_database_refuses_ends_failed_with_an_error_event(
    provider, refusing_database
) -> None:
    await sync_to_async(provider.reply)(["Stored nowhere"])

    accepted = await flow.ask(question=QUESTION, asker_id=None, publisher=SSE)
    await lifecycle.wait_for_background()

    answer = await Answer.objects.aget(id=accepted.id)
    assert (answer.status, answer.error_kind) == ("failed", "storage")
    events = await sync_to_async(stored_events)(answer.id)
    assert events[-1] == ("error", json.dumps({"detail": answer.error_message}))


# --- 2. Marker floods -----------------------------------------------------------------------------

FLOODS = {
    "closed": "[1]" * 10_000,  # 30 KB
    "unclosed": "[1 " * 10_000,
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("flood", list(FLOODS))
async def test_sse_a_marker_flood_in_five_pieces_is_done_with_events_that_add_up(provider, flood) -> None:
    text = "Flooded " + FLOODS[flood]
    size = len(text) // 5 + 1
    await sync_to_async(provider.reply)([text[i : i + size] for i in range(0, len(text), size)])

    accepted = await flow.ask(question=QUESTION, asker_id=None, publisher=SSE)
    await lifecycle.wait_for_background()

    answer = await Answer.objects.aget(id=accepted.id)
    assert answer.status == "done", answer.error_message
    assert answer.raw_text == provider.raw(text)
    parsed = [
        (kind, json.loads(data)) for kind, data in await sync_to_async(stored_events)(answer.id) if kind
    ]
    assert_live_events(parsed)
    assert (
        parsed[-1][1]["text"] == compute_trail(answer.raw_text, 4, dialects=conf.MARKER_DIALECTS).final_text
    )


@pytest.mark.django_db
@pytest.mark.parametrize("flood", list(FLOODS))
def test_json_a_marker_flood_is_done(client, provider, flood) -> None:
    provider.reply(["Flooded ", FLOODS[flood]])

    response = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json")

    assert response.status_code == 201, response.content
    assert Answer.objects.get(id=response.json()["id"]).raw_text == provider.raw("Flooded " + FLOODS[flood])


# --- 3. Bounded output ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_json_max_tokens_is_sent_to_the_provider(client, provider, settings) -> None:
    settings.ANSWERS_MAX_TOKENS = 321
    provider.reply(["Bounded"])

    assert (
        client.post("/api/answers/", {"question": QUESTION}, content_type="application/json").status_code
        == 201
    )

    assert provider.stub.requests[-1]["max_tokens"] == 321


@pytest.mark.django_db
def test_json_past_max_answer_chars_the_answer_is_done_truncated_and_cut_there(
    client, provider, settings, admin_user
) -> None:
    settings.ANSWERS_MAX_ANSWER_CHARS = 40
    provider.reply(["Runaway [1] ", "text " * 50])

    response = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["status"], body["truncated"]) == ("done", True)
    answer = Answer.objects.get(id=body["id"])
    assert answer.raw_text == ("Runaway [1] " + "text " * 50)[:40]
    client.force_login(admin_user)
    assert client.get(f"/api/answers/{body['id']}/trail/").json()["truncated"] is True


@pytest.mark.django_db(transaction=True)
async def test_sse_past_max_answer_chars_the_done_event_says_truncated(provider, settings) -> None:
    settings.ANSWERS_MAX_ANSWER_CHARS = 40
    await sync_to_async(provider.reply)(["Runaway [1] ", *["text "] * 50])

    accepted = await flow.ask(question=QUESTION, asker_id=None, publisher=SSE)
    await lifecycle.wait_for_background()

    answer = await Answer.objects.aget(id=accepted.id)
    assert (answer.status, answer.truncated, len(answer.raw_text)) == ("done", True, 40)
    parsed = [
        (kind, json.loads(data)) for kind, data in await sync_to_async(stored_events)(answer.id) if kind
    ]
    assert_live_events(parsed)
    assert "".join(data["text"] for kind, data in parsed if kind == "delta") == answer.raw_text
    assert parsed[-1][1]["truncated"] is True


@pytest.mark.django_db
def test_past_max_answer_chars_the_provider_stream_is_closed_not_waited_for(
    client, settings, stub_openai: StubOpenAIServer, openai_settings
) -> None:
    """The stub sends two pieces, then nothing until it stops: an app still reading after the cut
    would fail the answer as a timeout instead."""
    settings.ANSWERS_MAX_ANSWER_CHARS = 20
    stub_openai.set_default(Reply(pieces=["Runaway [1] text", " and more", " never sent"], hang_after=2))

    response = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["status"], body["truncated"]) == ("done", True)
    assert Answer.objects.get(id=body["id"]).raw_text == "Runaway [1] text and"


@pytest.mark.django_db
def test_a_done_answer_keeps_its_html_and_every_read_shows_that(client, provider) -> None:
    provider.reply(["Stored **once**"])

    body = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json").json()

    answer = Answer.objects.get(id=body["id"])
    assert "<strong>once</strong>" in answer.html
    assert 'href="#source-1"' in answer.html
    assert answer.html in client.get(f"/answers/{answer.id}/").content.decode()
    assert payloads.answer_done_payload(answer=answer)["html"] == answer.html
