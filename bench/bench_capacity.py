"""What one process serves at once: 300 SSE and 100 JSON asks together against an 8 s provider (issue 44).

    .venv/bin/python bench/bench_capacity.py [--db postgres] [--limits 0,10,20,40,80]
        [--sse 300] [--json 100] [--provider-s 8]

One daphne process (bench/harness.py: production settings), its `openai` provider the stub
server of the tests run as a process of its own (bench/stub_provider.py), each reply
`--provider-s` seconds long: a first piece after 1 s, then 70 pieces evenly over the rest (a
word each, a marker now and then). For each ANSWERS_MAX_GENERATING in `--limits` (0: no
limit, the baseline: what the process did before admission), a fresh server gets first one
ask alone (SSE; its POST -> `done` time is the run's own baseline), then `--sse` SSE asks (each
read by one event stream until `done` or `error`) and `--json` JSON asks, all sent at once,
with `/healthz` asked every 20 ms throughout (bench_hostile.HealthProbe).

Reported per limit: asks taken and refused (`503`, with `Retry-After`), answers done and
failed (by kind), POST -> `done` p50/p95/max of the taken ones (SSE: to the stream's `done`;
JSON: to the `201`), p95 against the provider's time, `/healthz` p50/p99/max, the server's CPU
seconds. Targets (issue 44): every answer taken is done, p95 within 2x the provider's time,
`/healthz` p99 under 250 ms; the refused count is reported. The largest limit meeting them is
the default's evidence (answers/conf.py, MAX_GENERATING_DEFAULT).

Results: bench/RESULTS_capacity.md (and .json).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
import harness
import httpx
from bench_hostile import HealthProbe
from harness import Report, percentile
from sse_client import absolute, ask, read_stream, session

from answers.conf import MAX_GENERATING_DEFAULT
from tests.fixtures.live_server import free_port
from tests.fixtures.waiting import wait_until

FIRST_PIECE_S = 1.0
PIECES = 70
TARGET_P95_X = 2.0
TARGET_HEALTHZ_P99_S = 0.25


@contextlib.contextmanager
def stub_process(provider_s: float) -> Iterator[str]:
    """bench/stub_provider.py in a process of its own, each reply `provider_s` seconds; its base URL."""
    port = free_port()
    piece_delay = (provider_s - FIRST_PIECE_S) / PIECES
    process = subprocess.Popen(
        [sys.executable, str(harness.BENCH / "stub_provider.py"), "--port", str(port),
         "--pieces", str(PIECES), "--piece-delay", f"{piece_delay:.4f}", "--start-delay", str(FIRST_PIECE_S)],
        cwd=harness.ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(url), within=30, what="the stub provider to listen")
        yield f"{url}/v1"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/v1/models", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


async def sse_ask(client: aiohttp.ClientSession, base_url: str, i: int) -> dict[str, Any]:
    """One SSE ask, its stream read to the end: outcome and seconds from the POST to `done`."""
    started = time.perf_counter()
    status, body = await ask(client, base_url, harness.demo_question(i), stream=True)
    posted = time.perf_counter()
    if status != 202:
        return {"path": "sse", "outcome": _refused_or(status, body), "s": None, "posted": posted}
    result = await read_stream(client, absolute(base_url, body["events_url"]), limit_s=600)
    final = result.final
    if final is None:
        return {"path": "sse", "outcome": f"no end: {result.error[:60]}", "s": None, "posted": posted}
    outcome = final.type if final.type == "done" else f"error: {final.json().get('detail', '')[:60]}"
    return {"path": "sse", "outcome": outcome, "s": final.t - started, "posted": posted}


async def json_ask(client: aiohttp.ClientSession, base_url: str, i: int) -> dict[str, Any]:
    """One JSON ask: outcome and seconds to its response."""
    started = time.perf_counter()
    try:
        status, body = await ask(client, base_url, harness.demo_question(i), stream=False)
    except (aiohttp.ClientError, TimeoutError) as exc:
        return {"path": "json", "outcome": type(exc).__name__, "s": None}
    outcome = "done" if status == 201 else _refused_or(status, body)
    answered = time.perf_counter()
    # A taken JSON ask's response is its answer: only a refused one's marks the arrivals answered.
    posted = answered if outcome == "refused" else None
    return {"path": "json", "outcome": outcome, "s": answered - started, "posted": posted}


def _refused_or(status: int, body: dict[str, Any]) -> str:
    """`refused`: a question not taken (503 without an answer id); else the failure, in short."""
    if status == 503 and "id" not in body:
        return "refused"
    return f"{status}: {str(body.get('detail'))[:60]}"


def interleaved(client: aiohttp.ClientSession, base_url: str, sse: int, asks_json: int) -> list[Any]:
    """The asks in the order they are sent: the two paths mixed evenly (3 SSE to 1 JSON for 300 + 100),
    so that a limit reached by the first arrivals takes some of each."""
    asks = [(i / sse, sse_ask(client, base_url, i)) for i in range(sse)]
    asks += [(i / asks_json, json_ask(client, base_url, sse + i)) for i in range(asks_json)]
    return [coroutine for _, coroutine in sorted(asks, key=lambda pair: pair[0])]


async def burst(live: Any, sse: int, asks_json: int) -> dict[str, Any]:
    """One ask alone (the baseline), then `sse` + `asks_json` asks at once with /healthz timed."""
    async with session(timeout=600) as client:
        alone = await sse_ask(client, live.url, 0)
        cpu = harness.proc_cpu_seconds(live.pid)
        began = time.perf_counter()
        async with HealthProbe(client, live.url) as probe:
            results = await asyncio.gather(*interleaved(client, live.url, sse, asks_json))
        wall = time.perf_counter() - began
    return {
        "alone_s": alone.get("s"),
        "wall_s": wall,
        "cpu_s": harness.proc_cpu_seconds(live.pid) - cpu,
        "healthz": probe.times,
        # /healthz once every POST has its first response (the arrival burst is over) until the end.
        "healthz_after": [
            t
            for t, at in zip(probe.times, probe.asked_at, strict=True)
            if at >= max((r["posted"] for r in results if r.get("posted")), default=began)
        ],
        "results": results,
        "peak": harness.proc_status(live.pid),
    }


def summarize(run: dict[str, Any], provider_s: float) -> dict[str, Any]:
    results = run["results"]
    taken = [r for r in results if r["outcome"] != "refused"]
    done = [r["s"] for r in taken if r["outcome"] == "done"]
    failures: dict[str, int] = {}
    for r in taken:
        if r["outcome"] != "done":
            key = f"{r['path']} {r['outcome']}"
            failures[key] = failures.get(key, 0) + 1
    health = run["healthz"]
    p95 = percentile(done, 0.95)
    return {
        "taken": len(taken),
        "taken_sse": sum(1 for r in taken if r["path"] == "sse"),
        "taken_json": sum(1 for r in taken if r["path"] == "json"),
        "refused": len(results) - len(taken),
        "done": len(done),
        "failures": failures,
        "p50": percentile(done, 0.5),
        "p95": p95,
        "max": max(done, default=float("nan")),
        "p95_x": p95 / provider_s,
        "alone_s": run["alone_s"],
        "healthz_p50": percentile(health, 0.5),
        "healthz_p99": percentile(health, 0.99),
        "healthz_max": max(health, default=float("nan")),
        "healthz_n": len(health),
        "healthz_after_p99": percentile(run["healthz_after"], 0.99),
        "healthz_after_n": len(run["healthz_after"]),
        "wall_s": run["wall_s"],
        "cpu_s": run["cpu_s"],
    }


def met(m: dict[str, Any]) -> bool:
    return (
        m["done"] == m["taken"] > 0 and m["p95_x"] <= TARGET_P95_X and m["healthz_p99"] < TARGET_HEALTHZ_P99_S
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="postgres")
    parser.add_argument("--limits", default="0,10,20,40,80")
    parser.add_argument("--sse", type=int, default=300)
    parser.add_argument("--json", type=int, default=100)
    parser.add_argument("--provider-s", type=float, default=8.0)
    args = parser.parse_args()
    started_line = harness.machine()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=harness.ROOT, capture_output=True,
                            text=True, check=False).stdout.strip()  # fmt: skip
    rows: list[tuple[str, int, dict[str, Any]]] = []
    with stub_process(args.provider_s) as provider_url:
        for db in filter(None, args.db.split(",")):
            for limit in (int(x) for x in args.limits.split(",")):
                env = {"ANSWERS_MAX_GENERATING": str(limit), "ANSWERS_PROVIDER_TIMEOUT": "60"}
                with harness.server(db, openai_base_url=provider_url, extra_env=env) as live:
                    harness.run_django(live, "from django.core.management import call_command\n"
                                             "call_command('ingest', '--demo', verbosity=0)")  # fmt: skip
                    m = summarize(asyncio.run(burst(live, args.sse, args.json)), args.provider_s)
                    m["server_errors"] = harness.log_errors(live)
                print(db, limit, json.dumps(m), file=sys.stderr, flush=True)
                rows.append((db, limit, m))
    write(rows, args, started_line, commit)


def write(rows: list[tuple[str, int, dict[str, Any]]], args: Any, started_line: str, commit: str) -> None:
    report = Report("capacity")
    report("## Capacity: 300 SSE and 100 JSON asks at once on one process")
    report()
    report(
        f"`bench/bench_capacity.py --db {args.db} --limits {args.limits} --sse {args.sse} --json {args.json} "
        f"--provider-s {args.provider_s:g}` on commit `{commit}`: {started_line}. "
        "One daphne process (DEBUG off); "
        f"the provider a stub in a process of its own, each reply {args.provider_s:g} s (first piece after "
        f"{FIRST_PIECE_S:g} s, then {PIECES} pieces); {args.sse} SSE asks (each read by one stream) and "
        f"{args.json} JSON asks sent at once, `/healthz` asked every 20 ms throughout (its p99 over the "
        "whole run is the target's; the next column leaves out the arrival of the asks, until each had its "
        "first response: the process serving the answers it took). Baselines in the "
        "same run: the provider's time, one ask alone on the same server (POST -> `done`), and "
        "`ANSWERS_MAX_GENERATING=0` (no limit: every ask taken, as before admission). Targets (issue 44): "
        f"every answer taken done, p95 within {TARGET_P95_X:g}x the provider's time, `/healthz` p99 under "
        f"{TARGET_HEALTHZ_P99_S * 1000:.0f} ms; refused asks (`503`, `Retry-After`) reported. The machine "
        "is shared with other work and loaded (load average at start above): absolute times are long, "
        "and the limit that meets the targets here is a floor for a quieter machine."
    )
    report()
    base = {db: m for db, limit, m in rows if limit == 0}
    report.table(
        ["database", "ANSWERS_MAX_GENERATING", "taken (SSE + JSON)", "refused (503)", "done", "failed",
         "one alone (s)", "p50 (s)", "p95 (s)", "p95 / provider", "p95 vs no limit", "max (s)",
         "`/healthz` p50 (ms)", "p99 (ms)", "max (ms)", "p99 once all asks had a response (ms)",
         "server CPU (s)", "targets"],
        [[harness.db_label(db), limit or "0 (no limit)",
          f"{m['taken']} ({m['taken_sse']} + {m['taken_json']})",
          m["refused"], m["done"], "; ".join(f"{k}: {v}" for k, v in m["failures"].items()) or "none",
          _s(m["alone_s"]), _s(m["p50"]), _s(m["p95"]), f"{m['p95_x']:.2f}x",
          f"{m['p95'] / base[db]['p95']:.2f}x" if db in base and limit else "-", _s(m["max"]),
          harness.ms(m["healthz_p50"]), harness.ms(m["healthz_p99"]), harness.ms(m["healthz_max"]),
          harness.ms(m["healthz_after_p99"]),
          f"{m['cpu_s']:.0f}", "**met**" if met(m) else "not met"]
         for db, limit, m in rows],
    )  # fmt: skip
    report()
    for db, limit, m in rows:
        if m["server_errors"]:
            errors = "; ".join(f"`{k}` x{v}" for k, v in m["server_errors"].items())
            report(f"{harness.db_label(db)}, limit {limit}: the server's log: {errors}")
            report()
    report.write()
    harness.save_figures(
        "capacity",
        {"commit": commit, "provider_s": args.provider_s, "sse": args.sse, "json": args.json,
         "default_limit": MAX_GENERATING_DEFAULT,
         "runs": [{"db": db, "limit": limit, **m} for db, limit, m in rows]},
    )  # fmt: skip


def _s(seconds: float | None) -> str:
    return "n/a" if seconds is None or seconds != seconds else f"{seconds:.1f}"


if __name__ == "__main__":
    main()
