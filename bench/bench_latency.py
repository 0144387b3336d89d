"""Latency the client sees on the SSE path: POST -> `references`, and the provider's last piece -> `done`.

    .venv/bin/python bench/bench_latency.py [--db sqlite,postgres] [--chunks 10000] [--asks 40]

For each database: a daphne server (bench/harness.py) over a fresh database
holding `--chunks` synthetic chunks (bench/corpus.py), the `openai` provider
pointed at the stub server in this process. One question at a time (no other
load), the client

- POSTs `{"question", "stream": true}`, then opens the returned `events_url`
  (replay from the start) and times the `references` event from the POST;
- reads to `done`; the stub records when it wrote the answer's last piece, and
  the client when `done` arrived (same clock, same process).

Baseline in the same run: retrieval alone (`retrieve()` for the same
questions, in a process of its own on the same database, one at a time).
Results: bench/RESULTS_latency.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpus_module
import harness
from harness import Report, median, ms, percentile
from sse_client import absolute, ask, read_stream, session

from tests.fixtures.providers import Reply, StubOpenAIServer

PIECES = ["Generated ", "words ", "cite ", "the ", "first ", "source ", "[1]", " and ", "the ", "second ",
          "[2]", ". ", "More ", "text ", "follows ", "here ", "[1]", ". ", "The ", "end."]  # fmt: skip
PIECE_DELAY_S = 0.005

_RETRIEVE = r"""
import json, os, time
from answers.conf import conf
from answers.retrieval.pipeline import retrieve
questions = json.loads(os.environ["BENCH_QUESTIONS"])
for q in questions[:5]:
    retrieve(q, min_score=conf.MIN_SCORE, max_sources=conf.MAX_SOURCES)
times = []
for q in questions:
    t = time.perf_counter()
    retrieve(q, min_score=conf.MIN_SCORE, max_sources=conf.MAX_SOURCES)
    times.append(time.perf_counter() - t)
print("BENCH_RESULT=" + json.dumps(times))
"""


def retrieval_alone(live: Any, questions: list[str]) -> list[float]:
    code = f"import os; os.environ['BENCH_QUESTIONS'] = {json.dumps(json.dumps(questions))}\n" + _RETRIEVE
    out = harness.run_django(live, code)
    line = next(ln for ln in out.splitlines() if ln.startswith("BENCH_RESULT="))
    return [float(x) for x in json.loads(line.removeprefix("BENCH_RESULT="))]


async def measure(live: Any, stub: StubOpenAIServer, questions: list[str]) -> dict[str, Any]:
    last_piece: dict[str, float] = {}
    gone = threading.Event()

    def on_piece(index: int, piece: str, at: float) -> None:
        if index == len(PIECES) - 1:
            last_piece["t"] = at
            gone.set()

    stub.set_default(Reply(pieces=PIECES, delay_s=PIECE_DELAY_S, on_piece=on_piece))
    out: dict[str, list[float]] = {"accepted": [], "references": [], "done": [], "provider": [], "total": []}
    failures: list[str] = []
    async with session() as client:
        for i, question in enumerate(questions):
            last_piece.clear()
            gone.clear()
            started = time.perf_counter()
            status, body = await ask(client, live.url, question)
            accepted = time.perf_counter()
            if status != 202:
                failures.append(f"POST {status}: {body}")
                continue
            result = await read_stream(client, absolute(live.url, body["events_url"]), limit_s=30)
            refs, final = result.first("references"), result.final
            if refs is None or final is None or final.type != "done" or "t" not in last_piece:
                failures.append(f"ask {i}: {result.error or [e.type for e in result.events]}")
                continue
            first_delta = result.first("delta")
            out["accepted"].append(accepted - started)
            out["references"].append(refs.t - started)
            out["done"].append(final.t - last_piece["t"])
            out["provider"].append(last_piece["t"] - (first_delta.t if first_delta else refs.t))
            out["total"].append(final.t - started)
    return {"times": out, "failures": failures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--asks", type=int, default=30)
    args = parser.parse_args()
    questions = corpus_module.questions(args.asks)
    report = Report("latency")
    started_line = harness.machine()
    rows = []
    notes = []
    figures: dict[str, dict[str, float]] = {}
    with StubOpenAIServer() as stub:
        for db in filter(None, args.db.split(",")):
            with harness.server(db, openai_base_url=stub.base_url, chunks=args.chunks) as live:
                baseline = retrieval_alone(live, questions)
                measured = asyncio.run(measure(live, stub, questions))
            t = measured["times"]
            notes += [f"{harness.db_label(db)}: {f}" for f in measured["failures"][:5]]
            rows.append(
                [
                    harness.db_label(db),
                    f"{len(t['references'])}/{len(questions)}",
                    ms(median(baseline)),
                    ms(percentile(baseline, 0.95)),
                    ms(median(t["accepted"])),
                    ms(median(t["references"])),
                    ms(percentile(t["references"], 0.95)),
                    f"{median(t['references']) / median(baseline):.1f}x",
                    ms(median(t["done"])),
                    ms(percentile(t["done"], 0.95)),
                    ms(median(t["provider"])),
                ]
            )
            print(rows[-1], file=sys.stderr, flush=True)
            figures[db] = {
                "asks": len(questions),
                "ok": len(t["references"]),
                "retrieval_p50_ms": median(baseline) * 1000,
                "references_p50_ms": median(t["references"]) * 1000,
                "references_p95_ms": percentile(t["references"], 0.95) * 1000,
                "done_p50_ms": median(t["done"]) * 1000,
                "done_p95_ms": percentile(t["done"], 0.95) * 1000,
            }
    report("## Latency at the client (SSE path)")
    report()
    report(
        f"`bench/bench_latency.py --chunks {args.chunks} --asks {args.asks}`: {started_line}. "
        f"A daphne process (DEBUG off) over {args.chunks:,} synthetic chunks; the stub provider writes "
        f"{len(PIECES)} pieces {PIECE_DELAY_S * 1000:.0f} ms apart; one question at a time. "
        "Baseline: `retrieve()` alone for the same questions on the same database. "
        "Targets: POST -> `references` p50 < 100 ms; last piece -> `done` p50 < 50 ms."
    )
    report()
    report.table(
        ["database", "answers ok", "retrieval alone p50 (ms)", "retrieval p95 (ms)", "POST -> 202 p50 (ms)",
         "POST -> `references` p50 (ms)", "p95 (ms)", "vs retrieval", "last piece -> `done` p50 (ms)",
         "p95 (ms)", "provider's own streaming p50 (ms)"],
        rows,
    )  # fmt: skip
    if notes:
        report()
        report("Failures: " + "; ".join(notes))
    report.write()
    harness.save_figures("latency", {"chunks": args.chunks, "db": figures})


if __name__ == "__main__":
    main()
