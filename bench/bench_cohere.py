"""The cohere provider's cost per answer against the openai provider's, on the same reply, in the same run.

    .venv/bin/python bench/bench_cohere.py         # writes bench/RESULTS_cohere.md (+ .json)

One reply: REPLY_SENTENCES sentences (about 1,200 characters) in 4-character pieces, each sentence
cited. The openai stub streams its raw text, `[n]` markers written by the model; the cohere stub
streams the same text without markers, then one `citation-start`/`citation-end` pair per sentence,
as Cohere does. Both providers must give out the same raw text (checked each run).

The stubs (tests/fixtures/providers.py, tests/fixtures/cohere_stub.py: real HTTP, the wire format the
official clients parse) run in a child process, so what is timed here is the app's side only: the
official client (its HTTP, SSE and model parsing) and the adapter (answers/providers/*: the reader,
for cohere the marker placement and the native record). Per answer: `stream()` to its end and the
Generation concluded, CPU time of this process (`time.process_time`) and wall time; RUNS answers of
each provider in turns, after WARMUP. The baseline is the openai path. Then where the time goes, one
answer's events without HTTP: each client building them from their JSON, and the adapter's reader
reading them.

Target: the cohere path within 1.2x the openai path's CPU per answer (p50).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "RESULTS_cohere.md"
RUNS = 300
WARMUP = 20
READER_RUNS = 2000
REPLY_SENTENCES = 24
PIECE = 4
TARGET = 1.2


def _setup() -> None:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(BENCH))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
    import django

    django.setup()


def reply() -> tuple[list[str], list[Any], str]:
    """The cohere pieces, its citations, and the raw text both providers give out."""
    from tests.fixtures.cohere_stub import Cite

    sentences = [
        f"Fact {i}: emperor penguins stand tall in the cold of Antarctica." for i in range(REPLY_SENTENCES)
    ]
    text = " ".join(sentences)
    cites, raw, start = [], [], 0
    for i, sentence in enumerate(sentences):
        number = i % 3 + 1
        cites.append(Cite(start, start + len(sentence), str(number)))
        raw.append(f"{sentence[:-1]} [{number}].")
        start += len(sentence) + 1
    pieces = [text[i : i + PIECE] for i in range(0, len(text), PIECE)]
    return pieces, cites, " ".join(raw)


def serve_stubs() -> None:
    """The child: both stubs, each answering every request with the reply; their URLs on stdout."""
    _setup()
    from tests.fixtures.cohere_stub import Chat, StubCohereServer
    from tests.fixtures.providers import Reply, StubOpenAIServer

    pieces, cites, raw = reply()
    openai_pieces = [raw[i : i + PIECE] for i in range(0, len(raw), PIECE)]
    with (
        StubOpenAIServer(default=Reply(pieces=openai_pieces, empty_deltas=False)) as openai_stub,
        StubCohereServer(default=Chat((*pieces, *cites))) as cohere_stub,
    ):
        print(json.dumps({"openai": openai_stub.base_url, "cohere": cohere_stub.base_url}), flush=True)
        sys.stdin.read()  # until the parent closes it


async def _answer(provider: Any, prompt: Any) -> tuple[str, float, float]:
    from answers.providers.base import Generation

    cpu, wall = time.process_time(), time.perf_counter()
    generation = Generation()
    text = "".join([piece async for piece in provider.stream(prompt, generation)])
    return text, (time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000


async def _paths(urls: dict[str, str]) -> dict[str, Any]:
    from answers.providers import build_prompt
    from answers.providers.cohere_provider import CohereProvider
    from answers.providers.openai_provider import OpenAIProvider
    from tests.fixtures.providers import retrieved_source

    sources = [retrieved_source(n, f"Penguins {n}", "Emperor penguins are the tallest.") for n in (1, 2, 3)]
    providers = {
        "openai": (
            OpenAIProvider(base_url=urls["openai"], api_key="k", model="m"),
            build_prompt("Q?", sources),
        ),
        "cohere": (
            CohereProvider(base_url=urls["cohere"], api_key="k", model="m"),
            build_prompt("Q?", sources, native_citations=True),
        ),
    }
    raw = reply()[2]
    times: dict[str, dict[str, list[float]]] = {name: {"cpu": [], "wall": []} for name in providers}
    for run in range(WARMUP + RUNS):
        for name, (provider, prompt) in providers.items():
            text, cpu, wall = await _answer(provider, prompt)
            assert text == raw, (name, text)
            if run >= WARMUP:
                times[name]["cpu"].append(cpu)
                times[name]["wall"].append(wall)
    return {
        name: {kind: statistics.median(values) for kind, values in measured.items()}
        for name, measured in times.items()
    }


def _parts() -> dict[str, dict[str, float]]:
    """One answer's events, per answer: built from their JSON (cohere: by the adapter, each validated as
    the client's one type its `type` names; openai: by its client, constructed, not validated), then
    read by the adapter's reader."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk

    from answers.providers.base import Generation
    from answers.providers.cohere_provider import _event, _EventReader
    from answers.providers.openai_provider import _ChunkReader
    from answers.providers.streaming import Progress
    from tests.fixtures.cohere_stub import Chat, end_events, stream_events

    pieces, cites, raw = reply()
    chat = Chat((*pieces, *cites))
    body = {"documents": [{"id": str(n), "data": {"title": "t", "snippet": "s"}} for n in (1, 2, 3)]}
    cohere_data = stream_events(chat, body) + end_events(chat)
    openai_data = [
        {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
         "choices": [{"index": 0, "delta": {"content": raw[i : i + PIECE]}, "finish_reason": None}]}
        for i in range(0, len(raw), PIECE)
    ]  # fmt: skip
    cohere_payloads = [json.dumps(d) for d in cohere_data]
    builders = {
        "openai": lambda: [construct_type(type_=ChatCompletionChunk, value=d) for d in openai_data],
        "cohere": lambda: [_event(payload) for payload in cohere_payloads],
    }
    events = {name: build() for name, build in builders.items()}

    def feed(reader: Any, events: list[Any]) -> str:
        out = [piece for event in events for piece in reader.read(event)]
        reader.conclude(Generation())
        return "".join(out)

    readers = {
        "openai": lambda: feed(_ChunkReader(Progress()), events["openai"]),
        "cohere": lambda: feed(_EventReader(3, Progress()), events["cohere"]),
    }
    assert readers["cohere"]() == raw
    assert readers["openai"]() == raw
    times: dict[str, dict[str, list[float]]] = {name: {"build": [], "read": []} for name in readers}
    for run in range(READER_RUNS):
        for name in readers:
            for part, work in (("build", builders[name]), ("read", readers[name])):
                if part == "build" and run % 10:
                    continue  # the clients' building is slow: one run in ten is plenty
                started = time.process_time()
                work()
                times[name][part].append((time.process_time() - started) * 1000)
    return {name: {part: statistics.median(v) for part, v in parts.items()} for name, parts in times.items()}


def _commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()


def _markdown(result: dict[str, Any]) -> str:
    paths, parts = result["paths"], result["parts"]
    openai, cohere = paths["openai"], paths["cohere"]
    rows = [
        ("openai (baseline): `[n]` written by the model", openai, parts["openai"]),
        ("cohere: `citation-start` events, markers placed", cohere, parts["cohere"]),
    ]
    lines = [
        "## Cohere provider: cost per answer",
        "",
        f"`bench/bench_cohere.py`, {result['when']}, commit `{result['commit']}`. One reply of "
        f"{result['chars']:,} characters in {result['pieces']} pieces of {PIECE}, {result['citations']} "
        "citations; the stubs in a child process (real HTTP), this process timed: the official client and "
        f"the adapter, {RUNS} answers of each provider in turns. Same raw text from both (checked). Then "
        "one answer's events alone (no HTTP): their building from their JSON (openai's client; cohere's "
        "adapter, with the client's types), the adapter's "
        "reader reading them.",
        "",
        "| path | CPU per answer p50 (ms) | wall p50 (ms) | events built (ms) | reader (ms) |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {name} | {path['cpu']:.2f} | {path['wall']:.2f} | {part['build']:.2f} | {part['read']:.3f} |"
            for name, path, part in rows
        ),
        "",
        f"Cohere / openai, CPU per answer: {result['ratio']:.2f}x (target within {TARGET}x); wall "
        f"{cohere['wall'] / openai['wall']:.2f}x. Cohere's events are read from the client's response by "
        "the adapter, each validated as the client's one type its `type` names (the client's own stream "
        "validates each against its union of twelve event types); openai's client constructs without "
        "validating. The adapter's own reading, marker "
        f"placement and native record cost {parts['cohere']['read']:.2f} ms an answer "
        f"({parts['cohere']['read'] / cohere['cpu']:.1%} of it; openai's reader "
        f"{parts['openai']['read']:.2f} ms).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    if "--stubs" in sys.argv:
        serve_stubs()
        return
    _setup()
    child = subprocess.Popen(
        [sys.executable, __file__, "--stubs"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None
        urls = json.loads(child.stdout.readline())
        paths = asyncio.run(_paths(urls))
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    import harness

    pieces, cites, raw = reply()
    result = {
        "when": harness.machine(),
        "commit": _commit(),
        "chars": len(raw),
        "pieces": len(pieces),
        "citations": len(cites),
        "paths": paths,
        "parts": _parts(),
        "ratio": paths["cohere"]["cpu"] / paths["openai"]["cpu"],
        "target": TARGET,
    }
    harness.save_figures("cohere", result)
    RESULTS.write_text(_markdown(result))
    print(RESULTS.read_text())


if __name__ == "__main__":
    main()
