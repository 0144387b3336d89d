"""Many answers in flight: concurrent JSON asks against a slow provider, and JSON answers per second.

    .venv/bin/python bench/bench_concurrency.py [--db sqlite,postgres] [--asks 1000] [--provider-s 10]

1. In flight. A daphne server (bench/harness.py) whose `openai` provider is the
   stub in this process, taking `--provider-s` seconds before its first piece
   (a slow model). The client sends `--asks` `POST /api/answers/` with
   `stream: false` at once and waits for every response. Reported: all done
   within (wall time), answers failed and why, latency percentiles, the
   server's peak thread count and PostgreSQL sessions (sampled every 0.2 s).
   Each database twice: the baseline, Django's own ASGI handler (a thread per
   request, kept while it waits: ANSWERS_REQUEST_THREADS=0), then the project's
   (answers/handler.py: requests share a pool). Target: 1,000 asks in
   flight against a 10 s provider hold under 50 threads, with the baseline's
   latency (p50 and all-answered within 10 % of it, or better), none failed.
2. Throughput. The same server kind with the extractive provider (offline, no
   delay) over the demo corpus: JSON asks from 1 and from 8 clients at once for
   `--throughput-s` seconds each; answers per second.

Results: bench/RESULTS_concurrency.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
from harness import Report, percentile
from sse_client import ask, session

from tests.fixtures.providers import Reply, StubOpenAIServer

PIECES = ["Zebras live in grassland ", "habitat [1] and savanna [2]."]
# ANSWERS_REQUEST_THREADS of each server: "0" is Django's own handler (the baseline), None the default.
VARIANTS: dict[str, str | None] = {"stock": "0", "project": None}
VARIANT_LABELS = {"stock": "Django's (a thread per request)", "project": "the project's (a shared pool)"}


async def sample(live: Any, gauge: harness.PgGauge, peaks: dict[str, int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        status = harness.proc_status(live.pid)
        peaks["threads"] = max(peaks["threads"], status["threads"])
        peaks["rss_kb"] = max(peaks["rss_kb"], status["rss_kb"])
        with contextlib.suppress(Exception):
            peaks["sessions"] = max(peaks["sessions"], await asyncio.to_thread(gauge.sessions))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.2)


async def in_flight(live: Any, asks: int) -> dict[str, Any]:
    gauge = harness.PgGauge(live.env["DATABASE_URL"])
    peaks = {"threads": 0, "rss_kb": 0, "sessions": 0}
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample(live, gauge, peaks, stop))
    cpu = harness.proc_cpu_seconds(live.pid)
    async with session(timeout=120) as client:

        async def one(i: int) -> tuple[float, int, str]:
            started = time.perf_counter()
            try:
                status, body = await ask(client, live.url, f"{harness.SEED_QUESTION} ({i})", stream=False)
            except Exception as exc:  # a failed ask is a row of the report, not the end of the run
                return time.perf_counter() - started, 0, f"{exc.__class__.__name__}: {exc}"
            detail = "" if status == 201 else str(body.get("detail", body))[:100]
            return time.perf_counter() - started, status, detail

        began = time.perf_counter()
        results = await asyncio.gather(*[one(i) for i in range(asks)])
        wall = time.perf_counter() - began
    stop.set()
    await sampler
    gauge.close()
    ok = [t for t, status, _ in results if status == 201]
    failures: dict[str, int] = {}
    for _, status, detail in results:
        if status != 201:
            key = f"{status} {detail}".strip()
            failures[key] = failures.get(key, 0) + 1
    return {
        "wall": wall,
        "ok": len(ok),
        "p50": percentile(ok, 0.5),
        "p95": percentile(ok, 0.95),
        "max": max(ok, default=float("nan")),
        "failures": failures,
        "peaks": peaks,
        "cpu_s": harness.proc_cpu_seconds(live.pid) - cpu,
    }


async def throughput(live: Any, clients: int, seconds: float) -> dict[str, Any]:
    async with session(timeout=60) as client:
        done = 0
        failed = 0
        latencies: list[float] = []
        deadline = time.perf_counter() + seconds

        async def worker(k: int) -> None:
            nonlocal done, failed
            i = k
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                status, _ = await ask(client, live.url, harness.demo_question(i), stream=False)
                latencies.append(time.perf_counter() - started)
                if status == 201:
                    done += 1
                else:
                    failed += 1
                i += clients

        began = time.perf_counter()
        await asyncio.gather(*[worker(k) for k in range(clients)])
        wall = time.perf_counter() - began
    return {"per_s": done / wall, "done": done, "failed": failed, "p50": percentile(latencies, 0.5)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument("--asks", type=int, default=1000)
    parser.add_argument("--provider-s", type=float, default=10.0)
    parser.add_argument("--throughput-s", type=float, default=4.0)
    parser.add_argument("--clients", default="1,8")
    args = parser.parse_args()
    dbs = [d for d in args.db.split(",") if d]
    started_line = harness.machine()
    flight_rows, rate_rows = [], []
    with StubOpenAIServer() as stub:
        stub.set_default(Reply(pieces=PIECES, start_delay_s=args.provider_s))
        for db in dbs:
            for variant, threads in VARIANTS.items():
                env = {"ANSWERS_REQUEST_THREADS": threads} if threads else {}
                with harness.server(db, openai_base_url=stub.base_url, extra_env=env) as live:
                    asyncio.run(in_flight(live, 5))  # warm up: imports, first connections
                    m = asyncio.run(in_flight(live, args.asks))
                    m["server_errors"] = harness.log_errors(live)
                print(variant, json.dumps(m), file=sys.stderr, flush=True)
                flight_rows.append((db, variant, m))
        for db in dbs:
            extractive = {"ANSWERS_PROVIDER": "extractive", "ANSWERS_EXTRACTIVE_DELAY_MS": "0"}
            with harness.server(db, openai_base_url=stub.base_url, extra_env=extractive) as live:
                harness.run_django(live, "from django.core.management import call_command\n"
                                         "call_command('ingest', '--demo', verbosity=0)")  # fmt: skip
                asyncio.run(throughput(live, 1, 1.0))  # warm up
                for clients in (int(c) for c in args.clients.split(",")):
                    r = asyncio.run(throughput(live, clients, args.throughput_s))
                    print(db, clients, json.dumps(r), file=sys.stderr, flush=True)
                    rate_rows.append((db, clients, r))

    report = Report("concurrency")
    report("## Many answers in flight, and JSON answers per second")
    report()
    report(
        f"`bench/bench_concurrency.py --asks {args.asks} --provider-s {args.provider_s:g}`: {started_line}. "
        "One daphne process (DEBUG off), answers on the JSON path (`stream: false`), all sent at once. "
        "Baseline, in the same run: Django's own ASGI handler (a thread per request, kept while it waits; "
        "`ANSWERS_REQUEST_THREADS=0`); the provider's own time for scale. "
        f"Target: {args.asks} asks in flight hold under 50 threads, with the baseline's latency "
        "(p50 and all-answered within 10 % of it, or better), none failed."
    )
    report()
    base = {db: m for db, variant, m in flight_rows if variant == "stock"}
    report.table(
        ["database", "handler", "asks at once", "all answered in (s)", "vs baseline", "vs provider", "done",
         "latency p50 (s)", "vs baseline", "p95 (s)", "max (s)", "server CPU (s)", "peak threads",
         "peak PG sessions", "failures"],
        [[harness.db_label(db), VARIANT_LABELS[variant], args.asks, f"{m['wall']:.2f}",
          f"{m['wall'] / base[db]['wall']:.2f}x" if db in base else "-",
          f"{m['wall'] / args.provider_s:.2f}x", f"{m['ok']}/{args.asks}", f"{m['p50']:.2f}",
          f"{m['p50'] / base[db]['p50']:.2f}x" if db in base else "-", f"{m['p95']:.2f}", f"{m['max']:.2f}",
          f"{m['cpu_s']:.1f}", m["peaks"]["threads"], m["peaks"]["sessions"] if db == "postgres" else "-",
          "; ".join(f"{k}: {v}" for k, v in m["failures"].items()) or "none"]
         for db, variant, m in flight_rows],
    )  # fmt: skip
    report()
    report(
        "Peak threads are the server process's, sampled every 0.2 s from the first ask to the last answer "
        "(the arrival burst included). The time past the provider's is the server's CPU per ask "
        "(retrieval and storing, the pipeline's start step, queued a few at a time): "
        + ", ".join(f"{harness.db_label(db)} {VARIANT_LABELS[variant]} {m['cpu_s'] / args.asks * 1000:.0f} ms"
                    for db, variant, m in flight_rows)
        + ", on a machine shared with other work (load average at start above)."
    )  # fmt: skip
    for db, variant, m in flight_rows:
        if m["server_errors"]:
            errors = "; ".join(f"`{k}` x{v}" for k, v in m["server_errors"].items())
            report()
            report(f"{harness.db_label(db)} ({VARIANT_LABELS[variant]}): the server's log: {errors}")
    report()
    report(
        f"Throughput: the extractive provider (no delay) over the demo corpus, JSON asks for "
        f"{args.throughput_s:g} s from each number of clients (each sends its next ask when answered)."
    )
    report()
    report.table(
        ["database", "clients", "answers/s", "answers", "failed", "latency p50 (ms)"],
        [[harness.db_label(db), c, f"{r['per_s']:.1f}", r["done"], r["failed"], f"{r['p50'] * 1000:.0f}"]
         for db, c, r in rate_rows],
    )  # fmt: skip
    report.write()
    harness.save_figures(
        "concurrency",
        {
            "asks": args.asks,
            "provider_s": args.provider_s,
            "in_flight": {db: m for db, variant, m in flight_rows if variant == "project"},
            "baseline": {db: m for db, variant, m in flight_rows if variant == "stock"},
            "throughput": [{"db": db, "clients": c, **r} for db, c, r in rate_rows],
        },
    )


if __name__ == "__main__":
    main()
