"""ANSWERS_PROVIDER=mistral end to end: the model's reference chunks become the final pair.

JSON path through the API test client, SSE path through a real daphne server; both against the
stub Mistral server (real HTTP, the real chunks), with real retrieval. Each scripted reply gives
the raw text docs/howto/providers.md implies, the finalized pair, the trail's `native` record
and usage; failures (429 with Retry-After, 500, a cut stream) and truncation end as with openai;
the health page and the metrics name the provider.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from answers.models import Answer
from answers.support.compute import compute_support
from tests.fixtures.answers import QUESTION
from tests.fixtures.live_server import LiveServer
from tests.fixtures.mistral_stub import API_KEY, Chunks, Completion, Item, Ref, StubMistralServer, mistral_env
from tests.fixtures.sse_client import ask as ask_streaming
from tests.fixtures.sse_client import client_for, read_stream

METRICS_TOKEN = "mistral-pipeline-metrics-token"


@dataclass(frozen=True)
class Case:
    """A scripted reply and what it must read as: raw (the markers the provider wrote) and final."""

    items: tuple[Item, ...]
    raw: str
    final: str
    stripped: list[int] = field(default_factory=list)
    fallback: bool = False
    text_as_chunks: bool = False

    @property
    def completion(self) -> Completion:
        return Completion(items=self.items, text_as_chunks=self.text_as_chunks)


def _long_case() -> Case:
    """2,000 characters in 2-character pieces; every fifth sentence cites sources 3 and 1."""
    sentences = [f"Teacups are carved with care, note {n:03d}. " for n in range(50)]  # 50 x 40 characters
    items: list[Item] = []
    raw, final = [], []
    for n, sentence in enumerate(sentences):
        items += [sentence[i : i + 2] for i in range(0, len(sentence), 2)]
        cited = n % 5 == 0
        if cited:
            items += [Ref(2), Ref("0")]
        raw.append(f"{sentence[:-2]} [3, 1]. " if cited else sentence)
        final.append(f"{sentence[:-2]} [1, 2]. " if cited else sentence)
    return Case(tuple(items), "".join(raw), "".join(final))


CASES = {
    "multi-byte-text-before-a-reference": Case(
        ("Les morses — été 🦭 sculptent", " des tasses.", Ref(2)),
        "Les morses — été 🦭 sculptent des tasses [3].",
        "Les morses — été 🦭 sculptent des tasses [1].",
    ),
    "string-ids": Case(
        ("Teacups need care.", Ref("2"), " Walruses agree.", Ref("0")),
        "Teacups need care [3]. Walruses agree [1].",
        "Teacups need care [1]. Walruses agree [2].",
    ),
    "int-ids": Case(
        ("Teacups need care;", Ref(1), " walruses agree!", Ref(3)),
        "Teacups need care [2]; walruses agree [4]!",
        "Teacups need care [1]; walruses agree [2]!",
    ),
    "two-references-in-a-row": Case(
        ("Both agree.", Ref(2), Ref(0), Ref(2)), "Both agree [3, 1].", "Both agree [1, 2]."
    ),
    "an-out-of-range-id": Case(
        ("Teacups need care.", Ref(0), " Invented.", Ref(9)),
        "Teacups need care [1]. Invented [0].",
        "Teacups need care [1]. Invented.",
        stripped=[0],
    ),
    "no-reference": Case(
        ("Nothing here is cited.",), "Nothing here is cited.", "Nothing here is cited.", fallback=True
    ),
    "content-as-a-list-of-chunks": Case(
        (Chunks("Teacups need care.", Ref(1), " Walruses", Ref("3")), Chunks(" agree.")),
        "Teacups need care [2]. Walruses [4] agree.",
        "Teacups need care [1]. Walruses [2] agree.",
        text_as_chunks=True,
    ),
    "2000-characters-in-2-character-pieces": _long_case(),
}


def expected_native(items: tuple[Item, ...]) -> list[tuple[int, list[int | str]]]:
    """Each reference chunk's (at, ids) as scripted: `at` counts the reply's text before it."""
    records: list[tuple[int, list[int | str]]] = []
    at = 0
    for item in items:
        for piece in item.items if isinstance(item, Chunks) else (item,):
            if isinstance(piece, str):
                at += len(piece)
            elif piece.ids:
                records.append((at, piece.ids))
    return records


def check_trail(trail: dict[str, Any], case: Case) -> None:
    """The trail: raw text, stripped members, provider and model, usage, and the native records
    (where each reference came, its ids as sent, its marker's `[` in the raw text)."""
    assert (trail["raw_text"], trail["text"], trail["stripped"]) == (case.raw, case.final, case.stripped)
    assert (trail["provider"], trail["model"], trail["truncated"]) == ("mistral", "mistral-stub", False)
    assert trail["usage"] == {"prompt_tokens": 120, "completion_tokens": 42}
    native = trail["native"]
    assert [(r["at"], r["ids"]) for r in native] == expected_native(case.items)
    assert all(case.raw[r["marker_at"]] == "[" for r in native)
    assert {case.raw[r["marker_at"] - 1 : r["marker_at"]] for r in native} <= {" "}


# --- The JSON path, in-process


def _ask_json(client: Any) -> Any:
    return client.post("/api/answers/", {"question": QUESTION}, content_type="application/json")


@pytest.mark.django_db
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_json_references_give_the_final_pair_and_the_trail(
    client, corpus, mistral_settings, stub_mistral: StubMistralServer, admin_user, case: Case
) -> None:
    stub_mistral.enqueue(case.completion)

    response = _ask_json(client)

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["status"], body["text"], body["fallback"], body["truncated"]) == (
        "done",
        case.final,
        case.fallback,
        False,
    )
    client.force_login(admin_user)
    check_trail(client.get(f"/api/answers/{body['id']}/trail/").json(), case)


@pytest.mark.django_db
def test_json_429_with_retry_after_is_retried_and_answers(
    client, corpus, mistral_settings, stub_mistral: StubMistralServer
) -> None:
    case = CASES["string-ids"]
    stub_mistral.enqueue(Completion(status=429, retry_after=0.2), case.completion)

    response = _ask_json(client)

    assert (response.status_code, response.json()["text"]) == (201, case.final)
    assert len(stub_mistral.requests) == 2


@pytest.mark.django_db
def test_json_500_is_a_failed_answer(
    client, corpus, mistral_settings, stub_mistral: StubMistralServer
) -> None:
    stub_mistral.enqueue(*[Completion(status=500)] * 3)

    response = _ask_json(client)

    assert response.status_code == 502
    answer = Answer.objects.get(id=response.json()["id"])
    assert (answer.status, answer.error_kind, len(stub_mistral.requests)) == ("failed", "upstream", 3)
    assert API_KEY not in response.content.decode()
    assert API_KEY not in str(Answer.objects.filter(id=answer.id).values().get())


@pytest.mark.django_db
def test_json_a_cut_stream_fails_keeping_its_partial_raw_text(
    client, corpus, mistral_settings, stub_mistral: StubMistralServer
) -> None:
    stub_mistral.enqueue(
        Completion(items=["Teacups need care.", Ref(0), " Walruses", " agree."], cut_after=3)
    )

    response = _ask_json(client)

    assert response.status_code == 502
    answer = Answer.objects.get(id=response.json()["id"])
    assert (answer.status, answer.error_kind, answer.raw_text) == (
        "failed",
        "upstream",
        "Teacups need care [1]. Walruses",
    )


@pytest.mark.django_db
def test_json_length_finish_is_done_but_truncated(
    client, corpus, mistral_settings, stub_mistral: StubMistralServer, admin_user
) -> None:
    stub_mistral.enqueue(Completion(items=["Teacups need", Ref(0)], finish_reason="length"))

    body = _ask_json(client).json()

    assert (body["status"], body["text"], body["truncated"]) == ("done", "Teacups need [1]", True)
    client.force_login(admin_user)
    assert client.get(f"/api/answers/{body['id']}/trail/").json()["truncated"] is True


@pytest.mark.django_db
def test_the_health_page_shows_mistral_and_its_model(
    client, corpus, mistral_settings, stub_mistral: StubMistralServer, admin_user
) -> None:
    stub_mistral.enqueue(CASES["two-references-in-a-row"].completion)
    assert _ask_json(client).status_code == 201
    client.force_login(admin_user)

    response = client.get(reverse("admin:answers_answer_health"))

    rows = [(row["provider"], row["model"], row["answers"], row["done"]) for row in response.context["rows"]]
    assert rows == [("mistral", "mistral-stub", 1, 1)]
    assert "mistral / mistral-stub" in response.content.decode()


def _judge_all_supported(body: dict[str, Any]) -> Completion:
    """The judge's reply (non-streamed) to the pairs its request lists: every one supported."""
    assert not body.get("stream"), "the judge is one non-streamed request"
    pairs = re.findall(r"^S(\d+) N(\d+)$", body["messages"][-1]["content"], re.MULTILINE)
    verdicts = [{"sentence": int(s), "source": int(n), "supported": True} for s, n in pairs]
    return Completion(items=[json.dumps({"verdicts": verdicts})])


@pytest.mark.django_db
def test_the_judge_support_method_asks_mistral(
    client, corpus, mistral_settings, stub_mistral: StubMistralServer
) -> None:
    stub_mistral.enqueue(CASES["string-ids"].completion)
    answer = Answer.objects.get(id=_ask_json(client).json()["id"])
    mistral_settings.ANSWERS_SUPPORT_METHOD = "judge"  # after the answer: its own record was lexical
    stub_mistral.enqueue(_judge_all_supported)

    record = compute_support(answer)

    assert (record["method"], record["fallback"]) == ("judge", None)
    assert [s["verdict"] for s in record["sentences"]] == ["supported", "supported"]
    judged = stub_mistral.requests[-1]
    assert (judged["model"], judged.get("stream")) == ("mistral-stub", False)


# --- The SSE path (and the metrics), on a live server


@pytest.fixture(scope="module")
def live_settings(
    mistral_stub: StubMistralServer, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    metrics = tmp_path_factory.mktemp("prometheus")
    return {
        **mistral_env(mistral_stub),
        "PROMETHEUS_MULTIPROC_DIR": str(metrics),
        "ANSWERS_METRICS_TOKEN": METRICS_TOKEN,
    }


async def _stream(live: LiveServer) -> tuple[dict[str, Any], Any]:
    async with client_for(live) as client:
        accepted = await ask_streaming(client)
        return accepted, await read_stream(client, accepted["events_url"])


async def _trail(live: LiveServer, answer_id: str) -> dict[str, Any]:
    async with client_for(live) as client:
        response = await client.get(f"/api/answers/{answer_id}/trail/", headers=live.auth("reviewer"))
        trail: dict[str, Any] = response.json()
        return trail


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_sse_streams_the_raw_text_live_in_final_numbers_and_ends_in_the_final_pair(
    live: LiveServer, mistral_stub: StubMistralServer, case: Case
) -> None:
    mistral_stub.reset()
    mistral_stub.enqueue(case.completion)

    accepted, stream = await _stream(live)

    assert stream.types[-1] == "done", live.log_tail()
    done = stream.events[-1].data
    assert (done["text"], done["fallback"], done["truncated"]) == (case.final, case.fallback, False)
    assert stream.delta_text == case.raw
    # The live display reads as the final text from the first marker on, and adds up to it.
    assert stream.display_text == case.final
    cited = [] if case.fallback else [r["number"] for r in done["references"]]  # a fallback cites none
    assert [e.data["number"] for e in stream.of("cite")] == cited
    check_trail(await _trail(live, accepted["id"]), case)


async def test_sse_429_with_retry_after_is_retried_and_answers(
    live: LiveServer, mistral_stub: StubMistralServer
) -> None:
    mistral_stub.reset()
    case = CASES["int-ids"]
    mistral_stub.enqueue(Completion(status=429, retry_after=0.2), case.completion)

    _, stream = await _stream(live)

    assert (stream.types[-1], stream.events[-1].data["text"]) == ("done", case.final)
    assert len(mistral_stub.requests) == 2


@pytest.mark.parametrize(
    ("completion", "shown"),
    [
        pytest.param(Completion(status=500), "", id="500"),
        pytest.param(
            Completion(items=["Zebras graze.", Ref(0), " They", " roam."], cut_after=3),
            "Zebras graze [1]. They",
            id="cut-stream",
        ),
    ],
)
async def test_sse_failures_end_in_an_error_event(
    live: LiveServer, mistral_stub: StubMistralServer, completion: Completion, shown: str
) -> None:
    mistral_stub.reset()
    mistral_stub.enqueue(*[completion] * 3)

    accepted, stream = await _stream(live)

    assert stream.types[-1] == "error"
    assert stream.delta_text == shown
    assert API_KEY not in str(stream.events[-1].data)
    async with client_for(live) as client:
        body = (await client.get(f"/api/answers/{accepted['id']}/")).json()
    assert body["status"] == "failed"


async def test_sse_length_finish_is_done_but_truncated(
    live: LiveServer, mistral_stub: StubMistralServer
) -> None:
    mistral_stub.reset()
    mistral_stub.enqueue(Completion(items=["Zebras live", Ref(0)], finish_reason="length"))

    _, stream = await _stream(live)

    done = stream.events[-1].data
    assert (stream.types[-1], done["text"], done["truncated"]) == ("done", "Zebras live [1]", True)


async def test_metrics_count_mistral_answers_by_delivery(
    live: LiveServer, mistral_stub: StubMistralServer
) -> None:
    mistral_stub.reset()
    mistral_stub.enqueue(CASES["int-ids"].completion, CASES["int-ids"].completion)
    async with client_for(live) as client:
        before = await _answers_total(client)
        _, stream = await _stream(live)
        assert stream.types[-1] == "done"
        asked = await client.post(
            "/api/answers/", json={"question": "Where do zebras live?", "stream": False}
        )
        assert asked.status_code == 201, asked.text
        after = await _answers_total(client)

    assert after["sse"] - before["sse"] == 1
    assert after["json"] - before["json"] == 1


async def _answers_total(client: httpx.AsyncClient) -> dict[str, float]:
    """answers_total{status="done", provider="mistral"} by delivery."""
    response = await client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert response.status_code == 200, response.text
    totals = {"sse": 0.0, "json": 0.0}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            labels = sample.labels
            if (
                sample.name == "answers_total"
                and labels.get("provider") == "mistral"
                and labels.get("status") == "done"
            ):
                totals[labels["delivery"]] = sample.value
    return totals
