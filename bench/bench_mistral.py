"""The mistral provider's cost per answer against the openai provider's, on the same reply.

    .venv/bin/python bench/bench_mistral.py [--answers 60] [--rounds 5]

The same cited reply (about 520 characters: six cited sentences, one of them citing two
sources) is streamed to each provider by its stub server (tests/fixtures/providers.py,
tests/fixtures/mistral_stub.py) running in a child process, so that the serving costs nothing
here: as `openai` text pieces of four characters, markers written into the text, and as
`mistral` the same text pieces with reference chunks after each cited sentence. Both providers
must yield the same raw text. The figure is this process's CPU time per answer (the client
library reading the stream, the provider placing the markers: everything `stream()` does),
median of the rounds; the rounds alternate the providers, so load changes hit both alike.
Wall time per answer is reported too. Target: mistral within 1.2x of openai.

A third row reads the same chunks through the client's own event stream (its decoder), which
the provider does not use (answers/providers/mistral_provider.py, `_ChunkStream`): what that
choice saves.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# The stubs live with the test fixtures, which import the app's models.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
import django  # noqa: E402

django.setup()

from mistralai.client.models import CompletionEvent  # noqa: E402
from mistralai.client.utils.eventstreaming import EventStreamAsync  # noqa: E402
from mistralai.client.utils.unmarshal_json_response import unmarshal_json_response  # noqa: E402

from answers.providers import build_prompt, mistral_provider  # noqa: E402
from answers.providers.base import Generation  # noqa: E402
from answers.providers.mistral_provider import MistralProvider  # noqa: E402
from answers.providers.openai_provider import OpenAIProvider  # noqa: E402
from answers.providers.streaming import StreamingProvider  # noqa: E402
from tests.fixtures.mistral_stub import Completion, Item, Ref, StubMistralServer  # noqa: E402
from tests.fixtures.providers import Reply, StubOpenAIServer, retrieved_source  # noqa: E402

TARGET = 1.2
PIECE = 4  # characters per streamed piece, about a token
SENTENCES = [
    ("Zebras live in the grasslands and savannas of eastern and southern Africa", (0,)),
    ("They graze mostly on grasses, moving with the seasons to find fresh growth and water", (1,)),
    ("Herds can number in the thousands during the great migrations across the plains", (0, 2)),
    ("Each zebra's stripes are unique, like a fingerprint, and may help to confuse predators", (3,)),
    ("Foals can stand within an hour of birth and run with the herd soon after that", (1,)),
    ("Plains zebras are the most common species, while Grevy's zebras are endangered today", (4,)),
]
SOURCES = [retrieved_source(n, f"Zebra guide {n}", f"Zebra guide part {n}.") for n in range(1, 6)]
PROMPT = build_prompt("Where do zebras live?", SOURCES, native_citations=True)


def _split(text: str) -> list[str]:
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)]


def replies() -> tuple[Reply, Completion, str]:
    """The same reply for both providers, and the raw text both must yield."""
    raw = "".join(f"{text} [{', '.join(str(i + 1) for i in ids)}]. " for text, ids in SENTENCES)
    items: list[Item] = []
    for text, ids in SENTENCES:
        items += _split(f"{text}. ")
        items += [Ref(i) for i in ids]
    return Reply(pieces=_split(raw), empty_deltas=False), Completion(items=items), raw


def serve() -> None:
    """The child process: both stubs, answering every request with the reply; their URLs on stdout,
    then serving until stdin closes."""
    openai_reply, mistral_reply, _ = replies()
    with StubOpenAIServer(openai_reply) as openai_stub, StubMistralServer(mistral_reply) as mistral_stub:
        print(json.dumps({"openai": openai_stub.base_url, "mistral": mistral_stub.base_url}), flush=True)
        sys.stdin.read()


class ClientEventStream:
    """The chunks as the client's own event stream decodes them (`stream_async`'s EventStreamAsync)."""

    def __init__(self, response: Any) -> None:
        def decode(raw: str) -> CompletionEvent:
            return unmarshal_json_response(CompletionEvent, response, raw)

        self._events = EventStreamAsync(response, decode, sentinel="[DONE]")

    def __aiter__(self) -> ClientEventStream:
        return self

    async def __anext__(self) -> Any:
        return (await self._events.__anext__()).data

    async def close(self) -> None:
        await self._events.close()


class MistralThroughClientEvents(MistralProvider):
    """The mistral provider reading the client's event stream instead of its own _ChunkStream."""

    async def _open(self, client: Any, prompt: Any) -> Any:
        with mock.patch.object(mistral_provider, "_ChunkStream", ClientEventStream):
            return await super()._open(client, prompt)


async def _answers(provider: StreamingProvider, count: int, raw: str) -> tuple[float, float]:
    """CPU and wall seconds for `count` answers, one after another; each must read `raw`."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(count):
        text = "".join([piece async for piece in provider.stream(PROMPT, Generation())])
        assert text == raw, (type(provider).__name__, text)
    return time.process_time() - cpu, time.perf_counter() - wall


async def measure(urls: dict[str, str], answers: int, rounds: int, raw: str) -> dict[str, Any]:
    providers: dict[str, StreamingProvider] = {
        "openai": OpenAIProvider(base_url=urls["openai"], api_key="bench", model="bench", timeout=60),
        "mistral": MistralProvider(base_url=urls["mistral"], api_key="bench", model="bench", timeout=60),
        "mistral_client_events": MistralThroughClientEvents(
            base_url=urls["mistral"], api_key="bench", model="bench", timeout=60
        ),
    }
    for provider in providers.values():  # warm up: clients built, connections open, code paths loaded
        await _answers(provider, 5, raw)
    cpu: dict[str, list[float]] = {name: [] for name in providers}
    wall: dict[str, list[float]] = {name: [] for name in providers}
    for round_ in range(rounds):
        order = list(providers) if round_ % 2 == 0 else list(reversed(providers))
        for name in order:
            # The client's own decoding costs several times the others: a fifth of the answers.
            count = answers if name != "mistral_client_events" else max(1, answers // 5)
            spent_cpu, spent_wall = await _answers(providers[name], count, raw)
            cpu[name].append(spent_cpu / count * 1000)
            wall[name].append(spent_wall / count * 1000)
    return {
        name: {"cpu_ms": statistics.median(cpu[name]), "wall_ms": statistics.median(wall[name])}
        for name in providers
    }


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def report(results: dict[str, Any], *, answers: int, rounds: int, raw: str) -> dict[str, Any]:
    openai, mistral, client_events = results["openai"], results["mistral"], results["mistral_client_events"]
    figures = {
        **results,
        "cpu_ratio": mistral["cpu_ms"] / openai["cpu_ms"],
        "wall_ratio": mistral["wall_ms"] / openai["wall_ms"],
        "target": TARGET,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit(),
        "chars": len(raw),
        "answers": answers,
        "rounds": rounds,
    }
    references = sum(len(ids) for _, ids in SENTENCES)
    lines = [
        "## The mistral provider's cost per answer",
        "",
        f"`bench/bench_mistral.py`, {figures['when']}, commit `{figures['commit']}`, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f} at the end. "
        f"One cited reply of {len(raw):,} characters ({len(SENTENCES)} sentences, {references} references) "
        f"in {PIECE}-character pieces, from each provider's stub server in a child process; "
        f"{answers} answers per round, {rounds} rounds alternating the providers, medians of the rounds.",
        "",
        "| provider | CPU per answer (ms) | wall per answer (ms) |",
        "|---|---:|---:|",
        f"| openai (baseline: markers in the text) | {openai['cpu_ms']:.2f} | {openai['wall_ms']:.2f} |",
        f"| mistral (reference chunks as markers) | {mistral['cpu_ms']:.2f} | {mistral['wall_ms']:.2f} |",
        f"| mistral through the client's own event stream (not used) | {client_events['cpu_ms']:.2f} "
        f"| {client_events['wall_ms']:.2f} |",
        "",
        f"mistral / openai: {figures['cpu_ratio']:.2f}x CPU, {figures['wall_ratio']:.2f}x wall "
        f"(target: within {TARGET}x). Through the client's event stream, which builds a pydantic model "
        f"class per chunk: {client_events['cpu_ms'] / openai['cpu_ms']:.2f}x CPU.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    (BENCH / "RESULTS_mistral.md").write_text(text)
    (BENCH / "RESULTS_mistral.json").write_text(json.dumps(figures, indent=2) + "\n")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--answers", type=int, default=60, help="answers per provider per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    _, _, raw = replies()
    serving = [sys.executable, __file__, "--serve"]
    child = subprocess.Popen(serving, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        urls = json.loads(child.stdout.readline())
        results = asyncio.run(measure(urls, args.answers, args.rounds, raw))
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    report(results, answers=args.answers, rounds=args.rounds, raw=raw)


if __name__ == "__main__":
    main()
