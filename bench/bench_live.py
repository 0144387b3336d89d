"""Benchmark: the live display engine per answer against the raw coalescing it rides on, and what it holds.

The raw coalescing is what the SSE path does with each piece anyway: append it
to a list and join the list when the deltas go out. The engine gets the same
pieces. Run: .venv/bin/python bench/bench_live.py  (prints a Markdown report)
"""

from __future__ import annotations

import builtins
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from bench_citations import SOURCES, _when, answer  # noqa: E402

from answers.citations import LiveDisplay  # noqa: E402

RESULTS = BENCH / "RESULTS_live.md"
REPEATS = 7
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


def cpu_ms(run: Callable[[], object], repeats: int = REPEATS) -> float:
    """Median CPU time of `run` in ms (other work on the shared machine inflates it less than wall time)."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return statistics.median(times) * 1000


def main() -> None:
    lines: list[str] = []

    def print(line: str = "") -> None:
        builtins.print(line)
        lines.append(line)

    print(f"Python {sys.version.split()[0]}; CPU time, median of {REPEATS} runs; {PIECE}-character pieces.\n")
    print("### The display engine against the raw coalescing, per answer\n")
    print("| answer | pieces | coalescing (ms) | no dialects (ms) | all dialects (ms) | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    figures: dict[str, float] = {}
    for markers in (40, 2_000, 20_000):
        pieces = pieces_of(answer(markers))
        base = cpu_ms(lambda pieces=pieces: coalesce(pieces))
        plain = cpu_ms(lambda pieces=pieces: display(pieces, ()))
        dialects = cpu_ms(lambda pieces=pieces: display(pieces))
        size = sum(map(len, pieces))
        print(
            f"| {size / 1e3:,.0f} kB, {markers:,} markers | {len(pieces):,} | {base:.2f} | {plain:.2f} "
            f"| {dialects:.2f} | {dialects / base:.0f}x |"
        )
        figures = {"kb": size / 1e3, "coalesce_ms": base, "display_ms": dialects, "ratio": dialects / base}

    print("\n### Per piece\n")
    pieces = pieces_of(answer(20_000))
    prose = pieces_of(" ".join(["the answer cites a source"] * 40_000))
    print("| pieces | coalescing (us/piece) | display (us/piece) |")
    print("|---|---:|---:|")
    samples = {"the 1 MB answer (a marker every ~55 chars)": pieces, "prose, no marker": prose}
    for label, sample in samples.items():
        base = cpu_ms(lambda sample=sample: coalesce(sample), repeats=3) * 1000 / len(sample)
        engine = cpu_ms(lambda sample=sample: display(sample), repeats=3) * 1000 / len(sample)
        print(f"| {label} | {base:.3f} | {engine:.2f} |")

    print("\n### Memory: the longest stretch held back\n")
    print("| answer | length | peak held (chars) |")
    print("|---|---:|---:|")
    stray = "Press the ` key. " + answer(2_000)
    for label, text in (
        ("the 1 MB answer", answer(20_000)),
        ("a stray backtick first (held to the end, by the spec)", stray),
    ):
        print(f"| {label} | {len(text):,} | {peak_held(pieces_of(text)):,} |")
    print(f"\nThe stray-backtick answer takes {cpu_ms(lambda: display(pieces_of(stray)), repeats=3):.0f} ms.")

    (BENCH / "RESULTS_live.json").write_text(json.dumps({"when": _when(), **figures}, indent=1) + "\n")
    old = RESULTS.read_text() if RESULTS.exists() else "## Live display\n"
    intro = old.split("\nPython ", 1)[0].split("\n### ", 1)[0]
    notes = old[old.index("### Reading it") :] if "### Reading it" in old else ""
    RESULTS.write_text(intro.rstrip() + "\n\n" + "\n".join(lines).strip() + "\n\n" + notes)


if __name__ == "__main__":
    main()
