"""Declining and coverage: what a declined question costs against an answered one, and what the coverage
record costs against the support record it is computed with.

    .venv/bin/python bench/bench_decline.py            # writes bench/RESULTS_decline.md (+ .json)

Runs in a child process on a fresh, migrated SQLite database holding the demo corpus, with `make run`'s
retrieval settings (ANSWERS_MIN_SCORE 0.1, ANSWERS_MAX_SOURCES 5) and the offline extractive provider,
wrapped so that every call to it is counted.

- Asking (JSON path, `flow.ask`, until the answer is done and stored; its support record after, untimed):
  an on-topic question (answered: retrieval, the provider, finalizing) and an off-topic one whose terms no
  document holds (declined: retrieval, then the decline text stored), in turns, RUNS times each after a
  warm-up. The baseline is the answered question, in the same run.
- The records of one answered answer, in turns: the coverage record (`coverage_from`: the question's
  terms, the corpus look-up, counts cached as in the app) against the support record
  (`compute_support`, lexical), the baseline.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "RESULTS_decline.md"
RESULTS_JSON = Path(__file__).resolve().parent / "RESULTS_decline.json"
RUNS = 60
RECORD_RUNS = 200
WARMUP = 5
ON_TOPIC = "How does the with statement work?"
OFF_TOPIC = "How do zeppelins moor in Patagonia?"


def _p(values: list[float], q: float) -> float:
    return sorted(values)[int(q * (len(values) - 1))]


# The functions below import the app inside: they run in the child, after django.setup().


class _Counting:
    """The configured provider, its calls counted (a declined question must make none)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name, self.model, self.native_citations = inner.name, inner.model, inner.native_citations
        self.calls = 0

    def stream(self, prompt: Any, generation: Any = None) -> Any:
        self.calls += 1
        return self.inner.stream(prompt, generation)


def _asks() -> dict[str, Any]:
    from asgiref.sync import async_to_sync

    from answers.pipeline import flow, lifecycle
    from answers.pipeline.publisher import JSON
    from answers.providers.registry import get_provider

    provider = _Counting(get_provider())

    async def ask(question: str) -> tuple[float, Any]:
        started = time.perf_counter()
        answer = await flow.ask(question=question, asker_id=None, publisher=JSON, provider=provider)
        took = (time.perf_counter() - started) * 1000
        await lifecycle.wait_for_background()  # its support record, untimed, before the next question
        return took, answer

    times: dict[str, list[float]] = {"answered": [], "declined": []}
    calls = {"answered": 0, "declined": 0}
    outcomes: dict[str, set[tuple[str, bool]]] = {"answered": set(), "declined": set()}
    for run in range(WARMUP + RUNS):
        for kind, question in (("answered", ON_TOPIC), ("declined", OFF_TOPIC)):
            before = provider.calls
            took, answer = async_to_sync(ask)(question)
            if run >= WARMUP:
                times[kind].append(took)
                calls[kind] += provider.calls - before
                outcomes[kind].add((answer.status, answer.declined))
    return {
        kind: {
            "p50": statistics.median(values),
            "p95": _p(values, 0.95),
            "provider_calls": calls[kind],
            "asks": len(values),
            "outcomes": sorted(
                f"{status}{' declined' if declined else ''}" for status, declined in outcomes[kind]
            ),
        }
        for kind, values in times.items()
    }


def _records() -> dict[str, Any]:
    from answers.models import Answer
    from answers.support.compute import answer_texts, compute_support, coverage_from

    answer = Answer.objects.prefetch_related("sources").filter(declined=False, question=ON_TOPIC).first()
    assert answer is not None
    texts = answer_texts(answer)
    times: dict[str, list[float]] = {"coverage": [], "support": []}
    for run in range(WARMUP + RECORD_RUNS):
        started = time.perf_counter()
        coverage = coverage_from(texts)
        covered = time.perf_counter()
        compute_support(answer)
        done = time.perf_counter()
        if run >= WARMUP:
            times["coverage"].append((covered - started) * 1000)
            times["support"].append((done - covered) * 1000)
    out: dict[str, Any] = {k: {"p50": statistics.median(v), "p95": _p(v, 0.95)} for k, v in times.items()}
    out["terms"] = coverage["terms"]
    out["sources"] = answer.sources.count()
    return out


def run_child() -> dict[str, Any]:
    import django

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
    os.environ.update(
        {"ANSWERS_PROVIDER": "extractive", "ANSWERS_MIN_SCORE": "0.1", "ANSWERS_MAX_SOURCES": "5"}
    )
    django.setup()
    from django.core.management import call_command

    from answers.content.demo import load_demo_corpus
    from answers.models import Chunk

    call_command("migrate", verbosity=0, skip_checks=True)
    load_demo_corpus()
    return {"asks": _asks(), "records": _records(), "chunks": Chunk.objects.count()}


def _markdown(result: dict[str, Any]) -> str:
    asks, records = result["asks"], result["records"]
    answered, declined = asks["answered"], asks["declined"]
    coverage, support = records["coverage"], records["support"]
    load = os.getloadavg()
    lines = [
        "## Declining and coverage",
        "",
        f"`bench/bench_decline.py`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average {load[0]:.2f} at the end. "
        f"Demo corpus ({result['chunks']} chunks), SQLite, extractive provider, `make run`'s retrieval "
        f"settings; the JSON path (`flow.ask`) until the answer is done and stored, {answered['asks']} asks "
        "of each question in turns.",
        "",
        "| question | outcome | provider calls | p50 (ms) | p95 (ms) |",
        "|---|---|---:|---:|---:|",
        f"| on topic: {ON_TOPIC!r} (baseline) | {', '.join(answered['outcomes'])} | "
        f"{answered['provider_calls']} | {answered['p50']:.2f} | {answered['p95']:.2f} |",
        f"| off topic: {OFF_TOPIC!r} | {', '.join(declined['outcomes'])} | {declined['provider_calls']} "
        f"| {declined['p50']:.2f} | {declined['p95']:.2f} |",
        "",
        f"Declined / answered, p50: {declined['p50'] / answered['p50']:.2f}x, with no provider call "
        "(with a remote model the answered side also pays the model's whole reply).",
        "",
        f"The records of one answered answer ({records['sources']} sources; terms "
        f"{', '.join(records['terms'])}), {RECORD_RUNS} runs in turns:",
        "",
        "| record | p50 (ms) | p95 (ms) |",
        "|---|---:|---:|",
        f"| support (`compute_support`, lexical; baseline) | {support['p50']:.3f} | {support['p95']:.3f} |",
        f"| coverage (`coverage_from`, corpus counts cached) | {coverage['p50']:.3f} "
        f"| {coverage['p95']:.3f} |",
        "",
        f"Coverage / support, p50: {coverage['p50'] / support['p50']:.2f}x.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    if "--child" in sys.argv:
        print(json.dumps(run_child()))
        return
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3"}
        out = subprocess.run(
            [sys.executable, __file__, "--child"], env=env, check=True, stdout=subprocess.PIPE, text=True
        ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    RESULTS_JSON.write_text(json.dumps(result, indent=1) + "\n")
    text = _markdown(result)
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
