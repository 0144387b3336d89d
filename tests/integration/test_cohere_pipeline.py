"""ANSWERS_PROVIDER=cohere end to end: the model's citations become the final pair on both delivery
paths, and failures, truncation, the rewrite and the judge go through Cohere as with openai.

JSON path through the API test client, SSE path through a real daphne server; both against the stub
Cohere server (real HTTP, the v2 event stream as the official client parses it), with real
retrieval. Each scenario's raw text is what docs/howto/providers.md implies; the SSE path also
shows the final numbers live (every delta's display adds up to the done text).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from answers.models import Answer
from answers.support.compute import compute_support
from answers.support.judge import JUDGE_SYSTEM_PROMPT
from tests.fixtures.answers import QUESTION
from tests.fixtures.cohere_stub import API_KEY, Chat, Cite, StubCohereServer, cohere_env, documents_by_id
from tests.fixtures.conversations import (
    SCOPE_DOCUMENTS,
    TURNS,
    Turn,
    check_three_turns_sse,
    three_turns_json_checked,
    three_turns_sse,
)
from tests.fixtures.live_server import LiveServer, SeedDocument, corpus, manage
from tests.fixtures.sse_client import ask as ask_streaming
from tests.fixtures.sse_client import client_for, read_stream


@dataclass(frozen=True)
class Scenario:
    """A reply and the raw text and final text it must give (same on both paths)."""

    events: tuple[str | Cite, ...]
    raw: str
    final: str


def _long() -> Scenario:
    """2,000 characters in 2-character pieces, each whole sentence cited by documents 3, 1, 2 in turn."""
    sentences = [f"Zebra fact number {i} holds." for i in range(80)]
    reply = " ".join(sentences)[:2000]
    cites, start = [], 0
    for i, sentence in enumerate(sentences):
        if start + len(sentence) > len(reply):
            break
        cites.append(Cite(start, start + len(sentence), str((i + 2) % 3 + 1)))
        start += len(sentence) + 1
    raw = final = reply
    renumbered = {"3": 1, "1": 2, "2": 3}  # by first citation
    for cite in reversed(cites):
        at = cite.end - 1
        raw = f"{raw[:at]} [{cite.ids}]{raw[at:]}"
        final = f"{final[:at]} [{renumbered[str(cite.ids)]}]{final[at:]}"
    pieces = tuple(reply[i : i + 2] for i in range(0, len(reply), 2))
    return Scenario((*pieces, *cites), raw, final)


MULTI = "Les zèbres 🦓 — rayés — vivent dans la savane."
SCENARIOS = {
    "multi-byte-text-before-the-span": Scenario(
        (MULTI[:9], MULTI[9:], Cite(MULTI.index("vivent"), len(MULTI), "3")),
        "Les zèbres 🦓 — rayés — vivent dans la savane [3].",
        "Les zèbres 🦓 — rayés — vivent dans la savane [1].",
    ),
    "span-ending-mid-word": Scenario(
        ("Zebras", " graze.", Cite(0, 5, "2")), "Zebra [2]s graze.", "Zebra [1]s graze."
    ),
    "two-citations-on-one-span": Scenario(
        ("Zebras graze grass.", Cite(0, 19, "3"), Cite(0, 19, ("1", "3"))),
        "Zebras graze grass [3, 1].",
        "Zebras graze grass [1, 2].",
    ),
    "out-of-range-document": Scenario(
        ("Zebras graze.", Cite(0, 13, ("9", "2"))), "Zebras graze [0, 2].", "Zebras graze [1]."
    ),
    "citation-before-its-text": Scenario(
        (Cite(0, 13, "4"), "Zebras", " graze."), "Zebras graze [4].", "Zebras graze [1]."
    ),
    "no-citation": Scenario(("Zebras graze.",), "Zebras graze.", "Zebras graze."),
    "2000-characters-in-2-character-pieces": _long(),
}
# By retrieval number, what each scenario's final list cites (the rest are dropped; none: fallback).
CITED = {
    "multi-byte-text-before-the-span": [3],
    "span-ending-mid-word": [2],
    "two-citations-on-one-span": [3, 1],
    "out-of-range-document": [2],
    "citation-before-its-text": [4],
    "no-citation": [],
    "2000-characters-in-2-character-pieces": [3, 1, 2],
}


# --- The JSON path


def _post(client) -> Any:
    return client.post("/api/answers/", {"question": QUESTION}, content_type="application/json")


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_json_native_citations_give_the_final_pair(
    client, corpus, cohere_settings, stub_cohere: StubCohereServer, admin_user, name: str
) -> None:
    scenario = SCENARIOS[name]
    stub_cohere.enqueue(Chat(scenario.events))

    response = _post(client)

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["status"], body["text"], body["fallback"]) == ("done", scenario.final, not CITED[name])
    answer = Answer.objects.get(id=body["id"])
    assert (answer.raw_text, answer.provider, answer.model) == (scenario.raw, "cohere", "command-stub")
    by_number = {s.original_number: s.document_id for s in answer.sources.all()}
    assert [r["document_id"] for r in body["references"]] == [
        by_number[n] for n in CITED[name] or sorted(by_number)
    ]
    client.force_login(admin_user)
    trail = client.get(f"/api/answers/{body['id']}/trail/").json()
    assert trail["usage"] == {"prompt_tokens": 150, "completion_tokens": 32}
    assert len(trail["native"]) == sum(isinstance(e, Cite) for e in scenario.events)
    assert all(scenario.raw[r["marker_at"]] == "[" for r in trail["native"])


@pytest.mark.django_db
def test_json_the_trail_shows_the_native_record_and_quotes(
    client, corpus, cohere_settings, stub_cohere: StubCohereServer, admin_user
) -> None:
    stub_cohere.enqueue(
        Chat(("Teacups need care. Walruses agree.", Cite(0, 18, "2"), Cite(19, 34, ("2", "7"))))
    )
    body = _post(client).json()
    client.force_login(admin_user)

    trail = client.get(f"/api/answers/{body['id']}/trail/").json()

    assert trail["raw_text"] == "Teacups need care [2]. Walruses agree [2, 0]."
    assert trail["stripped"] == [0]
    assert trail["native"] == [
        {
            "start": 0,
            "end": 18,
            "text": "Teacups need care.",
            "sources": ["2"],
            "marker_at": 18,
            "repaired": False,
            "span_at": [0, 22],
        },
        {
            "start": 19,
            "end": 34,
            "text": "Walruses agree.",
            "sources": ["2", "7"],
            "marker_at": 38,
            "repaired": False,
            "span_at": [23, 45],
        },
    ]
    quotes = {s["original_number"]: s["quotes"] for s in trail["sources"]}
    assert quotes == {1: [], 2: ["Teacups need care.", "Walruses agree."], 3: [], 4: []}


@pytest.mark.django_db
def test_json_max_tokens_is_done_but_truncated(
    client, corpus, cohere_settings, stub_cohere: StubCohereServer
) -> None:
    stub_cohere.enqueue(Chat(("Teacups need", Cite(0, 7, "1")), finish_reason="MAX_TOKENS"))

    body = _post(client).json()

    assert (body["status"], body["text"], body["truncated"]) == ("done", "Teacups [1] need", True)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("replies", "status", "requests"),
    [
        pytest.param([Chat(status=500)] * 3, 502, 3, id="500-retried-then-failed"),
        pytest.param([Chat(status=429, retry_after=60)], 502, 1, id="429-asking-a-long-wait"),
        pytest.param([Chat(status=429, retry_after=0), Chat()], 201, 2, id="429-then-success"),
    ],
)
def test_json_upstream_statuses_behave_as_with_openai(
    client, corpus, cohere_settings, stub_cohere: StubCohereServer, replies, status: int, requests: int
) -> None:
    stub_cohere.enqueue(*replies)

    response = _post(client)

    assert response.status_code == status, response.content
    assert len(stub_cohere.requests) == requests
    answer = Answer.objects.get(id=response.json()["id"])
    assert answer.status == ("done" if status == 201 else "failed")
    if status == 502:
        assert answer.error_kind == "upstream"
        assert API_KEY not in response.content.decode()


@pytest.mark.django_db
def test_json_a_cut_stream_fails_keeping_its_partial_raw_text(
    client, corpus, cohere_settings, stub_cohere: StubCohereServer
) -> None:
    # content-start, a piece, a citation (start and end), a piece; then the connection drops.
    stub_cohere.enqueue(Chat(("Teacups need care.", Cite(0, 18, "1"), " Walruses"), cut_after=5))

    response = _post(client)

    assert response.status_code == 502
    answer = Answer.objects.get(id=response.json()["id"])
    assert (answer.status, answer.error_kind, answer.raw_text) == (
        "failed",
        "upstream",
        "Teacups need care [1]. Walruses",
    )
    assert len(stub_cohere.requests) == 1


def _answers_total(client, **labels: str) -> float:
    scraped = client.get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-token").content.decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(scraped)
        for sample in family.samples
        if sample.name == "answers_total" and sample.labels == labels
    )


@pytest.mark.django_db
def test_metrics_and_the_health_page_count_cohere_by_model(
    client, corpus, cohere_settings, stub_cohere: StubCohereServer, admin_user
) -> None:
    cohere_settings.ANSWERS_METRICS_TOKEN = "metrics-token"
    labels = {"status": "done", "provider": "cohere", "delivery": "json", "origin": "reader"}
    before = _answers_total(client, **labels)
    stub_cohere.enqueue(Chat(("Teacups need care.", Cite(0, 18, "9"))), Chat(status=400))

    assert _post(client).status_code == 201
    assert _post(client).status_code == 502

    assert _answers_total(client, **labels) == before + 1
    assert _answers_total(client, **{**labels, "status": "failed"}) >= 1
    client.force_login(admin_user)
    page = client.get(reverse("admin:answers_answer_health"))
    row = next(r for r in page.context["rows"] if r["provider"] == "cohere")
    assert (row["model"], row["answers"], row["done"], row["failed"], row["stripped"]) == (
        "command-stub",
        2,
        1,
        "50%",
        "100%",
    )
    assert "cohere / command-stub" in page.content.decode()


# --- The rewrite and the judge go through Cohere, not streamed


def _number_of(body: dict[str, Any], title: str) -> str:
    return next(i for i, d in documents_by_id(body).items() if d.get("title") == title)


def cohere_script(turns: tuple[Turn, ...] = TURNS) -> list[Callable[[dict[str, Any]], Chat]]:
    """The Cohere stub's replies, in request order, as conversations.openai_script: each answer one
    citation of its sentence naming its documents (by their ids in its request), each rewrite not
    streamed."""

    def answer(turn: Turn) -> Callable[[dict[str, Any]], Chat]:
        def reply(body: dict[str, Any]) -> Chat:
            assert body.get("stream") is True
            ids = tuple(_number_of(body, title) for title in turn.cites)
            return Chat((turn.sentence, ".", Cite(0, len(turn.sentence) + 1, ids)))

        return reply

    def rewrite(turn: Turn) -> Callable[[dict[str, Any]], Chat]:
        def reply(body: dict[str, Any]) -> Chat:
            assert not body.get("stream"), "the rewrite is one non-streamed request"
            assert "documents" not in body
            return Chat((str(turn.rewrite),))

        return reply

    script: list[Callable[[dict[str, Any]], Chat]] = []
    for turn in turns:
        if turn.rewrite is not None:
            script.append(rewrite(turn))
        script.append(answer(turn))
    return script


@pytest.mark.django_db
def test_json_a_conversations_rewrites_go_to_cohere(
    client, scope_documents, cohere_settings, stub_cohere
) -> None:
    _, requests = three_turns_json_checked(client, stub_cohere, cohere_script(), one_marker=True)

    # The documents travel with each answer request: the current turn's sources only.
    last = [r for r in requests if r.get("stream")][-1]
    assert [m["role"] for m in last["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert {d["data"]["title"] for d in last["documents"]} <= {d.title for d in SCOPE_DOCUMENTS}


def _verdicts(body: dict[str, Any]) -> Chat:
    """The judge's reply: every pair it was asked about supported."""
    assert not body.get("stream"), "the judge is one non-streamed request"
    assert body["messages"][0] == {"role": "system", "content": JUDGE_SYSTEM_PROMPT}
    pairs = re.findall(r"^S(\d+) N(\d+)$", body["messages"][1]["content"], re.MULTILINE)
    verdicts = [{"sentence": int(s), "source": int(n), "supported": True} for s, n in pairs]
    text = json.dumps({"verdicts": verdicts})
    return Chat((text[:10], text[10:]))


@pytest.mark.django_db
def test_the_judge_asks_cohere_itself(answer_factory, cohere_settings, stub_cohere: StubCohereServer) -> None:
    answer = answer_factory(text="Doc one says something [1]. Doc two too [2].", source_count=2)
    cohere_settings.ANSWERS_SUPPORT_METHOD = "judge"  # after the answer: its own record was lexical
    stub_cohere.enqueue(_verdicts)

    record = compute_support(answer)

    assert (record["method"], record["fallback"]) == ("judge", None)
    assert [s["verdict"] for s in record["sentences"]] == ["supported", "supported"]
    (request,) = stub_cohere.requests
    assert (request["model"], request["stream"], request["max_tokens"]) == ("command-stub", False, 2048)


# --- The SSE path, on the module's live server


@pytest.fixture(scope="module")
def live_settings(cohere_stub: StubCohereServer) -> dict[str, str]:
    return cohere_env(cohere_stub)  # the cohere provider: the module's openai stub is not called


@pytest.fixture(scope="module")
def live_documents() -> list[SeedDocument]:
    return [*corpus(), *SCOPE_DOCUMENTS]


async def _ask_sse(live: LiveServer, stub: StubCohereServer, *replies: Any) -> tuple[Any, dict[str, Any]]:
    stub.reset()
    stub.enqueue(*replies)
    async with client_for(live) as client:
        accepted = await ask_streaming(client)
        stream = await read_stream(client, accepted["events_url"])
    return stream, accepted


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_sse_native_citations_stream_and_show_final_numbers_live(
    live: LiveServer, cohere_stub: StubCohereServer, name: str
) -> None:
    scenario = SCENARIOS[name]

    stream, _ = await _ask_sse(live, cohere_stub, Chat(scenario.events))

    assert stream.types[-1] == "done", live.log_tail()
    done = stream.events[-1].data
    assert "".join(e.data["text"] for e in stream.of("delta")) == scenario.raw
    assert (done["text"], done["fallback"]) == (scenario.final, not CITED[name])
    # The live display shows final numbers from the first marker: it adds up to the done text.
    assert stream.display_text == done["text"]
    retrieved = [r["document_id"] for r in stream.events[0].data["references"]]
    cited = [e.data["reference"]["document_id"] for e in stream.of("cite")]
    assert cited == [retrieved[n - 1] for n in CITED[name]]


async def test_sse_a_cut_stream_ends_in_an_error_keeping_the_partial_text(
    live: LiveServer, cohere_stub: StubCohereServer
) -> None:
    cut = Chat(("Zebras graze.", Cite(0, 13, "1"), " They"), cut_after=5)

    stream, accepted = await _ask_sse(live, cohere_stub, cut)

    assert stream.types[-1] == "error", live.log_tail()
    out = manage(
        ["shell", "-c", "import os; from answers.models import Answer; "
         "a = Answer.objects.get(id=os.environ['ANSWER_ID']); print('RAW=' + repr((a.status, a.raw_text)))"],
        {**live.env, "ANSWER_ID": accepted["id"]},
    )  # fmt: skip
    assert "RAW=('failed', 'Zebras graze [1]. They')" in out


async def test_sse_max_tokens_done_event_says_truncated(
    live: LiveServer, cohere_stub: StubCohereServer
) -> None:
    stream, _ = await _ask_sse(
        live, cohere_stub, Chat(("Zebras live", Cite(0, 6, "1")), finish_reason="MAX_TOKENS")
    )

    done = stream.events[-1].data
    assert (stream.types[-1], done["text"], done["truncated"]) == ("done", "Zebras [1] live", True)


async def test_sse_429_then_success_recovers(live: LiveServer, cohere_stub: StubCohereServer) -> None:
    stream, _ = await _ask_sse(
        live, cohere_stub, Chat(status=429, retry_after=0), Chat(("Zebras graze.", Cite(0, 13, "2")))
    )

    assert (stream.types[-1], stream.events[-1].data["text"]) == ("done", "Zebras graze [1].")
    assert len(cohere_stub.requests) == 2


async def test_sse_a_conversations_rewrites_go_to_cohere(
    live: LiveServer, cohere_stub: StubCohereServer
) -> None:
    cohere_stub.reset()
    cohere_stub.enqueue(*cohere_script())

    dones = await three_turns_sse(live)

    check_three_turns_sse(dones, cohere_stub.requests, one_marker=True)
