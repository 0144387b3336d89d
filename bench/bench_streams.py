"""How many open SSE streams one server process holds, and how fast a broadcast event reaches them all.

    .venv/bin/python bench/bench_streams.py                       # quick: 300 streams, project and stock
    .venv/bin/python bench/bench_streams.py --streams 2000 --variants project
    .venv/bin/python bench/bench_streams.py --streams 300 --variants stock

One daphne process on PostgreSQL (its `max_connections` as configured: 100 by
default), the `openai` provider pointed at the stub server in this process.
The client asks `--answers` questions (stream: true); each provider call is
held at the stub until every stream is open. Then it opens `--streams`
streams spread over those answers (replay from the channel's start, at most
`--open-concurrency` handshakes at a time) and waits until each has received
the `references` event. While they are held it reads the server's RSS and
thread count (/proc) and the database's sessions (pg_stat_activity). Then it
releases the provider: each answer streams its pieces, `done` is published,
and every stream's delivery latency is measured from the release (same
clock): the provider sends one piece, so each stream gets one `delta` (the
broadcast event: its delivery is the figure against the target) and then
`done`. Reported: streams opened, streams that got `done`, p50/p95/max
delivery of the broadcast and of `done`, memory per stream, threads, database
sessions, the server's and the client's CPU time for the broadcast
(`--profile`: where the server spent it, sampled with py-spy if installed).

Variants: `project` (the app as it is) and `stock` (django-eventstream as
shipped: DjangoModelStorage and the package's events view, bench/stock_settings.py).
Results: bench/RESULTS_streams.md (a run with other --variants/--streams adds
its rows to the ones already there for other settings).

    .venv/bin/python bench/bench_streams.py --ab c4cba90 --streams 2000 --rounds 3

A/B: the same measure (variant `project`) for the code of a git revision (exported
with `git archive` to a temporary directory, run with its own bench script) and for
this checkout, in turns (A B, B A, A B...: a drifting machine weighs on both
alike); each session's pairs go to a table of their own in the section
(RESULTS_streams_ab.json keeps every session).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
from harness import Report, percentile
from sse_client import StreamResult, absolute, ask, read_stream, session

from tests.fixtures.providers import Reply, StubOpenAIServer

# One piece: after the release each stream gets exactly two live events, one `delta` (the
# broadcast whose delivery is timed) and `done`.
PIECES = ["Zebras live in grassland habitat [1] and savanna [2]."]
ROWS_FILE = harness.BENCH / "RESULTS_streams.json"
AB_FILE = harness.BENCH / "RESULTS_streams_ab.json"
# Under this many server threads with 2,000 streams open (no thread per idle stream:
# docs/howto/deploy.md, "Several processes").
THREADS_TARGET = 50
RELEASE_WAIT_S = 20.0


async def hold_and_release(
    live: Any,
    stub: StubOpenAIServer,
    *,
    streams: int,
    answers: int,
    open_concurrency: int,
    open_limit_s: float,
    profile: bool = False,
) -> dict[str, Any]:
    gate = threading.Event()
    last_piece: list[float] = []
    stub.set_default(
        Reply(
            pieces=PIECES,
            gate=gate,
            on_piece=lambda i, p, t: last_piece.append(t) if i == len(PIECES) - 1 else None,
        )
    )
    gauge = harness.PgGauge(live.env["DATABASE_URL"])
    idle = harness.proc_status(live.pid)
    idle_sessions = gauge.sessions()
    out_other = gauge.all_sessions() - idle_sessions
    out: dict[str, Any] = {"idle": idle, "idle_sessions": idle_sessions, "other_sessions": out_other}
    async with session(timeout=300) as client:
        urls = []
        for i in range(answers):
            status, body = await ask(client, live.url, f"{harness.SEED_QUESTION} ({i})")
            if status != 202:
                raise RuntimeError(f"POST /api/answers/ answered {status}: {body}")
            urls.append(absolute(live.url, body["events_url"]))
        await asyncio.sleep(0.5)  # the provider calls reach the stub and wait there
        in_flight = harness.proc_status(live.pid)
        in_flight_sessions = gauge.sessions()

        handshakes = asyncio.Semaphore(open_concurrency)
        opened = asyncio.Event()
        open_count = 0
        settled = 0  # streams that are open (got `references`) or have failed

        def settle() -> None:
            nonlocal settled
            settled += 1
            if settled == streams:
                opened.set()

        async def one(index: int) -> StreamResult:
            nonlocal open_count
            await handshakes.acquire()
            released = False

            def on_event(event: Any) -> None:
                nonlocal released, open_count
                if event.type == "references" and not released:
                    released = True
                    open_count += 1
                    handshakes.release()
                    settle()

            result = await read_stream(
                client, urls[index % answers], on_event=on_event, limit_s=open_limit_s + 120
            )
            if not released:
                handshakes.release()
                settle()
            return result

        began = time.perf_counter()
        tasks = [asyncio.create_task(one(i)) for i in range(streams)]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(opened.wait(), open_limit_s)
        out["open_s"] = time.perf_counter() - began
        out["opened"] = open_count
        await asyncio.sleep(2.0)  # settle: threads and memory of the open streams
        out["held"] = harness.proc_status(live.pid)
        out["held_sessions"] = gauge.sessions()
        out["in_flight"] = in_flight
        out["in_flight_sessions"] = in_flight_sessions
        cpu_before = harness.proc_cpu_seconds(live.pid)
        client_cpu_before = time.process_time()
        profiler = _start_profiler(live.pid) if profile else None

        released_at = time.perf_counter()
        out["released_wall"] = time.time()
        gate.set()
        done, pending = await asyncio.wait(tasks, timeout=RELEASE_WAIT_S)
        out["client_cpu_s"] = time.process_time() - client_cpu_before
        out["profile"] = _stop_profiler(profiler) if profiler else []
        for task in pending:
            task.cancel()
        results = [t.result() for t in done]
        out["release_cpu_s"] = harness.proc_cpu_seconds(live.pid) - cpu_before
        out["after"] = harness.proc_status(live.pid)
    gauge.close()
    delivered = [r.final.t - released_at for r in results if r.final is not None and r.final.type == "done"]
    first_live = [
        min(e.t for e in r.events if e.t >= released_at) - released_at
        for r in results
        if any(e.t >= released_at for e in r.events)
    ]
    out["first_live"] = first_live
    # The `delta` itself (the first live event is a `cite` since the live display: docs/citations.md).
    out["delta_live"] = [
        d.t - released_at for r in results if (d := r.first("delta")) is not None and d.t >= released_at
    ]
    out["delivered"] = delivered
    out["got_done"] = len(delivered)
    out["streams"] = streams
    out["provider_last_piece"] = (max(last_piece) - released_at) if last_piece else float("nan")
    errors: dict[str, int] = {}
    for r in results:
        if r.final is None or r.final.type != "done":
            if r.status and r.status != 200:
                key = f"HTTP {r.status}"
            else:
                key = r.error or f"no `done` (last event: {r.events[-1].type if r.events else None})"
            errors[key[:120]] = errors.get(key[:120], 0) + 1
    out["errors"] = errors
    out["errors"][f"no `done` {RELEASE_WAIT_S:g} s after the release"] = len(pending)
    out["duplicates"] = sum(r.duplicates for r in results)
    out["out_of_order"] = sum(r.out_of_order for r in results)
    texts = {r.final.data for r in results if r.final is not None and r.final.type == "done"}
    out["distinct_done_payloads"] = len(texts)
    return out


def _start_profiler(pid: int) -> tuple[subprocess.Popen[bytes], Path] | None:
    """py-spy (if installed) sampling the server while the broadcast is delivered."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        return None
    out = Path(tempfile.mkdtemp()) / "profile.txt"
    process = subprocess.Popen(
        [spy, "record", "--pid", str(pid), "--format", "raw", "--output", str(out), "--rate", "200", "--gil",
         "--duration", "15", "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(0.5)
    return process, out


# Frames around everything (process start, the event loop, worker threads): not informative.
_OUTER = (
    "_run_module_as_main", "_run_code", "<module>", "CommandLineInterface", "Server.run",
    "AsyncioSelectorReactor.run", "BaseEventLoop.run_forever", "BaseEventLoop._run_once", "Handle._run",
    "Thread._bootstrap", "Thread.run", "_worker", "_WorkItem.run",
)  # fmt: skip


def _stop_profiler(profiler: tuple[subprocess.Popen[bytes], Path]) -> list[tuple[str, float]]:
    """Where the server spent the broadcast: inclusive share of samples per function, the outer
    frames every sample shares (the event loop, the thread bootstrap) left out; top 15."""
    process, out = profiler
    process.send_signal(signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=20)
    inclusive: dict[str, int] = {}
    total = 0
    with contextlib.suppress(OSError):
        for line in out.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            total += int(count)
            seen = set()
            for frame in stack.split(";"):
                name, _, where = frame.partition(" (")
                key = f"{name} ({where.split(':')[0].rsplit('/', 2)[-2:][-1]})" if where else name
                if key not in seen:
                    seen.add(key)
                    inclusive[key] = inclusive.get(key, 0) + int(count)
    if not total:
        return []
    shares = sorted(((k, n / total) for k, n in inclusive.items()), key=lambda kv: -kv[1])
    return [(k, share) for k, share in shares if not k.startswith(_OUTER)][:15]


def row(variant: str, db: str, answers: int, m: dict[str, Any]) -> dict[str, Any]:
    delivered = m["delivered"]
    per_stream_kb = (m["held"]["rss_kb"] - m["in_flight"]["rss_kb"]) / max(1, m["opened"])
    return {
        "variant": variant,
        "db": db,
        "answers": answers,
        "streams": m["streams"],
        "opened": m["opened"],
        "open_s": round(m["open_s"], 1),
        "got_done": m["got_done"],
        "p50_ms": round(percentile(delivered, 0.5) * 1000, 1) if delivered else None,
        "p95_ms": round(percentile(delivered, 0.95) * 1000, 1) if delivered else None,
        "max_ms": round(max(delivered) * 1000, 1) if delivered else None,
        "provider_ms": round(m["provider_last_piece"] * 1000, 1),
        "first_live_p50_ms": round(percentile(m["first_live"], 0.5) * 1000, 1) if m["first_live"] else None,
        "first_live_p95_ms": round(percentile(m["first_live"], 0.95) * 1000, 1) if m["first_live"] else None,
        "first_live_max_ms": round(max(m["first_live"]) * 1000, 1) if m["first_live"] else None,
        "first_live_n": len(m["first_live"]),
        "delta_p95_ms": round(percentile(m["delta_live"], 0.95) * 1000, 1) if m.get("delta_live") else None,
        "client_cpu_s": round(m["client_cpu_s"], 2),
        "profile": m["profile"],
        "rss_idle_mb": round(m["idle"]["rss_kb"] / 1024, 1),
        "rss_held_mb": round(m["held"]["rss_kb"] / 1024, 1),
        "kb_per_stream": round(per_stream_kb, 1),
        "threads_idle": m["idle"]["threads"],
        "threads_held": m["held"]["threads"],
        "sessions_idle": m["idle_sessions"],
        "sessions_held": m["held_sessions"],
        "other_sessions": m["other_sessions"],
        "release_cpu_s": round(m["release_cpu_s"], 2),
        "released_wall": round(m["released_wall"], 3),
        "errors": {k: v for k, v in m["errors"].items() if v},
        "server_errors": m["server_errors"],
        "duplicates": m["duplicates"],
        "out_of_order": m["out_of_order"],
        "when": harness.machine(),
    }


def write(rows: list[dict[str, Any]]) -> None:
    report = Report("streams")
    report("## Concurrent SSE streams held by one server process")
    report()
    report(
        "`bench/bench_streams.py` (quick: 300 streams; `--streams 2000` in `make bench-full`). One daphne "
        "process (DEBUG off) on PostgreSQL 15, `max_connections` "
        f"{harness.pg_setting('max_connections')}; N streams opened to answers whose provider call is held "
        "at the stub, then released; the provider sends one piece, published as one `delta` to every "
        "stream (the broadcast), then `done` (after finalize and persist). Delivery = arrival at the client, "
        "measured from the release on the same clock. Memory per stream = (RSS with "
        "the streams held - RSS before they opened) / streams opened. Target: 2,000 streams held, each "
        "receiving the broadcast, p95 delivery < 1 s. Baseline: django-eventstream as shipped (`stock`)."
    )
    report()
    report.table(
        ["variant", "streams asked", "opened", "open time (s)", "got `done`", "broadcast p50 (ms)",
         "p95 (ms)", "max (ms)", "`done` p50 / p95 (ms)", "provider's piece (ms)", "RSS idle -> held (MB)",
         "per stream (KiB)", "threads idle -> held", "PG sessions idle -> held",
         "CPU for the broadcast: server / client (s)"],
        [
            [r["variant"], f"{r['streams']:,} on {r['answers']} answer(s)", f"{r['opened']:,}", r["open_s"],
             f"{r['got_done']:,}", r.get("first_live_p50_ms"), r.get("first_live_p95_ms"),
             r.get("first_live_max_ms"),
             f"{r['p50_ms']} / {r['p95_ms']}", r["provider_ms"],
             f"{r['rss_idle_mb']} -> {r['rss_held_mb']}", r["kb_per_stream"],
             f"{r['threads_idle']} -> {r['threads_held']}", f"{r['sessions_idle']} -> {r['sessions_held']}",
             f"{r['release_cpu_s']} / {r.get('client_cpu_s')}"]
            for r in rows
        ],
    )  # fmt: skip
    report()
    for r in rows:
        problems = dict(r["errors"])
        if r["duplicates"] or r["out_of_order"]:
            problems["duplicate events (ignored by id)"] = r["duplicates"]
            problems["ids out of order"] = r["out_of_order"]
        detail = "; ".join(f"{k}: {v}" for k, v in problems.items()) or "none"
        logged = "; ".join(f"`{k}` x{v}" for k, v in r.get("server_errors", {}).items())
        report(
            f"- {r['variant']}, {r['streams']:,} streams ({r['when']}): streams without `done`: {detail}"
            + (f". Server log: {logged}" if logged else "")
        )
    for ab in _ab_sessions():
        _write_ab(report, ab)
    for r in rows:
        if r.get("profile"):
            report()
            report(
                f"Where the server spent the broadcast ({r['variant']}, {r['streams']:,} streams; py-spy on "
                "the thread holding the GIL, share of samples in each function and what it calls):"
            )
            report()
            report.table(["function", "share"], [[f"`{n}`", f"{share:.0%}"] for n, share in r["profile"]])
    report.write()


def _ab_sessions() -> list[dict[str, Any]]:
    """The A/B sessions measured so far, oldest first (a file of one session, from before: a list of it)."""
    if not AB_FILE.exists():
        return []
    sessions = json.loads(AB_FILE.read_text())
    return sessions if isinstance(sessions, list) else [sessions]


def _write_ab(report: Report, ab: dict[str, Any]) -> None:
    pairs = ab["pairs"]
    report()
    report(
        f"A/B, {ab['streams']:,} streams on 1 answer (`--ab {ab['base']}`, {ab['when']}): the code at "
        f"`{ab['base']}` (A) and this checkout (B), one server each in turn (order per round in the "
        "table), same machine, same session. Broadcast = the first live event every stream gets (the "
        "`cite` before the `delta`); `delta` p95: the `delta` itself (`-`: not measured in that session)."
    )
    report()
    report.table(
        ["round", "order", "A broadcast p50 / p95 (ms)", "B broadcast p50 / p95 (ms)", "B/A p95",
         "`delta` p95 A / B (ms)", "`done` p95 A / B (ms)", "server CPU A / B (s)",
         "A threads held", "B threads held", "A / B per stream (KiB)", "load average at A / B start"],
        [
            [i + 1, p["order"], f"{p['a']['first_live_p50_ms']} / {p['a']['first_live_p95_ms']}",
             f"{p['b']['first_live_p50_ms']} / {p['b']['first_live_p95_ms']}",
             f"{p['b']['first_live_p95_ms'] / p['a']['first_live_p95_ms']:.2f}",
             f"{p['a'].get('delta_p95_ms', '-')} / {p['b'].get('delta_p95_ms', '-')}",
             f"{p['a']['p95_ms']} / {p['b']['p95_ms']}",
             f"{p['a']['release_cpu_s']} / {p['b']['release_cpu_s']}",
             f"{p['a']['threads_held']:,}", f"{p['b']['threads_held']:,}",
             f"{p['a']['kb_per_stream']} / {p['b']['kb_per_stream']}", f"{p['a_load']} / {p['b_load']}"]
            for i, p in enumerate(pairs)
        ],
    )  # fmt: skip
    a95 = [p["a"]["first_live_p95_ms"] for p in pairs]
    b95 = [p["b"]["first_live_p95_ms"] for p in pairs]
    ratios = sorted(b / a for a, b in zip(a95, b95, strict=True))
    all_done = all(p[k]["got_done"] == p[k]["streams"] for p in pairs for k in "ab")
    report()
    report(
        f"Median broadcast p95: A {percentile(a95, 0.5):.1f} ms, B {percentile(b95, 0.5):.1f} ms; "
        f"B/A per pair {', '.join(f'{r:.2f}' for r in ratios)} (median {percentile(ratios, 0.5):.2f}). "
        f"Every stream of every run got `done`: {all_done}."
    )


def _load_average() -> float:
    return round(os.getloadavg()[0], 2)


def ab_runs(base: str, streams: int, rounds: int) -> dict[str, Any]:
    """Measure `project` at `streams` streams for revision `base` (A) and this checkout (B), in turns."""
    command = [sys.executable, "bench/bench_streams.py", "--streams", str(streams), "--variants", "project"]
    pairs = []
    with tempfile.TemporaryDirectory(prefix="bench-streams-ab-") as tmp:
        checkout_a = Path(tmp)
        archive = subprocess.run(
            ["git", "-C", str(harness.ROOT), "archive", "--format=tar", base],
            check=True, capture_output=True,
        ).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(checkout_a)], input=archive, check=True)
        # The same measure on both sides: this checkout's script, the revision's app.
        shutil.copy(Path(__file__), checkout_a / "bench" / "bench_streams.py")

        def measure(checkout: Path, extra: list[str]) -> tuple[dict[str, Any], float]:
            load = _load_average()
            done = subprocess.run(
                [*command, *extra], cwd=checkout, check=True, capture_output=True, text=True
            )
            lines = [ln for ln in done.stderr.splitlines() if ln.startswith("{")]
            measured: dict[str, Any] = json.loads(lines[-1])
            print(f"{checkout}: {lines[-1][:200]}", file=sys.stderr, flush=True)
            return measured, load

        for round_ in range(rounds):
            order = "AB" if round_ % 2 == 0 else "BA"
            got: dict[str, tuple[dict[str, Any], float]] = {}
            for side in order:
                got[side] = (
                    measure(checkout_a, []) if side == "A" else measure(harness.ROOT, ["--print-only"])
                )
            pairs.append(
                {
                    "order": order,
                    "a": got["A"][0],
                    "b": got["B"][0],
                    "a_load": got["A"][1],
                    "b_load": got["B"][1],
                }
            )
    return {"base": base, "streams": streams, "when": harness.machine(), "pairs": pairs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="300", help="Comma-separated stream counts.")
    parser.add_argument("--variants", default="project,stock", help="project, stock, project+redis")
    parser.add_argument("--answers", type=int, default=1, help="Answers the streams are spread over.")
    parser.add_argument("--db", default="postgres")
    parser.add_argument("--open-concurrency", type=int, default=100)
    parser.add_argument("--fresh", action="store_true", help="Forget rows of earlier runs.")
    parser.add_argument(
        "--profile", action="store_true", help="Sample the server with py-spy at the release."
    )
    parser.add_argument(
        "--ab", metavar="REVISION", help="A/B: this git revision's code against this checkout's."
    )
    parser.add_argument("--rounds", type=int, default=3, help="A/B pairs to measure.")
    parser.add_argument("--print-only", action="store_true", help="Print the rows; write no results file.")
    args = parser.parse_args()
    harness.raise_fd_limit()
    rows: list[dict[str, Any]] = []
    if ROWS_FILE.exists() and not args.fresh:
        rows = json.loads(ROWS_FILE.read_text())
    if args.ab:
        sessions = [*_ab_sessions(), ab_runs(args.ab, int(args.streams), args.rounds)]
        AB_FILE.write_text(json.dumps(sessions, indent=1) + "\n")
        write(rows)
        return
    with StubOpenAIServer() as stub:
        for variant in filter(None, args.variants.split(",")):
            for count in (int(s) for s in args.streams.split(",")):
                with harness.server(
                    args.db,
                    openai_base_url=stub.base_url,
                    stock=variant.startswith("stock"),
                    redis=variant.endswith("+redis"),
                    extra_env={"ANSWERS_PROVIDER_TIMEOUT": "600"},
                ) as live:
                    measured = asyncio.run(
                        hold_and_release(
                            live, stub, streams=count, answers=args.answers,
                            open_concurrency=args.open_concurrency, open_limit_s=max(60.0, count / 20),
                            profile=args.profile,
                        )
                    )  # fmt: skip
                    measured["server_errors"] = harness.log_errors(live)
                new = row(variant, args.db, args.answers, measured)
                print(json.dumps(new), file=sys.stderr, flush=True)
                rows = [
                    r
                    for r in rows
                    if (r["variant"], r["streams"], r["answers"]) != (variant, count, args.answers)
                ]
                rows.append(new)
    if args.print_only:
        return
    rows.sort(key=lambda r: (r["variant"], r["streams"]))
    ROWS_FILE.write_text(json.dumps(rows, indent=1) + "\n")
    write(rows)


if __name__ == "__main__":
    main()
