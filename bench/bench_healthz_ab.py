"""`/healthz` during a 30 KB marker flood, A/B: two servers in the same run.

    .venv/bin/python bench/bench_healthz_ab.py [--db sqlite] [--repeat 4] --base <git ref>
    .venv/bin/python bench/bench_healthz_ab.py [--db sqlite] [--repeat 4] --intervals 0.005,0.001

Either `--base REF`: one daphne server (bench/harness.py, DEBUG off) runs the code of git REF
(exported to a temporary directory) and one runs this checkout's; or `--intervals`: one server
per GIL switch interval, each started with `sys.setswitchinterval(<interval>)` (a sitecustomize
on the server's PYTHONPATH, so the project's code is not touched). All the servers run at once
against the same stub provider and the runs are interleaved (A, B, A, B, ...), so a change in
the machine's load falls on every variant. Each run is bench_hostile's 30 KB flood of `[1]` on
the JSON or the SSE path, with `GET /healthz` asked every 20 ms from the POST until the answer's
support record (computed after `done`, in a worker thread) is stored and read back by the
reviewer's trail endpoint: that window holds all the CPU work the flood causes on the server.
Prints, per variant, the median POST -> end time and the `/healthz` median, p99 and max.
Results are recorded by hand in bench/NOTES_by_hand.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
from bench_hostile import CASES, QUESTION, HealthProbe, settle
from harness import median
from sse_client import absolute, ask, read_stream, session

import tests.fixtures.live_server as live_server
from tests.fixtures.providers import Reply, StubOpenAIServer

FLOOD = "flood `[1]` 30 KB"
SITECUSTOMIZE = "import os, sys\nsys.setswitchinterval(float(os.environ['BENCH_SWITCH_INTERVAL']))\n"
ENV = {"ANSWERS_ANON_RATE": "10000/min", "ANSWERS_PROVIDER_TIMEOUT": "600"}


async def one(client: Any, live: Any, *, stream: bool) -> dict[str, Any]:
    started = time.perf_counter()
    async with HealthProbe(client, live.url) as probe:
        status, body = await ask(client, live.url, QUESTION, stream=stream)
        if stream and status == 202:
            result = await read_stream(client, absolute(live.url, body["events_url"]), limit_s=600)
            assert result.final is not None, result
            assert result.final.type == "done", result.final
        else:
            assert status == 201, status
        took = time.perf_counter() - started
        await settle(client, live, body["id"])
    return {"seconds": took, "health": probe.times}


async def measure(lives: dict[str, Any], repeat: int) -> dict[str, dict[str, list[Any]]]:
    out: dict[str, dict[str, list[Any]]] = {name: {"seconds": [], "health": []} for name in lives}
    async with session() as client:
        for live in lives.values():
            await ask(client, live.url, QUESTION, stream=False)  # warm-up
        for _ in range(repeat):
            for path in ("json", "sse"):
                for name, live in lives.items():
                    run = await one(client, live, stream=path == "sse")
                    print(name, path, round(run["seconds"], 3), round(max(run["health"]), 3), file=sys.stderr)
                    out[name]["seconds"].append(run["seconds"])
                    out[name]["health"].extend(run["health"])
    return out


@contextlib.contextmanager
def code_of(root: Path) -> Iterator[None]:
    """Servers started inside run the code at `root` (live_server runs manage.py and daphne there)."""
    saved = live_server.ROOT
    live_server.ROOT = root
    try:
        yield
    finally:
        live_server.ROOT = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite")
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--base", default="", help="A git ref: its code against this checkout's.")
    parser.add_argument("--intervals", default="", help="Switch intervals (s), comma-separated.")
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    print(harness.machine(), file=sys.stderr)
    with StubOpenAIServer() as stub, tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        stub.set_default(Reply(pieces=CASES[FLOOD]))
        variants: dict[str, tuple[Path, dict[str, str]]] = {}
        if args.base:
            base = Path(tmp) / "base"
            base.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(here), "archive", args.base], check=True, capture_output=True
            )
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
            variants = {f"base {args.base}": (base, ENV), "this checkout": (here, ENV)}
        for interval in filter(None, args.intervals.split(",")):
            (Path(tmp) / "sitecustomize.py").write_text(SITECUSTOMIZE)
            env = {**ENV, "PYTHONPATH": tmp, "BENCH_SWITCH_INTERVAL": interval}
            variants[f"switch interval {float(interval) * 1000:g} ms"] = (here, env)
        lives = {}
        for name, (root, env) in variants.items():
            with code_of(root):
                lives[name] = stack.enter_context(
                    harness.server(args.db, openai_base_url=stub.base_url, extra_env=env)
                )
        figures = asyncio.run(measure(lives, args.repeat))
    print(f"load average {harness.load_average()} at the end", file=sys.stderr)
    print("| variant | runs | POST -> end median (ms) | `/healthz` p50 (ms) | p99 (ms) | max (ms) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, f in figures.items():
        health = sorted(f["health"])
        p99 = health[min(len(health) - 1, int(len(health) * 0.99))]
        print(
            f"| {name} | {len(f['seconds'])} | {median(f['seconds']) * 1000:.0f} | "
            f"{median(health) * 1000:.1f} | {p99 * 1000:.1f} | {health[-1] * 1000:.1f} |"
        )


if __name__ == "__main__":
    main()
