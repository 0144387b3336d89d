"""Benchmark: the live display per answer against the raw coalescing it rides on, and what it holds.

Two measures. First, the SSE publisher as it runs (answers.sse.publish.DeltaCoalescer
with the real publish_delta: each event stored by django-eventstream's storage
in a migrated SQLite database, handed to the fanout), per answer, with the
display (LiveDisplay fed every piece, `display` on every delta, a `cite` per
source) against the same coalescer without it (the raw text only): the issue's
1.5x target. Second, the engine alone against a bare list append, per piece,
and the longest stretch it holds back.
Run: .venv/bin/python bench/bench_live.py [--answers N]  (prints a Markdown report)
"""

from __future__ import annotations

import argparse
import asyncio
import builtins
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from bench_citations import REPEATS, SOURCES, _when, answer, median_ms  # noqa: E402

from answers.citations import LiveDisplay  # noqa: E402

RESULTS = BENCH / "RESULTS_live.md"
PIECE = 20  # characters per provider piece, about four tokens


def pieces_of(text: str, size: int = PIECE) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def coalesce(pieces: list[str]) -> int:
    """The raw coalescing: each piece appended, the whole joined once."""
    buffer: list[str] = []
    for piece in pieces:
        buffer.append(piece)
    return len("".join(buffer))


def display(pieces: list[str], dialects: tuple[str, ...] | None = None) -> int:
    """The engine: each piece fed, each display piece appended, the whole joined once."""
    live = LiveDisplay(len(SOURCES), dialects)
    buffer: list[str] = []
    for piece in pieces:
        buffer.append(live.feed(piece).display)
    buffer.append(live.close().display)
    return len("".join(buffer))


def peak_held(pieces: list[str]) -> int:
    live = LiveDisplay(len(SOURCES))
    peak = 0
    for piece in pieces:
        live.feed(piece)
        peak = max(peak, live.held)
    live.close()
    return peak


# --- The publisher per answer, with and without the display ----------------------------

WORDS_PER_PIECE = 1  # a provider piece is about a token: a word and its space
FLUSH_EVERY = (4, 16)  # pieces per published delta (10 deltas a second at 40 or 160 pieces a second)


def setup_django(directory: str) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{directory}/bench_live.sqlite3"
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ["DJANGO_SETTINGS_MODULE"] = "project.settings"
    os.environ.pop("REDIS_URL", None)
    os.environ.pop("GRIP_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def token_pieces(text: str) -> list[str]:
    """The text in pieces of about a token: each word with the blank after it."""
    pieces, start = [], 0
    for i, char in enumerate(text):
        if char in " \n" and i + 1 > start:
            pieces.append(text[start : i + 1])
            start = i + 1
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def publisher_cpu_ms(pieces: list[str], flush_every: int, display: bool, answers: int) -> list[float]:
    """CPU time (all threads) per answer of the SSE publisher's coalescing and publishing."""
    from answers.retrieval.types import RetrievedSource
    from answers.sse.publish import DeltaCoalescer

    class Coalescer(DeltaCoalescer):
        """The production coalescer, publishing a delta every `flush_every` pieces (the pace of
        a provider at ten deltas a second), with or without the display."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.count = 0

        def _receive(self, piece: str) -> None:
            if display:
                super()._receive(piece)
            else:
                self._pending.append(piece)

        async def add(self, piece: str) -> None:
            self._receive(piece)
            self.count += 1
            if self.count % flush_every == 0:
                await self._flush()

        async def close(self, final_text: str | None = None) -> None:
            if display:
                await super().close(final_text)
            else:
                await self._flush()

    sources = [
        RetrievedSource(n, None, f"Source {n}", f"https://example.org/{n}", "An excerpt.", 0.5, 0.5)
        for n in range(1, len(SOURCES) + 1)
    ]

    async def one() -> None:
        coalescer = Coalescer(uuid.uuid4(), sources, dialects=None)
        for piece in pieces:
            await coalescer.add(piece)
        await coalescer.close()

    times = []
    for _ in range(answers):
        started = time.process_time()
        asyncio.run(one())
        times.append((time.process_time() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=15, help="answers per variant (median reported)")
    args = parser.parse_args()
    lines: list[str] = []

    def print(line: str = "") -> None:
        builtins.print(line)
        lines.append(line)

    print(f"Python {sys.version.split()[0]}; CPU time (process_time, every thread).\n")
    print("### The SSE publisher per answer: with the display against the raw coalescing\n")
    print(
        f"DeltaCoalescer and publish_delta as in production (events stored in SQLite, fanout in process), "
        f"token-sized pieces, a delta every N pieces; median of {args.answers} answers each.\n"
    )
    print("| answer | pieces | N | raw coalescing (ms) | with display (ms) | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    publisher: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-live-") as directory:
        setup_django(directory)
        for markers, label in ((20, "1 kB, 20 markers"), (40, "2 kB, 40 markers")):
            pieces = token_pieces(answer(markers))
            for flush_every in FLUSH_EVERY:
                raw = statistics.median(publisher_cpu_ms(pieces, flush_every, False, args.answers))
                shown = statistics.median(publisher_cpu_ms(pieces, flush_every, True, args.answers))
                cells = [label, str(len(pieces)), str(flush_every), f"{raw:.1f}", f"{shown:.1f}"]
                print("| " + " | ".join(cells) + f" | {shown / raw:.2f}x |")
                if markers == 40 and flush_every == FLUSH_EVERY[0]:
                    publisher = {
                        "publisher_raw_ms": raw,
                        "publisher_display_ms": shown,
                        "publisher_ratio": shown / raw,
                    }

    print(
        "\n### The display engine alone against a list append, per answer "
        f"({PIECE}-character pieces, median of {REPEATS})\n"
    )
    print("| answer | pieces | coalescing (ms) | no dialects (ms) | all dialects (ms) | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    figures: dict[str, float] = {}
    for markers, dialect_markers in ((40, False), (2_000, False), (20_000, False), (20_000, True)):
        pieces = pieces_of(answer(markers, dialects=dialect_markers))
        base = median_ms(lambda pieces=pieces: coalesce(pieces))
        plain = median_ms(lambda pieces=pieces: display(pieces, ()))
        dialects = median_ms(lambda pieces=pieces: display(pieces))
        size = sum(map(len, pieces))
        print(
            f"| {size / 1e3:,.0f} kB, {markers:,} markers{' (5 % dialects)' if dialect_markers else ''} "
            f"| {len(pieces):,} | {base:.2f} | {plain:.2f} "
            f"| {dialects:.2f} | {dialects / base:.0f}x |"
        )
        if not dialect_markers:
            figures = {"kb": size / 1e3, "coalesce_ms": base, "display_ms": dialects}

    print("\n### Per piece\n")
    pieces = pieces_of(answer(20_000))
    prose = pieces_of(" ".join(["the answer cites a source"] * 40_000))
    print("| pieces | coalescing (us/piece) | display (us/piece) |")
    print("|---|---:|---:|")
    samples = {"the 1 MB answer (a marker every ~55 chars)": pieces, "prose, no marker": prose}
    for label, sample in samples.items():
        base = median_ms(lambda sample=sample: coalesce(sample), repeats=3) * 1000 / len(sample)
        engine = median_ms(lambda sample=sample: display(sample), repeats=3) * 1000 / len(sample)
        print(f"| {label} | {base:.3f} | {engine:.2f} |")

    print("\n### Memory: the longest stretch held back\n")
    print("| answer | length | peak held (chars) |")
    print("|---|---:|---:|")
    stray = "Press the ` key. " + answer(2_000)
    for label, text in (
        ("the 1 MB answer", answer(20_000)),
        ("a stray backtick first (held until a run pairs with it)", stray),
    ):
        print(f"| {label} | {len(text):,} | {peak_held(pieces_of(text)):,} |")
    stray_ms = median_ms(lambda: display(pieces_of(stray)), repeats=3)
    print(f"\nThe stray-backtick answer takes {stray_ms:.0f} ms.")

    figures["ratio"] = figures["display_ms"] / figures["coalesce_ms"]
    figures.update(publisher)
    (BENCH / "RESULTS_live.json").write_text(json.dumps({"when": _when(), **figures}, indent=1) + "\n")
    RESULTS.write_text("## Live display\n\n" + "\n".join(lines).strip() + "\n")


if __name__ == "__main__":
    main()
