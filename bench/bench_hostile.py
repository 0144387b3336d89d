"""Hostile replies: marker floods and a maximal answer's reads, `/healthz` timed throughout.

    .venv/bin/python bench/bench_hostile.py [--db sqlite,postgres] [--reads 5] [--repeat 3]

For each database: a daphne server (bench/harness.py, DEBUG off) with the `openai` provider
pointed at the stub server in this process. While each answer runs, the client asks `GET
/healthz` every 20 ms: its slowest reply says whether the answer's CPU work stalled the
process (every other request and stream on it). Cases, each on the JSON path (POST until
`201`) and the SSE path (POST, then the events until `done`):

- baseline: an ordinary answer (~100 characters in 20 pieces);
- 30 KB of `[1]` in 5 pieces, and 30 KB of unclosed `[1 ` in 5 pieces (36.5 s and
  45.6 s on the SSE path before the live display stopped rescanning the whole text,
  `/healthz` stalled as long);
- a maximal answer: a 150 KB reply (prose, a marker per sentence), cut at
  ANSWERS_MAX_ANSWER_CHARS (100,000); then its reads (`GET /api/answers/<id>/`, the permalink
  page, the events replay to `done`), each `--reads` times, against the baseline answer's.

Each run starts once the answer before it has its support record (computed after `done`, in
the server: seconds of CPU for a flood), so no run pays for the one before it. Ratios are
against the baseline measured in the same run. Results: bench/RESULTS_hostile.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
import harness
from harness import Report, median, ms
from sse_client import absolute, ask, read_stream, session

from tests.fixtures.providers import Reply, StubOpenAIServer

QUESTION = harness.SEED_QUESTION
BASELINE = ["Generated ", "words ", "cite ", "the ", "first ", "source ", "[1]", " and ", "the ", "second ",
            "[2]", ". ", "More ", "text ", "follows ", "here ", "[1]", ". ", "The ", "end."]  # fmt: skip
SENTENCE = "Zebras graze on the open savanna grass in large family herds [1]. "
MAXIMAL_CHARS = 150_000
HEALTH_EVERY_S = 0.02
READS = {"api": "`GET /api/answers/<id>/`", "page": "permalink page", "replay": "events replay"}


def in_pieces(text: str, count: int) -> list[str]:
    size = len(text) // count + 1
    return [text[i : i + size] for i in range(0, len(text), size)]


CASES: dict[str, list[str]] = {
    "baseline": BASELINE,
    "flood `[1]` 30 KB": in_pieces("Flooded " + "[1]" * 10_000, 5),
    "flood `[1 ` 30 KB": in_pieces("Flooded " + "[1 " * 10_000, 5),
    "maximal (150 KB reply)": in_pieces(SENTENCE * (MAXIMAL_CHARS // len(SENTENCE)), 300),
    "maximal flood (150 KB of `[1]`)": in_pieces("Flooded " + "[1]" * (MAXIMAL_CHARS // 3), 300),
}
# The answers whose reads are measured, against the baseline's.
MAXIMAL = ("maximal (150 KB reply)", "maximal flood (150 KB of `[1]`)")


class HealthProbe:
    """Asks /healthz every HEALTH_EVERY_S until stopped; keeps each reply's latency."""

    def __init__(self, client: aiohttp.ClientSession, base_url: str) -> None:
        self.client, self.url = client, f"{base_url}/healthz"
        self.times: list[float] = []
        self.asked_at: list[float] = []  # time.perf_counter() when each was asked
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            started = time.perf_counter()
            async with self.client.get(self.url) as response:
                await response.read()
            self.times.append(time.perf_counter() - started)
            self.asked_at.append(started)
            await asyncio.sleep(HEALTH_EVERY_S)

    async def __aenter__(self) -> HealthProbe:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def one(client: aiohttp.ClientSession, live: Any, *, stream: bool) -> dict[str, Any]:
    """One answer on one path, /healthz timed throughout: seconds, healthz max, server CPU, the id."""
    cpu = harness.proc_cpu_seconds(live.pid)
    started = time.perf_counter()
    async with HealthProbe(client, live.url) as probe:
        status, body = await ask(client, live.url, QUESTION, stream=stream)
        outcome = f"{status}"
        if stream and status == 202:
            result = await read_stream(client, absolute(live.url, body["events_url"]), limit_s=600)
            final = result.final
            outcome = final.type if final else (result.error or "no end")
            if final is not None and final.type == "done" and final.json().get("truncated"):
                outcome += " (truncated)"
        elif status == 201 and body.get("truncated"):
            outcome += " (truncated)"
        took = time.perf_counter() - started
    return {
        "id": body.get("id"),
        "seconds": took,
        "outcome": outcome,
        "health_max": max(probe.times, default=float("nan")),
        "health_p50": median(probe.times),
        "health_n": len(probe.times),
        "cpu": harness.proc_cpu_seconds(live.pid) - cpu,
    }


async def settle(client: aiohttp.ClientSession, live: Any, answer_id: str) -> float:
    """Seconds until the answer's support record (computed after `done`, in the server) is stored:
    the reads are timed after it, not against it."""
    started = time.perf_counter()
    while time.perf_counter() - started < 120:
        async with client.get(
            f"{live.url}/api/answers/{answer_id}/trail/", headers=live.auth("reviewer")
        ) as r:
            if (await r.json()).get("support") is not None:
                break
        await asyncio.sleep(0.5)  # each poll reads the trail, a maximal one's is not light
    return time.perf_counter() - started


async def reads(client: aiohttp.ClientSession, live: Any, answer_id: str, times: int) -> dict[str, float]:
    """Median seconds of each read of a done answer: the API object, the permalink page, the replay;
    and `support`, the seconds its support record took to settle before them."""
    supported = await settle(client, live, answer_id)
    urls = {
        "api": f"{live.url}/api/answers/{answer_id}/",
        "page": f"{live.url}/answers/{answer_id}/",
    }
    out: dict[str, float] = {}
    for name, url in urls.items():
        samples = []
        for _ in range(times):
            started = time.perf_counter()
            async with client.get(url) as response:
                await response.read()
                assert response.status == 200, (url, response.status)
            samples.append(time.perf_counter() - started)
        out[name] = median(samples)
    samples = []
    url = f"{live.url}/answers/{answer_id}/events/?lastEventId=answer-{answer_id}:0"
    for _ in range(times):
        # The bytes until `done` arrives, unparsed: the server's time, not the client's parsing.
        started = time.perf_counter()
        async with client.get(url) as response:
            assert response.status == 200, response.status
            body, done_at = bytearray(), -1
            async for chunk in response.content.iter_any():
                start = max(0, len(body) - 16)
                body += chunk
                if done_at < 0:
                    done_at = body.find(b"event: done", start)
                if done_at >= 0 and body.find(b"\n\n", max(done_at, start)) >= 0:
                    break  # the `done` event, its data included, has arrived
            else:
                raise AssertionError("the replay ended without `done`")
        samples.append(time.perf_counter() - started)
    out["replay"] = median(samples)
    out["support"] = supported
    return out


def combined(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs of one case on one path as one: the median time and CPU, the `/healthz` median of
    the runs' medians and the slowest of all; the outcomes seen; the last answer's id."""
    return {
        "id": samples[-1]["id"],
        "seconds": median([r["seconds"] for r in samples]),
        "outcome": " / ".join(dict.fromkeys(r["outcome"] for r in samples)),
        "health_max": max(r["health_max"] for r in samples),
        "health_p50": median([r["health_p50"] for r in samples]),
        "health_n": sum(r["health_n"] for r in samples),
        "cpu": median([r["cpu"] for r in samples]),
        "runs": len(samples),
        "seconds_each": [r["seconds"] for r in samples],
    }


async def measure(
    live: Any, stub: StubOpenAIServer, read_times: int, only: str = "", repeat: int = 1
) -> dict[str, Any]:
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    read_figures: dict[str, dict[str, float]] = {}
    async with session() as client:
        await ask(client, live.url, QUESTION, stream=False)  # warm-up: imports, first connections
        for name, pieces in CASES.items():
            if only and name != "baseline" and not any(name.startswith(w) for w in only.split(",")):
                continue
            stub.set_default(Reply(pieces=pieces))
            samples: dict[str, list[dict[str, Any]]] = {"json": [], "sse": []}
            for _ in range(repeat):  # the paths in turn, so a change of load falls on both
                for path in ("json", "sse"):
                    run = await one(client, live, stream=path == "sse")
                    print(name, path, run, file=sys.stderr, flush=True)
                    if run["outcome"].startswith(("201", "done")):
                        # Its support record is computed after `done`, on the same process (seconds
                        # of CPU for a flood): the next run starts once it is stored, not against it.
                        await settle(client, live, run["id"])
                    samples[path].append(run)
            runs[name] = {path: combined(taken) for path, taken in samples.items()}
            if name == "baseline" or name in MAXIMAL:
                read_figures[name] = await reads(client, live, runs[name]["sse"]["id"], read_times)
                print(name, "reads", read_figures[name], file=sys.stderr, flush=True)
    return {"runs": runs, "reads": read_figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument("--reads", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="Runs of each case on each path (median).")
    parser.add_argument("--cases", default="", help="Only these cases (comma-separated names' first words).")
    args = parser.parse_args()
    report = Report("hostile")
    started_line = harness.machine()
    rows, read_rows = [], []
    figures: dict[str, Any] = {}
    with StubOpenAIServer() as stub:
        for db in filter(None, args.db.split(",")):
            env = {"ANSWERS_ANON_RATE": "10000/min", "ANSWERS_PROVIDER_TIMEOUT": "600"}
            with harness.server(db, openai_base_url=stub.base_url, extra_env=env) as live:
                measured = asyncio.run(measure(live, stub, args.reads, args.cases, args.repeat))
            runs, read_figures = measured["runs"], measured["reads"]
            base = runs["baseline"]
            for name, paths in runs.items():
                for path, run in paths.items():
                    rows.append(
                        [
                            harness.db_label(db),
                            name,
                            path.upper(),
                            run["outcome"],
                            ms(run["seconds"]),
                            f"{run['seconds'] / base[path]['seconds']:.1f}x",
                            f"{run['seconds'] / paths['json']['seconds']:.1f}x",
                            f"{run['cpu']:.2f}",
                            ms(run["health_p50"]),
                            ms(run["health_max"]),
                            f"{run['health_max'] / base[path]['health_max']:.1f}x",
                        ]
                    )
            ordinary = read_figures["baseline"]
            for name in MAXIMAL:
                for what, label in READS.items():
                    maximal = read_figures[name][what]
                    read_rows.append(
                        [
                            harness.db_label(db),
                            name,
                            label,
                            ms(ordinary[what]),
                            ms(maximal),
                            f"{maximal / ordinary[what]:.1f}x",
                        ]
                    )
            figures[db] = {
                "runs": {
                    name: {path: {k: v for k, v in run.items() if k != "id"} for path, run in paths.items()}
                    for name, paths in runs.items()
                },
                "reads": read_figures,
            }
    report("## Hostile replies: marker floods and a maximal answer")
    report()
    report(
        f"`bench/bench_hostile.py --db {args.db} --reads {args.reads} --repeat {args.repeat}`: "
        f"{started_line}; load average {harness.load_average()} at the end. A daphne process "
        "(DEBUG off), the stub provider sending each reply at once; `/healthz` asked every "
        f"{HEALTH_EVERY_S * 1000:.0f} ms while each answer runs. Baseline: an ordinary answer (~100 "
        "characters, 20 pieces) on the same path in the same run; each run starts once the answer "
        "before it has its support record (computed after `done`, in the server); each case runs "
        f"{args.repeat} times on each path, in turn: times and CPU are medians, `/healthz` max the "
        "slowest of all. Targets: "
        "the SSE path costs "
        "what the JSON path costs on the same text; `/healthz` answers well under a second during a 30 KB "
        "flood; a maximal answer's reads under 100 ms."
    )
    report()
    report.table(
        ["database", "reply", "path", "outcome", "POST -> end (ms)", "vs baseline", "vs JSON path",
         "server CPU (s)", "`/healthz` p50 (ms)", "`/healthz` max (ms)", "max vs baseline"],
        rows,
    )  # fmt: skip
    report()
    report(
        f"Reads of the maximal answers (cut at 100,000 characters) against the baseline answer's, median "
        f"of {args.reads}, at the client on loopback:"
    )
    report()
    report.table(["database", "answer", "read", "baseline (ms)", "maximal answer (ms)", "ratio"], read_rows)
    report()
    report(
        "Each answer's reads are timed once its support record (computed after `done`, off the answer's "
        "path) is stored. The replay is timed from the request to the bytes of `done` (unparsed)."
    )
    report.write()
    harness.save_figures("hostile", {"db": figures})


if __name__ == "__main__":
    main()
