"""Event retention: the event table's size per 1,000 answers before and after `trim_events`.

    .venv/bin/python bench/bench_retention.py [--answers 1000] [--db sqlite,postgres] [--deltas 20]

In one process per database, on a fresh database with the demo corpus, `--answers` answers
go through the real SSE path (answers.pipeline.flow.ask with the SSE publisher: every event
stored as the app stores it), the extractive provider's text cut into `--deltas` stretches,
each its own `delta` event (what the publisher's 0.15 s coalescing stores for an answer
written over about 3 s), with its `references`, `cite`s and `done`. Then every answer and
`manage.py trim_events` runs with ANSWERS_EVENT_RETENTION=0 (every answer asked is due),
twice (the second run must find nothing).

Reported per 1,000 answers: rows of the event table and of the counter table, and their
bytes (table and indexes): SQLite's pages in use (dbstat; the file itself keeps its size
until VACUUM, and reuses the freed pages for new events), PostgreSQL's relation size right
after the trim, after a plain VACUUM (what autovacuum does: the space is reused, the files
keep their size) and after VACUUM FULL (the table as compact as it gets: what it holds at
steady state). Also the trim's duration and its longest batch (one batch holds its rows'
locks for at most that long; the table is never locked).

Results: bench/RESULTS_retention.md.
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
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
from harness import Report

PG_BENCH_DB = "bench_retention"
EVENT_TABLES = ("django_eventstream_event", "django_eventstream_eventcounter")


def setup_django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ["ANSWERS_PROVIDER"] = "extractive"
    os.environ["ANSWERS_EXTRACTIVE_DELAY_MS"] = "0"
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["DJANGO_SETTINGS_MODULE"] = "project.settings"
    sys.path.insert(0, str(harness.ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("ingest", "--demo", verbosity=0)


async def ask_all(answers: int, deltas: int) -> dict[str, float]:
    from answers.pipeline import flow, lifecycle
    from answers.providers.registry import get_provider
    from answers.sse.publish import DeltaCoalescer, SSEPublisher

    extractive = get_provider("extractive")

    class Stretches:
        """The extractive answer in `deltas` stretches: one `delta` event each (the publisher below)."""

        name, model, native_citations = extractive.name, extractive.model, extractive.native_citations

        async def stream(self, prompt: Any, generation: Any = None) -> AsyncIterator[str]:
            text = "".join([piece async for piece in extractive.stream(prompt, generation)])
            size = max(1, -(-len(text) // deltas))
            for start in range(0, len(text), size):
                yield text[start : start + size]

    class EveryStretch(SSEPublisher):
        background = False  # generate within ask(): the next answer starts when this one is stored

        def deltas(self, answer_id: Any, sources: Any) -> DeltaCoalescer:
            return DeltaCoalescer(answer_id, sources, interval=0)

    publisher, provider = EveryStretch(), Stretches()
    started = time.perf_counter()
    for i in range(answers):
        answer = await flow.ask(
            question=harness.demo_question(i),
            asker_id=None,
            publisher=publisher,
            provider=provider,
        )
        assert answer.status == "done", answer.error_message
    await lifecycle.wait_for_background()  # support records
    return {"ask_seconds": time.perf_counter() - started}


def sizes() -> dict[str, int]:
    """Rows and bytes (table + indexes) of the event and counter tables."""
    from django.db import connection

    out: dict[str, int] = {}
    with connection.cursor() as cursor:
        for table in EVENT_TABLES:
            cursor.execute(f"SELECT COUNT(*) FROM {table}")  # noqa: S608 (a fixed name)
            out[f"{table}.rows"] = cursor.fetchone()[0]
            if connection.vendor == "sqlite":
                cursor.execute(
                    "SELECT COALESCE(SUM(pgsize - unused), 0), COALESCE(SUM(pgsize), 0) FROM dbstat"
                    " WHERE name = %s"
                    " OR name IN (SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = %s)",
                    [table, table],
                )
                used, pages = cursor.fetchone()
                out[f"{table}.bytes"] = int(pages)
                out[f"{table}.used"] = int(used)
            else:
                cursor.execute("SELECT pg_total_relation_size(%s)", [table])
                out[f"{table}.bytes"] = int(cursor.fetchone()[0])
    return out


def trim_twice() -> dict[str, Any]:
    from io import StringIO

    from django.core.management import call_command
    from django.test import override_settings

    from answers.sse import retention

    batches: list[float] = []
    real_trim = retention.trim

    def timed_trim(cutoff: Any, **kwargs: Any) -> retention.Trimmed:
        last = [time.perf_counter()]
        report = kwargs.pop("progress", None)

        def progress(n: int) -> None:
            now = time.perf_counter()
            batches.append(now - last[0])
            last[0] = now
            if report is not None:
                report(n)

        return real_trim(cutoff, progress=progress, **kwargs)

    import answers.management.commands.trim_events as command

    command.trim = timed_trim  # type: ignore[assignment]  (times each batch; the command is unchanged)
    out: dict[str, Any] = {}
    for run in ("first", "second"):
        batches.clear()
        started = time.perf_counter()
        stdout = StringIO()
        # Retention 0: every answer asked above is due (dating rows back would rewrite them all first).
        with override_settings(ANSWERS_EVENT_RETENTION=0):
            call_command("trim_events", stdout=stdout)
        out[run] = {
            "seconds": time.perf_counter() - started,
            "batches": len(batches),
            "longest_batch": max(batches, default=0.0),
            "said": stdout.getvalue().strip().split(" finished before")[0],
        }
    return out


def measure(answers: int, deltas: int) -> dict[str, Any]:
    from django.db import connection

    result: dict[str, Any] = {"answers": answers, "deltas": deltas}
    result.update(asyncio.run(ask_all(answers, deltas)))
    postgresql = connection.vendor == "postgresql"
    if postgresql:
        vacuum()  # as autovacuum keeps them: the counters' old row versions (one per append) gone
    result["before"] = sizes()
    result["trim"] = trim_twice()
    result["after"] = sizes()
    if postgresql:
        vacuum()
        result["after_vacuum"] = sizes()
        vacuum("FULL")
        result["after_vacuum_full"] = sizes()
    return result


def vacuum(option: str = "") -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in EVENT_TABLES:
            cursor.execute(f"VACUUM {option} {table}")


def child(db: str, answers: int, deltas: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        if db == "sqlite":
            url = f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
        else:
            import psycopg

            with psycopg.connect(harness.PG_ADMIN_URL, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {PG_BENCH_DB} WITH (FORCE)")
                conn.execute(f"CREATE DATABASE {PG_BENCH_DB}")
            url = harness.PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{PG_BENCH_DB}"
        out = subprocess.run(
            [sys.executable, __file__, "--child", url, "--answers", str(answers), "--deltas", str(deltas)],
            check=True, stdout=subprocess.PIPE, text=True, cwd=harness.ROOT,
        ).stdout  # fmt: skip
    data: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=1000)
    parser.add_argument("--deltas", type=int, default=20)
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        setup_django(args.child)
        print(json.dumps(measure(args.answers, args.deltas)))
        return

    started_line = harness.machine()
    runs = {db: child(db, args.answers, args.deltas) for db in filter(None, args.db.split(","))}
    per = 1000 / args.answers

    def kb(n: float) -> str:
        return f"{n * per / 1024:,.0f}"

    report = Report("retention")
    report("## Event retention: the event table per 1,000 answers, before and after trim_events")
    report()
    report(
        f"`bench/bench_retention.py --answers {args.answers} --deltas {args.deltas}`: {started_line}. "
        f"Each answer: the SSE path's events as stored (`references`, {args.deltas} `delta`s, its `cite`s, "
        "`done`), then `manage.py trim_events` with ANSWERS_EVENT_RETENTION=0 (all of them due)."
    )
    report()
    rows = []
    for db, r in runs.items():
        stages = [("before trim", r["before"]), ("after trim", r["after"])]
        if "after_vacuum" in r:
            stages += [("after VACUUM", r["after_vacuum"]), ("after VACUUM FULL", r["after_vacuum_full"])]
        for label, s in stages:
            events, counters = (s[f"{t}.rows"] for t in EVENT_TABLES)
            used = s.get(f"{EVENT_TABLES[0]}.used")
            rows.append([
                harness.db_label(db), label, f"{events * per:,.0f}", f"{counters * per:,.0f}",
                kb(s[f"{EVENT_TABLES[0]}.bytes"]) + (f" ({kb(used)} used)" if used is not None else ""),
                kb(s[f"{EVENT_TABLES[1]}.bytes"]),
            ])  # fmt: skip
    report.table(
        ["database", "when", "event rows", "counter rows", "events: KiB (table + indexes)", "counters: KiB"],
        rows,
    )
    report()
    report.table(
        ["database", "answers asked in (s)", "trim_events (s)", "batches", "longest batch (ms)", "it said",
         "second run (s)", "it said"],
        [[harness.db_label(db), f"{r['ask_seconds']:.1f}", f"{r['trim']['first']['seconds']:.2f}",
          r["trim"]["first"]["batches"], f"{r['trim']['first']['longest_batch'] * 1000:.0f}",
          r["trim"]["first"]["said"], f"{r['trim']['second']['seconds']:.2f}", r["trim"]["second"]["said"]]
         for db, r in runs.items()],
    )  # fmt: skip
    report()
    report(
        'SQLite: KiB are the pages the tables and their indexes hold (dbstat), "used" what their rows '
        "fill; a trim frees pages for new events, the file shrinks only with VACUUM. PostgreSQL: "
        "`pg_total_relation_size`, measured after a plain VACUUM (as autovacuum keeps the tables); after a "
        "trim the dead rows hold their space until (auto)vacuum marks it reusable for new events; "
        "VACUUM FULL (an exclusive lock: not for a live table) shows the compact size. Each "
        "answer keeps one counter row (its channel's last event id: ids never repeat, and the replay "
        "gives `done` its id)."
    )
    report.write()
    harness.save_figures("retention", runs)


if __name__ == "__main__":
    main()
