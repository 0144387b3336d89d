"""Benchmark: the live display engine per answer against the raw coalescing it rides on, and what it holds.

The raw coalescing is what the SSE path does with each piece anyway: append it
to a list and join the list when the deltas go out. The engine gets the same
pieces. Run: .venv/bin/python bench/bench_live.py  (prints a Markdown report)
"""

from __future__ import annotations

import builtins
import json
import sys
from pathlib import Path

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
    (BENCH / "RESULTS_live.json").write_text(json.dumps({"when": _when(), **figures}, indent=1) + "\n")
    RESULTS.write_text("## Live display\n\n" + "\n".join(lines).strip() + "\n")


if __name__ == "__main__":
    main()
