"""The pipeline's own cost: a JSON-path ask() against its parts measured in the same run.

    .venv/bin/python bench/bench_pipeline.py [--rounds 3]

A fresh SQLite database in a temporary folder gets the demo corpus; then for
each demo question (several rounds) we time, in one process:

- retrieval alone (`retrieve()`), the provider alone (the extractive answerer
  streaming over the same prompt) — the floor: work the pipeline must do;
- the whole JSON path (`services.ask()`: retrieve, persist the answer and its
  sources, stream, strip, finalize, persist the trail).

The ratio whole / (retrieval + provider) is the pipeline's overhead (database
writes and the citation core). Also reported: answers per second, one at a time.
Results go to bench/RESULTS_pipeline.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "RESULTS_pipeline.md"

QUESTIONS = [
    "How does the with statement work?",
    "What does the yield statement do?",
    "How do I write a lambda expression?",
    "How are exceptions raised with the raise statement?",
    "What is the assert statement for?",
    "How does the for loop iterate?",
    "How do try except finally clauses work?",
    "What does the global statement declare?",
    "How does import find and load modules?",
    "What does nonlocal do?",
]


def setup_django(db_path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
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

    from answers import services
    from answers.conf import conf
    from answers.providers import build_prompt, get_provider
    from answers.retrieval import retrieve

    times: dict[str, list[float]] = {"retrieval": [], "provider": [], "ask": []}
    provider = get_provider("extractive")
    for _ in range(rounds):
        for question in QUESTIONS:
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
            answer = await services.ask(question=question, asker_id=None, delivery="json", provider=provider)
            times["ask"].append(time.perf_counter() - start)
            assert answer.status == "done", answer.error_message
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        setup_django(Path(folder) / "bench.sqlite3")
        times = asyncio.run(measure(args.rounds))

    def ms(values: list[float]) -> float:
        return statistics.median(values) * 1000

    floor = [r + p for r, p in zip(times["retrieval"], times["provider"], strict=True)]
    ratio = statistics.median(a / f for a, f in zip(times["ask"], floor, strict=True))
    per_second = len(times["ask"]) / sum(times["ask"])
    lines = [
        "## Pipeline overhead (JSON path, extractive provider, SQLite)",
        "",
        f"`bench/bench_pipeline.py --rounds {args.rounds}`: {len(times['ask'])} asks over the demo corpus, "
        "one at a time, in one process.",
        "",
        "| step | median (ms) |",
        "|---|---:|",
        f"| retrieval alone | {ms(times['retrieval']):.1f} |",
        f"| provider alone (extractive, no delay) | {ms(times['provider']):.1f} |",
        f"| floor: retrieval + provider | {ms(floor):.1f} |",
        f"| whole `ask()` (persist, stream, strip, finalize, persist) | {ms(times['ask']):.1f} |",
        "",
        f"Overhead ratio, whole / floor (median of per-question ratios): **{ratio:.2f}x**. "
        f"Answers per second, sequential: **{per_second:.1f}**.",
        "",
    ]
    RESULTS.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
