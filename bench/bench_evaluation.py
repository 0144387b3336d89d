"""Evaluation runs (`manage.py evaluate`, docs/evaluation.md): what a run costs per item beyond the
pipeline, its concurrency with a slow provider, and the `demo` set offline on both databases.

    .venv/bin/python bench/bench_evaluation.py         # writes bench/RESULTS_evaluation.md (+ .json)

1. Overhead per item (SQLite, demo corpus, offline extractive provider, the defaults' retrieval
   settings): the same ITEMS on-topic labeled questions asked (a) one at a time through the JSON API of
   a daphne server, each until its support record is stored (what a run waits for before it measures:
   the trail API polled every POLL_S), and (b) as a set by `manage.py evaluate --concurrency 1` on the
   same database, per item = the run's own span (started_at to finished_at) / items. Alternated
   ROUNDS times; the baseline is (a), in the same run. Target: (b) within 1.2x of (a).
2. Concurrency: SLOW_ITEMS questions, the openai provider pointed at a stub that waits 1 s before its
   reply, `--concurrency 10`. Target: under 15 s (the provider's own time / 10 is the floor: 10 s).
3. The `demo` set (bench/relevance_labeled.jsonl, as `make run` loads it) with the offline provider on
   SQLite and PostgreSQL: the run's span (target under a minute on SQLite) and its metrics.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import BENCH, ROOT, Report, db_label, machine, run_django, save_figures, server

from tests.fixtures.live_server import LiveServer, manage
from tests.fixtures.providers import Reply, StubOpenAIServer

LABELED = BENCH / "relevance_labeled.jsonl"
ITEMS = 40
ROUNDS = 2
POLL_S = 0.005
SLOW_ITEMS = 100
SLOW_S = 1.0
CONCURRENCY = 10
OFFLINE = {"ANSWERS_PROVIDER": "extractive", "ANSWERS_MIN_SCORE": "0.25", "ANSWERS_MAX_SOURCES": "5"}
LOAD_DEMO = "from answers.content.demo import load_demo_corpus; assert load_demo_corpus().ok"
RUN_SPAN = """
import json
from answers.models import EvaluationRun
run = EvaluationRun.objects.order_by("-id").first()
print(json.dumps({"id": run.id, "status": run.status, "items": run.results.count(),
                  "seconds": (run.finished_at - run.started_at).total_seconds(), "metrics": run.metrics}))
"""


def last_run(live: LiveServer) -> dict[str, Any]:
    return dict(json.loads(run_django(live, RUN_SPAN).strip().splitlines()[-1]))


def labeled(kind: str | None = None) -> list[str]:
    lines = [json.loads(line) for line in LABELED.read_text().splitlines() if line.strip()]
    return [json.dumps(line) + "\n" for line in lines if kind is None or line["kind"] == kind]


def import_set(live: LiveServer, name: str, lines: list[str]) -> None:
    path = Path(live.log_path).with_name(f"{name}.jsonl")
    path.write_text("".join(lines))
    manage(["evaluation", "import", name, str(path)], live.env)


def evaluate(live: LiveServer, name: str, *args: str) -> tuple[float, dict[str, Any]]:
    """The command's wall time (process start included) and its run as stored."""
    started = time.perf_counter()
    manage(["evaluate", name, "-v", "0", *args], live.env, timeout=900)
    return time.perf_counter() - started, last_run(live)


def api_until_supported(live: LiveServer, questions: list[str]) -> list[float]:
    """Seconds from each POST /api/answers/ to its support record stored, one question at a time."""
    took = []
    reviewer = live.auth("reviewer")
    with httpx.Client(base_url=live.url, timeout=120) as client:
        for question in questions:
            started = time.perf_counter()
            answer = client.post("/api/answers/", json={"question": question})
            answer.raise_for_status()
            trail = f"/api/answers/{answer.json()['id']}/trail/"
            while client.get(trail, headers=reviewer).json().get("support") is None:
                time.sleep(POLL_S)
            took.append(time.perf_counter() - started)
    return took


def overhead(report: Report) -> dict[str, Any]:
    lines = labeled("on-topic")[:ITEMS]
    questions = [json.loads(line)["question"] for line in lines]
    api: list[float] = []
    runs: list[float] = []
    with (
        StubOpenAIServer() as stub,
        server("sqlite", openai_base_url=stub.base_url, extra_env=OFFLINE) as live,
    ):
        run_django(live, LOAD_DEMO)
        import_set(live, "overhead", lines)
        api_until_supported(live, questions[:5])  # warm-up: the server's first answers
        for _ in range(ROUNDS):
            api.append(statistics.mean(api_until_supported(live, questions)))
            _, run = evaluate(live, "overhead", "--concurrency", "1")
            runs.append(run["seconds"] / run["items"])
    ratio = statistics.mean(runs) / statistics.mean(api)
    report("### Overhead per item against the JSON API")
    report()
    report(
        f"{ITEMS} on-topic labeled questions, demo corpus, SQLite, offline provider; "
        f"{ROUNDS} rounds, alternated."
    )
    report()
    report.table(
        ["round", "JSON API until its support record is stored (ms/item, baseline)", "evaluate (ms/item)"],
        [
            [i + 1, f"{a * 1000:.1f}", f"{r * 1000:.1f}"]
            for i, (a, r) in enumerate(zip(api, runs, strict=True))
        ],
    )
    report()
    report(
        f"Evaluate / JSON API: **{ratio:.2f}x** (target within 1.2x: {'met' if ratio <= 1.2 else 'not met'})."
    )
    report()
    return {"api_ms": statistics.mean(api) * 1000, "run_ms": statistics.mean(runs) * 1000, "ratio": ratio}


def slow_run(delay_s: float) -> tuple[float, dict[str, Any]]:
    """SLOW_ITEMS items at --concurrency CONCURRENCY, the provider waiting `delay_s` before each reply."""
    lines = [
        json.dumps({"question": f"Zebra habitat guide {i}: where do zebras live?"}) + "\n"
        for i in range(SLOW_ITEMS)
    ]
    reply = Reply(pieces=["Zebras live in grassland habitat [1]."], start_delay_s=delay_s)
    with StubOpenAIServer(default=reply) as stub, server("sqlite", openai_base_url=stub.base_url) as live:
        import_set(live, "slow", lines)
        return evaluate(live, "slow", "--concurrency", str(CONCURRENCY))


def concurrency(report: Report) -> dict[str, Any]:
    wall, run = slow_run(SLOW_S)
    # The same items with a provider that answers at once: the run's own work (retrieval, storage,
    # support records, measuring), which the provider's waits overlap only as far as CPU allows.
    _, quick = slow_run(0.0)
    floor = SLOW_ITEMS * SLOW_S / CONCURRENCY
    report("### A slow provider, asked 10 at a time")
    report()
    report(
        f"{SLOW_ITEMS} items, the openai provider on a stub waiting {SLOW_S:g} s before each reply, "
        f"`--concurrency {CONCURRENCY}`, SQLite."
    )
    report()
    report.table(
        ["measure", "seconds", "/ floor"],
        [
            ["floor: provider time / concurrency (baseline)", f"{floor:.1f}", "1.00x"],
            [
                "the run's span (started to finished)",
                f"{run['seconds']:.1f}",
                f"{run['seconds'] / floor:.2f}x",
            ],
            ["the command's wall time (process start included)", f"{wall:.1f}", f"{wall / floor:.2f}x"],
            [
                "the same run, the provider answering at once",
                f"{quick['seconds']:.1f}",
                f"{quick['seconds'] / floor:.2f}x",
            ],
        ],
    )
    report()
    report(
        f"Target under 15 s: **{'met' if run['seconds'] < 15 else 'not met'}** "
        f"({run['status']}, {run['items']} items)."
    )
    report()
    return {"span_s": run["seconds"], "wall_s": wall, "floor_s": floor, "own_work_s": quick["seconds"]}


def demo(report: Report, dbs: list[str]) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    rows = []
    for db in dbs:
        with StubOpenAIServer() as stub, server(db, openai_base_url=stub.base_url, extra_env=OFFLINE) as live:
            run_django(live, LOAD_DEMO)
            manage(["evaluation", "import", "demo", str(LABELED), "--if-missing"], live.env)
            wall, run = evaluate(live, "demo", "--label", "offline")
        figures[db] = {"span_s": run["seconds"], "wall_s": wall, "metrics": run["metrics"]}
        rows.append((db, run, wall))
    report("### The demo set with the offline provider")
    report()
    report(
        "bench/relevance_labeled.jsonl as `make run` loads it (`demo`), `--concurrency 4`, "
        "extractive provider."
    )
    report()
    report.table(
        ["database", "items", "run span (s)", "command wall (s)"],
        [[db_label(db), run["items"], f"{run['seconds']:.1f}", f"{wall:.1f}"] for db, run, wall in rows],
    )
    report()
    names = list(rows[0][1]["metrics"])
    report.table(
        ["metric", *(db_label(db) for db, _, _ in rows)],
        [[n, *(_show(r["metrics"][n]) for _, r, _ in rows)] for n in names],
    )
    report()
    if "sqlite" in figures:
        span = figures["sqlite"]["span_s"]
        report(f"Target under a minute on SQLite: **{'met' if span < 60 else 'not met'}** ({span:.1f} s).")
        report()
    return figures


def _show(value: Any) -> str:
    return "—" if value is None else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dbs", default="sqlite,postgres")
    args = parser.parse_args()
    report = Report("evaluation")
    report("## Evaluation runs")
    report()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    report(f"`bench/bench_evaluation.py`, {machine()}, commit {commit or 'unknown'}.")
    report()
    figures = {
        "overhead": overhead(report),
        "concurrency": concurrency(report),
        "demo": demo(report, args.dbs.split(",")),
    }
    report.write()
    save_figures("evaluation", figures)


if __name__ == "__main__":
    main()
