"""`manage.py evaluate` as a CI job runs it, in a process of its own: its exit status, and Ctrl-C (a real
SIGINT) keeping what finished and marking the run `cancelled`."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.fixtures.evaluation import ANIMALS, animal_items, cite_first_then_claim, write_items
from tests.fixtures.live_server import ROOT, SeedDocument, manage, seeded_database
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.waiting import wait_until

DOCUMENTS = [
    SeedDocument(
        key=f"animals:{name}", title=f"{name.title()} facts", url=f"https://zoo.example/{name}", body=body
    )
    for name, body in ANIMALS.items()
]


@pytest.fixture(scope="module")
def command_env(stub: StubOpenAIServer) -> Iterator[tuple[Path, dict[str, str]]]:
    """A database of its own with the animal documents and the set `animals`, and the environment of a
    process on it (the openai provider pointed at the module's stub)."""
    with seeded_database(
        openai_base_url=stub.base_url, documents=DOCUMENTS, extra_env={"ANSWERS_MIN_SCORE": "0.2"}
    ) as (workdir, env, _):
        manage(
            ["evaluation", "import", "animals", str(write_items(workdir / "animals.jsonl", animal_items()))],
            env,
        )
        yield workdir, env


def query(env: dict[str, str], sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of the process's database, read as a separate client (SQLite file or PostgreSQL); `%s`
    marks a parameter."""
    url = env["DATABASE_URL"]
    if url.startswith("sqlite:///"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as connection:
            return connection.execute(sql.replace("%s", "?"), params).fetchall()
    with psycopg.connect(url) as connection:
        return connection.execute(sql, params).fetchall()


def evaluate(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "evaluate", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_exit_status_0_1_and_2(command_env: tuple[Path, dict[str, str]], stub: StubOpenAIServer) -> None:
    _, env = command_env
    stub.reset()
    stub.set_default(cite_first_then_claim)

    passed = evaluate(env, "animals", "--fail-under", "right_first=1", "--fail-under", "decline_recall=1")
    assert passed.returncode == 0, passed.stderr
    assert "right_first" in passed.stdout
    assert "100.0%" in passed.stdout
    assert "4/4" in passed.stderr  # the progress bar, on stderr

    under = evaluate(env, "animals", "--fail-under", "citation_precision=0.99")
    assert under.returncode == 1
    assert "citation_precision = " in under.stderr
    assert "is under 0.99" in under.stderr

    unknown = evaluate(env, "no-such-set")
    assert unknown.returncode == 2
    assert "No evaluation set is called 'no-such-set'" in unknown.stderr


def test_ctrl_c_keeps_what_finished_and_cancels_the_run(
    command_env: tuple[Path, dict[str, str]], stub: StubOpenAIServer
) -> None:
    workdir, env = command_env
    stub.reset()
    held = threading.Event()
    # One item at a time: the first is answered, the second is held until the end of the test.
    stub.enqueue(cite_first_then_claim, Reply(pieces=["Held [1]."], gate=held))
    out = workdir / "cancelled.json"
    process = subprocess.Popen(
        [sys.executable, "manage.py", "evaluate", "animals", "--concurrency", "1", "--json", str(out)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        run_id = wait_until(
            lambda: _run_with_one_result(env) if len(stub.requests) == 2 else None,
            within=120,
            what="the first item's result stored and the second item asked",
            detail=lambda: process.stderr.read() if process.poll() is not None else "",
        )
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        held.set()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert "cancelled: 1 items kept" in stderr

    ((status, metrics),) = query(
        env, "SELECT status, metrics FROM answers_evaluationrun WHERE id = %s", run_id
    )
    assert status == "cancelled"
    assert (json.loads(metrics) if isinstance(metrics, str) else metrics)["items"] == 1  # SQLite: text
    results = query(env, "SELECT question FROM answers_evaluationresult WHERE run_id = %s", run_id)
    assert results == [(animal_items()[0]["question"],)]
    # The item in flight was stopped as a reader's request is when its client goes away.
    held_answer = query(
        env,
        "SELECT status, error_kind FROM answers_answer WHERE question = %s ORDER BY created_at DESC LIMIT 1",
        animal_items()[1]["question"],
    )
    assert held_answer == [("failed", "cancelled")]
    document = json.loads(out.read_text())
    assert document["status"] == "cancelled"
    assert len(document["items"]) == 1
    assert "Run " in stdout


def _run_with_one_result(env: dict[str, str]) -> int | None:
    rows = query(
        env,
        "SELECT run_id, COUNT(*) FROM answers_evaluationresult WHERE run_id = "
        "(SELECT MAX(id) FROM answers_evaluationrun) GROUP BY run_id",
    )
    return int(rows[0][0]) if rows and rows[0][1] == 1 else None
