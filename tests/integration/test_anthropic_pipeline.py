"""ANSWERS_PROVIDER=anthropic end to end: the model's native citations become the final pair.

JSON path through the API test client, SSE path through a real daphne server; both against
the stub Anthropic server (real HTTP, the real event sequence), with real retrieval. A reply
of cited and uncited text blocks, one citing a document that does not exist, gives the raw
text docs/howto/providers.md implies, the finalized pair, each source's status and its quotes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from answers.models import Answer
from tests.fixtures.answers import QUESTION
from tests.fixtures.anthropic_stub import Block, Cite, Message, StubAnthropicServer, anthropic_env
from tests.fixtures.live_server import LiveServer, manage
from tests.fixtures.providers import Reply
from tests.fixtures.sse_client import ask as ask_streaming
from tests.fixtures.sse_client import client_for, read_stream

# Cited, uncited, cited by two (the second twice), and a citation of document 10 of 4.
REPLY = Message(
    blocks=[
        Block("Teacups need care", Cite(2)),
        Block(". "),
        Block(Cite(0), "Walruses agree", Cite(2, "chapter")),
        Block(" and more", Cite(9, "invented")),
        Block("."),
    ]
)
RAW = "Teacups need care [3]. Walruses agree [1, 3] and more [10]."
FINAL = "Teacups need care [1]. Walruses agree [1, 2] and more."
# By retrieval number: status, final number, quotes (a Cite without text quotes the whole document).
STATUSES = {1: ("cited", 2), 2: ("dropped", None), 3: ("cited", 1), 4: ("dropped", None)}


def _expected_quotes(excerpts: dict[int, str]) -> dict[int, list[str]]:
    return {1: [excerpts[1]], 2: [], 3: [excerpts[3], "chapter"], 4: []}


@pytest.mark.django_db
def test_json_native_citations_give_the_final_pair_statuses_and_quotes(
    client, corpus, anthropic_settings, stub_anthropic: StubAnthropicServer, admin_user
) -> None:
    stub_anthropic.enqueue(REPLY)

    response = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["status"], body["text"], body["fallback"], body["truncated"]) == (
        "done",
        FINAL,
        False,
        False,
    )
    answer = Answer.objects.get(id=body["id"])
    assert answer.raw_text == RAW
    assert (answer.provider, answer.model) == ("anthropic", "claude-stub")
    by_number = {s.original_number: s for s in answer.sources.all()}
    assert [r["document_id"] for r in body["references"]] == [
        by_number[3].document_id,
        by_number[1].document_id,
    ]

    client.force_login(admin_user)
    trail = client.get(f"/api/answers/{body['id']}/trail/").json()
    assert (trail["raw_text"], trail["text"], trail["stripped"], trail["truncated"]) == (
        RAW,
        FINAL,
        [10],
        False,
    )
    assert trail["provider"] == "anthropic"
    excerpts = {s["original_number"]: s["excerpt"] for s in trail["sources"]}
    assert {s["original_number"]: (s["status"], s["final_number"]) for s in trail["sources"]} == STATUSES
    assert {s["original_number"]: s["quotes"] for s in trail["sources"]} == _expected_quotes(excerpts)


@pytest.mark.django_db
def test_json_a_citation_of_a_document_before_the_first_is_stripped(
    client, corpus, anthropic_settings, stub_anthropic: StubAnthropicServer, admin_user
) -> None:
    # Negative document indexes (no such document): written as member 0, stripped and recorded.
    stub_anthropic.enqueue(
        Message(
            blocks=[Block("Teacups need care", Cite(-1), Cite(-2)), Block(". Walruses", Cite(0), Cite(-5))]
        )
    )

    body = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json").json()

    assert (body["status"], body["text"], body["fallback"]) == (
        "done",
        "Teacups need care. Walruses [1]",
        False,
    )
    client.force_login(admin_user)
    trail = client.get(f"/api/answers/{body['id']}/trail/").json()
    assert trail["raw_text"] == "Teacups need care [0]. Walruses [1, 0]"
    assert trail["stripped"] == [0, 0]


@pytest.mark.django_db
def test_json_max_tokens_is_done_but_truncated_everywhere(
    client, corpus, anthropic_settings, stub_anthropic: StubAnthropicServer, admin_user
) -> None:
    stub_anthropic.enqueue(Message(blocks=[Block("Teacups need", Cite(0))], stop_reason="max_tokens"))

    body = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json").json()

    assert (body["status"], body["text"], body["truncated"]) == ("done", "Teacups need [1]", True)
    client.force_login(admin_user)
    assert client.get(f"/api/answers/{body['id']}/trail/").json()["truncated"] is True
    page = client.get(f"/answers/{body['id']}/").content.decode()
    assert "cut short" in page
    admin_page = client.get(f"/admin/answers/answer/{body['id']}/change/").content.decode()
    assert "Cut short:" in admin_page


@pytest.mark.django_db
def test_json_openai_length_stop_is_done_but_truncated(client, corpus, openai_settings, stub_openai) -> None:
    stub_openai.enqueue(Reply(pieces=["Teacups need [1]"], finish_reason="length"))

    body = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json").json()

    assert (body["status"], body["text"], body["truncated"]) == ("done", "Teacups need [1]", True)


@pytest.mark.django_db
def test_json_provider_failure_is_a_failed_answer_with_its_kind(
    client, corpus, anthropic_settings, stub_anthropic: StubAnthropicServer
) -> None:
    stub_anthropic.enqueue(*[Message(status=529)] * 3)

    response = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json")

    assert response.status_code == 502
    answer = Answer.objects.get(id=response.json()["id"])
    assert (answer.status, answer.error_kind) == ("failed", "upstream")
    assert "sk-ant-test-secret-key" not in response.content.decode()


@pytest.mark.django_db
def test_admin_shows_each_sources_quotes_escaped(
    client, corpus, anthropic_settings, stub_anthropic: StubAnthropicServer, admin_user
) -> None:
    stub_anthropic.enqueue(Message(blocks=[Block("Teacups", Cite(1, "<b>care</b> & glue"))]))
    body = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json").json()
    client.force_login(admin_user)

    html = client.get(f"/admin/answers/answer/{body['id']}/change/").content.decode()

    assert "Passages the model says it cited from source 2:" in html
    assert "&lt;b&gt;care&lt;/b&gt; &amp; glue" in html
    assert "<b>care</b>" not in html


@pytest.fixture(scope="module")
def live_settings(anthropic_stub: StubAnthropicServer) -> dict[str, str]:
    return anthropic_env(anthropic_stub)  # the anthropic provider: the module's openai stub is not called


_SOURCES_OF = """
import json, os
from answers.models import AnswerSource
rows = AnswerSource.objects.filter(answer_id=os.environ["ANSWER_ID"]).order_by("original_number")
rows = [[s.original_number, s.status, s.final_number, s.excerpt, s.quotes] for s in rows]
print("ROWS=" + json.dumps(rows))
"""


def _stored_sources(live: LiveServer, answer_id: str) -> list[list[Any]]:
    out = manage(["shell", "-c", _SOURCES_OF], {**live.env, "ANSWER_ID": answer_id})
    line = next(ln for ln in out.splitlines() if ln.startswith("ROWS="))
    rows: list[list[Any]] = json.loads(line.removeprefix("ROWS="))
    return rows


async def test_sse_native_citations_stream_the_raw_text_and_end_in_the_final_pair(
    live: LiveServer, anthropic_stub: StubAnthropicServer
) -> None:
    anthropic_stub.reset()
    anthropic_stub.enqueue(REPLY)
    async with client_for(live) as client:
        accepted = await ask_streaming(client)
        stream = await read_stream(client, accepted["events_url"])

    assert stream.types[-1] == "done", live.log_tail()
    assert "".join(e.data["text"] for e in stream.events if e.type == "delta") == RAW
    done = stream.events[-1].data
    assert (done["text"], done["fallback"], done["truncated"]) == (FINAL, False, False)
    retrieved = stream.events[0].data["references"]
    assert [r["document_id"] for r in done["references"]] == [
        retrieved[2]["document_id"],
        retrieved[0]["document_id"],
    ]
    rows = _stored_sources(live, accepted["id"])
    excerpts = {number: excerpt for number, _, _, excerpt, _ in rows}
    assert {number: (status, final) for number, status, final, _, _ in rows} == STATUSES
    assert {number: quotes for number, *_, quotes in rows} == _expected_quotes(excerpts)


async def test_sse_max_tokens_done_event_says_truncated(
    live: LiveServer, anthropic_stub: StubAnthropicServer
) -> None:
    anthropic_stub.reset()
    anthropic_stub.enqueue(Message(blocks=[Block("Zebras live", Cite(0))], stop_reason="max_tokens"))
    async with client_for(live) as client:
        accepted = await ask_streaming(client)
        stream = await read_stream(client, accepted["events_url"])

    done = stream.events[-1].data
    assert (stream.types[-1], done["text"], done["truncated"]) == ("done", "Zebras live [1]", True)
