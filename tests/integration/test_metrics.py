"""`GET /metrics` (docs/reference/http.md): Prometheus text, added up over several server processes.

Two daphne processes share one PROMETHEUS_MULTIPROC_DIR, as on one machine in production;
questions are asked on each, and a scrape of either shows the counts of both: answers by
status, provider and delivery, the citation outcomes the trails record, the stage times, and
the streams open at that moment.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer, SecondProcess
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.sse_client import READ_TIMEOUT_S, ask, read_stream, sse_messages
from tests.fixtures.waiting import await_until

TOKEN = secrets.token_urlsafe(24)
OUTCOMES = (
    "dropped_source",
    "renumbered_source",
    "fallback",
    "stripped_member",
    "normalized_marker",
    "unsupported_citation",
    "grounded_uncited",
)


@pytest.fixture(scope="module")
def prometheus_dir() -> Iterator[Path]:
    """The processes' shared PROMETHEUS_MULTIPROC_DIR; checked once both have stopped."""
    with tempfile.TemporaryDirectory(prefix="prometheus-") as directory:
        yield Path(directory)
        # Each process removed its live gauge (answers_open_streams) as it exited.
        assert not list(Path(directory).glob("gauge_live*")), sorted(
            p.name for p in Path(directory).iterdir()
        )


@pytest.fixture(scope="module")
def live_settings(prometheus_dir: Path) -> dict[str, str]:
    return {"PROMETHEUS_MULTIPROC_DIR": str(prometheus_dir), "ANSWERS_METRICS_TOKEN": TOKEN}


@pytest.fixture
def pair(live: LiveServer, second_process: SecondProcess) -> tuple[LiveServer, SecondProcess]:
    """The module's live server (the stub reset) and a second process beside it."""
    return live, second_process


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape, by name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def scrape(client: httpx.AsyncClient, url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = await client.get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return samples(response.text)


def value(scraped: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return scraped.get((name, frozenset(labels.items())), 0.0)


def answers(scraped: dict[Any, float], status: str, delivery: str) -> float:
    labels = {"status": status, "provider": "openai", "delivery": delivery, "origin": "reader"}
    return value(scraped, "answers_total", **labels)


def outcome(scraped: dict[Any, float], name: str) -> float:
    return value(scraped, "answers_citation_outcomes_total", outcome=name)


async def support_record(client: httpx.AsyncClient, url: str, answer_id: str, live: LiveServer) -> Any:
    async def stored() -> Any:
        trail = (
            await client.get(f"{url}/api/answers/{answer_id}/trail/", headers=live.auth("reviewer"))
        ).json()
        return trail if trail["support"] is not None else None

    return await await_until(stored, within=READ_TIMEOUT_S, what=f"answer {answer_id}: its support record")


def trail_outcomes(trail: dict[str, Any]) -> dict[str, int]:
    """What an answer's trail says finalizing and the support check decided, as the metric counts it."""
    sources, support = trail["sources"], trail["support"]
    return {
        "dropped_source": sum(s["status"] == "dropped" for s in sources),
        "renumbered_source": sum(s["final_number"] not in (None, s["original_number"]) for s in sources),
        "fallback": int(trail["fallback"]),
        "stripped_member": len(trail["stripped"]),
        "normalized_marker": len(trail["normalized"]),
        "unsupported_citation": sum(
            score < support["min_score"]
            for s in support["sentences"]
            if s["verdict"] == "unsupported"
            for score in s["scores"].values()
        ),
        "grounded_uncited": sum(
            s["verdict"] == "uncited" and bool(s["grounded_by"]) for s in support["sentences"]
        ),
    }


async def test_counts_from_two_processes_add_up_in_either_scrape(
    pair: tuple[LiveServer, SecondProcess], stub: StubOpenAIServer
) -> None:
    first, second = pair
    stub.enqueue(
        Reply(pieces=["Zebras live in grassland [3] and savanna [9]. Zebra habitat guide part 1."]),
        Reply(pieces=["Zebras live in savanna 【2】."], delay_s=0.02),
        Reply(pieces=["Zebras li", "ve"], cut_after=1),
    )
    async with httpx.AsyncClient(timeout=READ_TIMEOUT_S) as client:
        before = await scrape(client, first.url)
        on_first = await client.post(f"{first.url}/api/answers/", json={"question": ZEBRA_QUESTION})
        assert on_first.status_code == 201, on_first.text
        accepted = (
            await client.post(f"{second.url}/api/answers/", json={"question": ZEBRA_QUESTION, "stream": True})
        ).json()
        await read_stream(client, accepted["events_url"])
        failed = await client.post(f"{second.url}/api/answers/", json={"question": ZEBRA_QUESTION})
        assert failed.status_code == 502, failed.text
        trails = [
            await support_record(client, first.url, on_first.json()["id"], first),
            await support_record(client, second.url, accepted["id"], first),
        ]
        after = [await scrape(client, first.url), await scrape(client, second.url)]

    expected = {name: sum(trail_outcomes(trail)[name] for trail in trails) for name in OUTCOMES}
    # What the replies did: [3] kept as [1] and [9] stripped; 【2】 normalized and kept as [1].
    assert {name: expected[name] for name in OUTCOMES[:5]} == {
        "dropped_source": 6,
        "renumbered_source": 2,
        "fallback": 0,
        "stripped_member": 1,
        "normalized_marker": 1,
    }
    for scraped in after:
        assert answers(scraped, "done", "json") - answers(before, "done", "json") == 1
        assert answers(scraped, "done", "sse") - answers(before, "done", "sse") == 1
        assert answers(scraped, "failed", "json") - answers(before, "failed", "json") == 1
        assert {name: outcome(scraped, name) - outcome(before, name) for name in OUTCOMES} == expected
        stage_counts = {
            stage: value(scraped, "answers_stage_seconds_count", stage=stage)
            - value(before, "answers_stage_seconds_count", stage=stage)
            for stage in ("retrieval", "first_piece", "generation", "total")
        }
        assert stage_counts == {"retrieval": 3, "first_piece": 2, "generation": 2, "total": 2}
        assert value(scraped, "answers_stage_seconds_sum", stage="total") > value(
            before, "answers_stage_seconds_sum", stage="total"
        )
    assert after[0] == after[1], "either process serves the same sums"


async def test_open_streams_count_the_streams_open_on_every_process(
    pair: tuple[LiveServer, SecondProcess], stub: StubOpenAIServer
) -> None:
    first, second = pair
    gate = threading.Event()
    stub.enqueue(Reply(pieces=["Zebras live in grassland [1]."], gate=gate))
    async with httpx.AsyncClient(base_url=first.url, timeout=READ_TIMEOUT_S) as client:
        baseline = value(await scrape(client, first.url), "answers_open_streams")
        try:
            accepted = await ask(client)
            async with client.stream("GET", accepted["events_url"].replace(first.url, second.url)) as held:
                messages = sse_messages(held.aiter_lines())
                async for fields in messages:
                    if fields.get("event") == "references":
                        break
                # Open on the second process, counted by the first's scrape.
                assert value(await scrape(client, first.url), "answers_open_streams") == baseline + 1
        finally:
            gate.set()

        async def uncounted() -> bool:
            return value(await scrape(client, first.url), "answers_open_streams") == baseline

        await await_until(uncounted, within=READ_TIMEOUT_S, what="a closed stream is no longer counted")


async def test_metrics_need_the_bearer_token(pair: tuple[LiveServer, SecondProcess]) -> None:
    first, _ = pair
    async with httpx.AsyncClient(base_url=first.url, timeout=READ_TIMEOUT_S) as client:
        missing = await client.get("/metrics")
        wrong = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}x"})
        other_scheme = await client.get("/metrics", headers={"Authorization": f"Token {TOKEN}"})
        bare = await client.get("/metrics", headers={"Authorization": "Bearer"})
        lower_case = await client.get("/metrics", headers={"Authorization": f"bearer {TOKEN}"})
    for refused in (missing, wrong, other_scheme, bare):
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")
        assert "answers_total" not in refused.text
    assert lower_case.status_code == 200
    assert "answers_open_streams" in lower_case.text


@pytest.mark.django_db
def test_without_a_token_there_is_no_metrics_page() -> None:
    with override_settings(ANSWERS_METRICS_TOKEN=""):
        response = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer anything")
    assert response.status_code == 404
    assert b"answers_total" not in response.content


@pytest.mark.parametrize(
    ("overrides", "expected_ids"),
    [
        ({"ANSWERS_EVENT_RETENTION": -1}, ["answers.E027"]),
        ({"ANSWERS_EVENT_RETENTION": float("nan")}, ["answers.E027"]),
        ({"ANSWERS_EVENT_RETENTION": 0}, []),
        ({"ANSWERS_METRICS_TOKEN": "two words"}, ["answers.E028"]),
        ({"ANSWERS_METRICS_TOKEN": "s3cr3t-T0ken_~"}, []),
    ],
)
def test_operations_settings_fail_their_own_checks(
    overrides: dict[str, Any], expected_ids: list[str]
) -> None:
    from django.core.checks import run_checks

    with override_settings(**overrides):
        ids = [m.id for m in run_checks() if m.id and m.id.startswith("answers.")]
    assert ids == expected_ids


def test_a_multiprocess_directory_that_is_not_there_fails_its_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.checks import run_checks

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "/nonexistent/prometheus")
    with override_settings(ANSWERS_METRICS_TOKEN="token"):
        ids = [m.id for m in run_checks() if m.id and m.id.startswith("answers.")]
    assert ids == ["answers.E029"]


def test_a_killed_processs_open_streams_are_forgotten_by_the_next_process(tmp_path: Path) -> None:
    from answers.metrics import _forget_dead_processes

    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead, alive = int(finished.stdout), os.getpid()
    for pid in (dead, alive):
        (tmp_path / f"gauge_livesum_{pid}.db").write_bytes(b"")
        (tmp_path / f"counter_{pid}.db").write_bytes(b"")
    _forget_dead_processes(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"counter_{dead}.db", f"counter_{alive}.db", f"gauge_livesum_{alive}.db"]
    ), "a dead process's counts stay in the sums; its open streams do not"
