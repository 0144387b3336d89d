"""Stored events per second: the event store's raw append rate, and what answers streaming at once store.

    .venv/bin/python bench/bench_events.py [--db sqlite,postgres] [--answers 1,4,16]

1. Raw append rate. In a process of its own on a fresh database, `append_event`
   is called back to back from 1, 4 and 16 threads (one channel each) for
   `--seconds`, with django-eventstream's DjangoModelStorage as shipped (the
   baseline) and with the storage class the project configures (if different).
   Reported: events/s in total and per channel, and SQL statements per append.
2. End to end. A daphne server (bench/harness.py); the stub provider emits
   `PIECES` small pieces `PIECE_DELAY_S` apart (a fast model). 1, 4 and 16
   answers stream at once, each read by one client stream. Reported per answer:
   events stored (counted through the server's own storage class afterwards),
   stored events per second of the answer's life (created -> finished, as the
   API reports), and the checks that no event was lost: the concatenated deltas
   equal the stored raw text (the trail), the client saw ids 1..N in order, and
   what it saw equals what was stored.
   Target: no event lost, an answer stores <= 10 events/s.

Results: bench/RESULTS_events.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
from harness import Report, median
from sse_client import absolute, ask, read_stream, session

from tests.fixtures.providers import Reply, StubOpenAIServer

STOCK_STORAGE = "django_eventstream.storage.DjangoModelStorage"
PIECES = [f"tok{i} " if i % 25 else f"tok{i} [{1 + i % 3}] " for i in range(400)]
PIECE_DELAY_S = 0.005

_APPEND = r"""
import json, os, threading, time
from django.conf import settings
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils.module_loading import import_string

def measure(path, threads, seconds):
    storage = import_string(path)()
    counts = [0] * threads
    errors = []
    start = threading.Barrier(threads + 1)
    def run(k):
        channel = f"bench-{path.rsplit('.', 1)[1]}-{threads}-{k}-{time.monotonic_ns()}"
        payload = {"text": "a few words of an answer [1] "}
        start.wait()
        deadline = time.perf_counter() + seconds
        try:
            while time.perf_counter() < deadline:
                storage.append_event(channel, "delta", payload)
                counts[k] += 1
        except Exception as exc:
            errors.append(f"{exc.__class__.__name__}: {exc}")
        finally:
            connections.close_all()
    workers = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    start.wait()
    t = time.perf_counter()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t
    return {"events": sum(counts), "seconds": elapsed, "errors": errors[:3]}

def statements(path):
    storage = import_string(path)()
    channel = f"bench-statements-{time.monotonic_ns()}"
    storage.append_event(channel, "delta", {"text": "first"})
    with CaptureQueriesContext(connection) as ctx:
        for _ in range(20):
            storage.append_event(channel, "delta", {"text": "x"})
    return len(ctx.captured_queries) / 20

from django.core.management import call_command
call_command("migrate", verbosity=0)
spec = json.loads(os.environ["BENCH_SPEC"])
out = {"configured": settings.EVENTSTREAM_STORAGE_CLASS, "rows": []}
configured = settings.EVENTSTREAM_STORAGE_CLASS
paths = [spec["stock"]] + ([configured] if configured != spec["stock"] else [])
for path in paths:
    per = statements(path)
    for threads in spec["threads"]:
        r = measure(path, threads, spec["seconds"])
        out["rows"].append({"storage": path, "threads": threads, "statements": per, **r})
print("BENCH_RESULT=" + json.dumps(out))
"""

_COUNT = r"""
import json, os
from django_eventstream.utils import get_storage
storage = get_storage()
out = {}
for channel in json.loads(os.environ["BENCH_CHANNELS"]):
    events = storage.get_events(channel, 0, limit=100000)
    out[channel] = {"stored": len(events), "current": storage.get_current_id(channel),
                    "types": [e.type for e in events]}
print("BENCH_RESULT=" + json.dumps(out))
"""


def raw_append(db: str, threads: list[int], seconds: float) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSWERS_", "REDIS"))}
    env.update({"DJANGO_SETTINGS_MODULE": "project.settings", "SECRET_KEY": "bench", "DEBUG": "true"})
    env["BENCH_SPEC"] = json.dumps({"stock": STOCK_STORAGE, "threads": threads, "seconds": seconds})
    with tempfile.TemporaryDirectory() as tmp:
        if db == "sqlite":
            env["DATABASE_URL"] = f"sqlite:///{tmp}/events.sqlite3"
        else:
            import psycopg

            with psycopg.connect(harness.PG_ADMIN_URL, autocommit=True) as conn:
                conn.execute("DROP DATABASE IF EXISTS bench_events WITH (FORCE)")
                conn.execute("CREATE DATABASE bench_events")
            env["DATABASE_URL"] = urlunsplit(urlsplit(harness.PG_ADMIN_URL)._replace(path="/bench_events"))
        result = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", _APPEND],
            cwd=harness.ROOT, env=env, capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-4000:])
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("BENCH_RESULT="))
    data: dict[str, Any] = json.loads(line.removeprefix("BENCH_RESULT="))
    return data


async def stream_answers(live: Any, answers: int) -> dict[str, Any]:
    async with session() as client:

        async def one(i: int) -> dict[str, Any]:
            status, body = await ask(client, live.url, f"{harness.SEED_QUESTION} ({i})")
            if status != 202:
                return {"error": f"POST {status}"}
            result = await read_stream(client, absolute(live.url, body["events_url"]), limit_s=120)
            async with client.get(
                f"{live.url}/api/answers/{body['id']}/trail/", headers=live.auth("reviewer")
            ) as r:
                trail = await r.json(content_type=None)
            async with client.get(f"{live.url}/api/answers/{body['id']}/") as r:
                answer = await r.json(content_type=None)
            return {"id": body["id"], "result": result, "trail": trail, "answer": answer}

        began = time.perf_counter()
        runs = await asyncio.gather(*[one(i) for i in range(answers)])
        wall = time.perf_counter() - began
    return {"runs": runs, "wall": wall}


def _seconds(iso: str | None) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() if iso else float("nan")


def end_to_end(live: Any, answers: int) -> dict[str, Any]:
    measured = asyncio.run(stream_answers(live, answers))
    runs = [r for r in measured["runs"] if "result" in r]
    channels = [f"answer-{r['id']}" for r in runs]
    out = harness.run_django(
        live, f"import os; os.environ['BENCH_CHANNELS'] = {json.dumps(json.dumps(channels))}\n" + _COUNT
    )
    stored = json.loads(
        next(ln for ln in out.splitlines() if ln.startswith("BENCH_RESULT=")).split("=", 1)[1]
    )
    per_answer_rates, delta_rates, stored_counts, lost, problems = [], [], [], 0, []
    for run, channel in zip(runs, channels, strict=True):
        result = run["result"]
        s = stored[channel]
        seen = [e for e in result.events if e.number is not None]
        # The answer's own life on the server (asked -> finished), not the client's view of it.
        duration = _seconds(run["answer"].get("finished_at")) - _seconds(run["answer"].get("created_at"))
        stored_counts.append(s["stored"])
        per_answer_rates.append(s["stored"] / duration if duration > 0 else float("nan"))
        delta_rates.append(s["types"].count("delta") / duration if duration > 0 else float("nan"))
        raw = run["trail"].get("raw_text")
        ok = (
            result.final is not None
            and result.final.type == "done"
            and result.delta_text == raw == "".join(PIECES)
            and result.out_of_order == 0
            and [e.number for e in seen] == list(range(1, len(seen) + 1))
            and len(seen) == s["stored"]
        )
        if not ok:
            lost += 1
            problems.append(
                f"{channel}: final={result.final.type if result.final else None} error={result.error!r} "
                f"deltas==raw: {result.delta_text == raw}, raw complete: {raw == ''.join(PIECES)}, "
                f"seen {len(seen)} / stored {s['stored']}, out of order {result.out_of_order}"
            )
    return {
        "answers": answers,
        "failed_posts": answers - len(runs),
        "wall": measured["wall"],
        "stored_median": median(stored_counts),
        "stored_total": sum(stored_counts),
        "rate_median": median(per_answer_rates),
        "rate_max": max(per_answer_rates, default=float("nan")),
        "delta_rate_median": median(delta_rates),
        "deltas_median": median([len(r["result"].of("delta")) for r in runs]),
        "lost": lost,
        "duplicates": sum(r["result"].duplicates for r in runs),
        "problems": problems[:3],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument("--answers", default="1,4,16")
    parser.add_argument("--seconds", type=float, default=1.0, help="Duration of each raw append run.")
    parser.add_argument("--variants", default="project,stock")
    args = parser.parse_args()
    dbs = [d for d in args.db.split(",") if d]
    counts = [int(a) for a in args.answers.split(",")]
    started_line = harness.machine()
    raw = {db: raw_append(db, counts, args.seconds) for db in dbs}
    e2e: list[dict[str, Any]] = []
    with StubOpenAIServer() as stub:
        stub.set_default(Reply(pieces=PIECES, delay_s=PIECE_DELAY_S))
        for db in dbs:
            for variant in filter(None, args.variants.split(",")):
                with harness.server(db, openai_base_url=stub.base_url, stock=variant == "stock") as live:
                    for n in counts:
                        row = {"db": db, "variant": variant, **end_to_end(live, n)}
                        print(json.dumps(row), file=sys.stderr, flush=True)
                        e2e.append(row)

    report = Report("events")
    report("## Stored events per second")
    report()
    report(
        f"`bench/bench_events.py --answers {args.answers} --seconds {args.seconds:g}`: {started_line}. "
        "Baseline: django-eventstream's `DjangoModelStorage` as shipped."
    )
    report()
    report("### Raw append rate (one process, threads appending back to back, one channel each)")
    report()
    rows = []
    for db, data in raw.items():
        for r in data["rows"]:
            name = "DjangoModelStorage (stock)" if r["storage"] == STOCK_STORAGE else f"`{r['storage']}`"
            rate = r["events"] / r["seconds"]
            rows.append([harness.db_label(db), name, r["threads"], f"{r['statements']:.1f}", f"{rate:,.0f}",
                         f"{rate / r['threads']:,.0f}", "; ".join(r["errors"]) or "-"])  # fmt: skip
    report.table(["database", "storage", "channels (threads)", "SQL per append", "events/s total",
                  "events/s per channel", "errors"], rows)  # fmt: skip
    report()
    report(
        f"### End to end: answers streaming at once (stub: {len(PIECES)} pieces, {PIECE_DELAY_S * 1000:g} ms "
        f"apart = {1 / PIECE_DELAY_S:.0f} pieces/s per answer)"
    )
    report()

    def lost(r: dict[str, Any]) -> str:
        return f"{r['lost']} of {r['answers']}" + (
            f" (+{r['failed_posts']} POST failed)" if r["failed_posts"] else ""
        )

    report.table(
        ["database", "server", "answers at once", "wall (s)", "stored events per answer (median)",
         "delta events per answer", "stored events/s per answer (median)", "max", "delta events/s (median)",
         "answers with an event lost", "duplicates ignored"],
        [[harness.db_label(r["db"]), r["variant"], r["answers"], f"{r['wall']:.2f}",
          f"{r['stored_median']:.0f}", f"{r['deltas_median']:.0f}", f"{r['rate_median']:.1f}",
          f"{r['rate_max']:.1f}", f"{r['delta_rate_median']:.1f}", lost(r), r["duplicates"]] for r in e2e],
    )  # fmt: skip
    problems = [
        f"- {harness.db_label(r['db'])} {r['variant']} x{r['answers']}: {p}"
        for r in e2e
        for p in r["problems"]
    ]
    if problems:
        report()
        report("Answers that lost an event or did not finish:")
        report()
        for p in problems:
            report(p)
    report.write()
    harness.save_figures("events", {"raw": raw, "e2e": e2e})


if __name__ == "__main__":
    main()
