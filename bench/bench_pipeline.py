"""The pipeline's own cost: a JSON-path ask() against its parts measured in the same run.

    .venv/bin/python bench/bench_pipeline.py [--rounds 3] [--db sqlite,postgres]

A fresh database (SQLite in a temporary folder; PostgreSQL database
`bench_pipeline`, dropped and created again) gets the demo corpus; then for
each demo question (several rounds) we time, in one process per database:

- retrieval alone (`retrieve()`), the provider alone (the extractive answerer
  streaming over the same prompt) — the floor: work the pipeline must do;
- the whole JSON path (`answers.pipeline.flow.ask()`: retrieve, persist the answer and its
  sources, stream, strip, finalize, persist the trail).

The ratio whole / (retrieval + provider) is the pipeline's overhead (database
writes and the citation core). Also reported: answers per second, one at a time
(bench/bench_concurrency.py measures them over HTTP, several clients at once).
Results go to bench/RESULTS_pipeline.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "RESULTS_pipeline.md"
PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
PG_BENCH_DB = "bench_pipeline"


def setup_django(database_url: str) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ["ANSWERS_PROVIDER"] = "extractive"
    os.environ["ANSWERS_EXTRACTIVE_DELAY_MS"] = "0"
    os.environ["DJANGO_SETTINGS_MODULE"] = "project.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("ingest", "--demo", verbosity=0)


async def measure(rounds: int) -> dict[str, list[float]]:
    from asgiref.sync import sync_to_async

    from answers.conf import conf
    from answers.pipeline import flow
    from answers.pipeline.publisher import JSON
    from answers.providers import build_prompt
    from answers.providers.registry import get_provider
    from answers.retrieval.pipeline import retrieve

    times: dict[str, list[float]] = {"retrieval": [], "provider": [], "ask": []}
    provider = get_provider("extractive")
    for _ in range(rounds):
        for question in harness.DEMO_QUESTIONS:
            start = time.perf_counter()
            retrieval = await sync_to_async(retrieve)(
                question, min_score=conf.MIN_SCORE, max_sources=conf.MAX_SOURCES
            )
            times["retrieval"].append(time.perf_counter() - start)

            prompt = build_prompt(question, retrieval.sources)
            start = time.perf_counter()
            async for _piece in provider.stream(prompt):
                pass
            times["provider"].append(time.perf_counter() - start)

            start = time.perf_counter()
            answer = await flow.ask(question=question, asker_id=None, publisher=JSON, provider=provider)
            times["ask"].append(time.perf_counter() - start)
            assert answer.status == "done", answer.error_message
    return times


def child(db: str, rounds: int) -> dict[str, list[float]]:
    """Run the measurement in a fresh process on a fresh database of kind `db`."""
    with tempfile.TemporaryDirectory() as folder:
        if db == "sqlite":
            url = f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
        else:
            import psycopg

            with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {PG_BENCH_DB} WITH (FORCE)")
                conn.execute(f"CREATE DATABASE {PG_BENCH_DB}")
            url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{PG_BENCH_DB}"
        out = subprocess.run(
            [sys.executable, __file__, "--child", url, "--rounds", str(rounds)],
            check=True,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        ).stdout
    times: dict[str, list[float]] = json.loads(out.strip().splitlines()[-1])
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        setup_django(args.child)
        print(json.dumps(asyncio.run(measure(args.rounds))))
        return

    def ms(values: list[float]) -> float:
        return statistics.median(values) * 1000

    load = os.getloadavg()
    results = {db: child(db, args.rounds) for db in args.db.split(",") if db}
    lines = [
        "## Pipeline overhead (JSON path, extractive provider)",
        "",
        f"`bench/bench_pipeline.py --rounds {args.rounds}`: "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
        f"load average {load[0]:.2f}/{load[1]:.2f} at start. "
        f"{len(harness.DEMO_QUESTIONS) * args.rounds} asks over the "
        "demo corpus, one at a time, in one process per database.",
        "",
        "| step | " + " | ".join(f"{_label(db)} median (ms)" for db in results) + " |",
        "|---|" + "---:|" * len(results),
    ]
    floors = {
        db: [r + p for r, p in zip(t["retrieval"], t["provider"], strict=True)] for db, t in results.items()
    }
    for name, key in (
        ("retrieval alone", "retrieval"),
        ("provider alone (extractive, no delay)", "provider"),
        ("floor: retrieval + provider", None),
        ("whole `ask()` (persist, stream, strip, finalize, persist)", "ask"),
    ):
        cells = [ms(floors[db] if key is None else t[key]) for db, t in results.items()]
        lines.append(f"| {name} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")
    ratios = {
        db: statistics.median(a / f for a, f in zip(t["ask"], floors[db], strict=True))
        for db, t in results.items()
    }
    per_second = {db: len(t["ask"]) / sum(t["ask"]) for db, t in results.items()}
    lines.append(
        "| overhead ratio, whole / floor (median of per-question ratios) | "
        + " | ".join(f"**{ratios[db]:.2f}x**" for db in results)
        + " |"
    )
    lines.append(
        "| answers per second, sequential | "
        + " | ".join(f"**{per_second[db]:.1f}**" for db in results)
        + " |"
    )
    lines.append("")
    RESULTS.write_text("\n".join(lines))
    print("\n".join(lines))
    figures = {"ratio": ratios, "per_second": per_second}
    (RESULTS.parent / "RESULTS_pipeline.json").write_text(
        json.dumps({"when": _when(), **figures}, indent=1) + "\n"
    )


def _label(db: str) -> str:
    return {"sqlite": "SQLite", "postgres": "PostgreSQL"}[db]


def _when() -> str:
    load = os.getloadavg()
    return (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}, load average {load[0]:.2f}/{load[1]:.2f} at the end"
    )


if __name__ == "__main__":
    main()
