"""What a follow-up costs: POST -> `references` for turn 1 vs turn 5, and assembling 20 turns of history.

    .venv/bin/python bench/bench_conversations.py [--db sqlite,postgres] [--conversations 12] [--chunks 2000]

1. For each database: a daphne server (bench/harness.py) over `--chunks` synthetic chunks, the
   `openai` provider pointed at the stub server in this process, which answers the follow-up's
   rewrite (one non-streamed request) at once and streams a short cited answer. One signed-in
   client asks `--conversations` conversations of five turns, one question at a time, and times
   POST -> the `references` event of each turn (events replayed from the start). Baseline in the
   same run: turn 1 (no rewrite, no history). A follow-up's extra cost is its rewrite request,
   the history read and the turn claimed under a lock.
2. In this process (pure, no database): the history of a 20-turn conversation whose answers carry
   markers: each turn's markers removed (from the trail's record), the budget applied, and the
   prompt built with it; against building the same prompt without history (the floor).
Results: bench/RESULTS_conversations.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import corpus as corpus_module
import harness
from harness import Report, median, ms, percentile
from sse_client import absolute, read_stream, session

from answers.citations.trail import compute_trail, final_markers
from answers.conversations.history import PastTurn, assemble, marker_free
from answers.providers.prompt import build_prompt
from answers.retrieval.types import RetrievedSource
from tests.fixtures.providers import Reply, StubOpenAIServer

TURNS = 5
PIECES = ["The answer ", "cites ", "the first ", "source [1]", " and the second [2]", "."]
HISTORY_TURNS = 20
HISTORY_BUDGET = 100_000  # large enough that all 20 turns are sent (the worst case for assembly)
REPEATS = 2000


def _reply(body: dict[str, Any]) -> Reply:
    if not body.get("stream"):
        return Reply(pieces=["What does the synthetic corpus say about this again?"])
    return Reply(pieces=PIECES)


async def _turn(
    client: Any, live: Any, question: str, conversation: str | None, headers: dict[str, str]
) -> Any:
    started = time.perf_counter()
    body = {"question": question, "stream": True, "conversation": conversation}
    async with client.post(f"{live.url}/api/answers/", json=body, headers=headers) as response:
        accepted = await response.json()
        if response.status != 202:
            return None, f"POST {response.status}: {accepted}"
    result = await read_stream(
        client, absolute(live.url, accepted["events_url"]), headers=headers, limit_s=30
    )
    references = result.first("references")
    final = result.final
    if references is None or final is None or final.type != "done":
        return None, result.error or str([e.type for e in result.events])
    return (references.t - started, accepted["conversation"]), None


async def measure(live: Any, questions: list[str], conversations: int) -> dict[str, Any]:
    headers = live.auth("alice")
    by_turn: dict[int, list[float]] = {n: [] for n in range(1, TURNS + 1)}
    failures: list[str] = []
    async with session() as client:
        for c in range(conversations):
            conversation = None
            for turn in range(1, TURNS + 1):
                question = questions[(c * TURNS + turn) % len(questions)]
                if turn > 1:
                    question = "And what about that one, " + question.lower()
                done, error = await _turn(client, live, question, conversation, headers)
                if done is None:
                    failures.append(f"conversation {c} turn {turn}: {error}")
                    break
                seconds, conversation = done
                by_turn[turn].append(seconds)
    return {"by_turn": by_turn, "failures": failures}


def _history_inputs() -> tuple[list[tuple[str, str, list[Any]]], list[RetrievedSource]]:
    sentence = "Zebras live in grassland and savanna across eastern and southern Africa"
    turns = []
    for n in range(1, HISTORY_TURNS + 1):
        raw = " ".join(f"{sentence} ({n}.{k}) [{k % 4 + 1}]." for k in range(8))
        trail = compute_trail(raw, 4)
        turns.append(
            (f"Question {n}: where do zebras live, part {n}?", trail.final_text, trail.markers_json())
        )
    sources = [
        RetrievedSource(
            number=i, document_id=i, title=f"Source {i}", url=f"/s/{i}", excerpt=sentence * 4,
            lexical_score=1.0, score=1.0,
        )
        for i in range(1, 5)
    ]  # fmt: skip
    return turns, sources


def history_assembly() -> dict[str, float]:
    turns, sources = _history_inputs()

    def with_history() -> None:
        past = [
            PastTurn(turn=n, question=q, text=marker_free(text, final_markers(record)))
            for n, (q, text, record) in enumerate(turns, start=1)
        ]
        history = assemble(past, budget=HISTORY_BUDGET)
        build_prompt("And the last one?", sources, history=[(t.question, t.text) for t in history.turns])

    def floor() -> None:
        build_prompt("And the last one?", sources)

    out: dict[str, list[float]] = {"history": [], "floor": []}
    for name, fn in (("history", with_history), ("floor", floor)):
        for _ in range(50):
            fn()
        for _ in range(REPEATS):
            t = time.perf_counter()
            fn()
            out[name].append(time.perf_counter() - t)
    return {
        "history_p50_us": median(out["history"]) * 1e6,
        "history_p95_us": percentile(out["history"], 0.95) * 1e6,
        "floor_p50_us": median(out["floor"]) * 1e6,
        "history_chars": sum(len(q) + len(t) for q, t, _ in turns),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument("--conversations", type=int, default=12)
    parser.add_argument("--chunks", type=int, default=2000)
    args = parser.parse_args()
    questions = corpus_module.questions(args.conversations * TURNS + 1)
    report = Report("conversations")
    started_line = harness.machine()
    rows = []
    notes: list[str] = []
    figures: dict[str, Any] = {"db": {}}
    with StubOpenAIServer(default=_reply) as stub:
        for db in filter(None, args.db.split(",")):
            with harness.server(db, openai_base_url=stub.base_url, chunks=args.chunks) as live:
                measured = asyncio.run(measure(live, questions, args.conversations))
            by_turn = measured["by_turn"]
            notes += [f"{harness.db_label(db)}: {f}" for f in measured["failures"][:5]]
            first, fifth = by_turn[1], by_turn[TURNS]
            rows.append(
                [
                    harness.db_label(db),
                    f"{len(fifth)}/{args.conversations}",
                    *(ms(median(by_turn[n])) if by_turn[n] else "-" for n in range(1, TURNS + 1)),
                    ms(percentile(fifth, 0.95)) if fifth else "-",
                    f"{median(fifth) / median(first):.2f}x" if first and fifth else "-",
                ]
            )
            print(rows[-1], file=sys.stderr, flush=True)
            if first and fifth:
                figures["db"][db] = {
                    "conversations": args.conversations,
                    "complete": len(fifth),
                    "turn1_p50_ms": median(first) * 1000,
                    "turn5_p50_ms": median(fifth) * 1000,
                    "turn5_p95_ms": percentile(fifth, 0.95) * 1000,
                }
    assembly = history_assembly()
    figures["assembly"] = assembly
    report("## Conversations: what a follow-up costs")
    report()
    report(
        f"`bench/bench_conversations.py --conversations {args.conversations} --chunks {args.chunks}`: "
        f"{started_line}. A daphne process (DEBUG off) over {args.chunks:,} synthetic chunks; the stub "
        "provider answers a follow-up's rewrite (non-streamed) at once and streams "
        f"{len(PIECES)} pieces; one signed-in client asks conversations of {TURNS} turns, one question at "
        "a time. Baseline: turn 1 of the same conversations (no rewrite, no history). "
        "A turn's POST -> `references` includes its rewrite request (here the stub's, which takes no "
        "model time: a real model adds its own latency for one short completion)."
    )
    report()
    report.table(
        ["database", "conversations complete", *(f"turn {n} p50 (ms)" for n in range(1, TURNS + 1)),
         f"turn {TURNS} p95 (ms)", f"turn {TURNS} / turn 1"],
        rows,
    )  # fmt: skip
    report()
    report(
        f"History assembly, {HISTORY_TURNS} turns ({assembly['history_chars']:,} characters, each answer "
        "with 8 markers): markers removed from the trail's record, the budget applied, the prompt built: "
        f"p50 {assembly['history_p50_us']:.0f} µs, p95 {assembly['history_p95_us']:.0f} µs "
        f"(target < 1 ms); the same prompt without history (floor): p50 {assembly['floor_p50_us']:.0f} µs."
    )
    if notes:
        report()
        report("Failures: " + "; ".join(notes))
    report.write()
    harness.save_figures("conversations", figures)


if __name__ == "__main__":
    main()
