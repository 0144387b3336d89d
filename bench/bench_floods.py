"""Benchmark: marker floods and Markdown-structured answers, the live display against the whole text.

Marker floods (they once stalled the SSE path) and code as CommonMark decides it ask the same of
answers/citations: cost linear in the answer. For each text, the whole-text functions
(normalize, strip, finalize: what the JSON path runs) are the baseline, measured in the same
run; the live display (LiveDisplay fed the text in pieces, then closed) should cost about as
much (within 3x), however the text is split. The last row is the 1 MB benchmark answer of
bench_citations.py written with Markdown structure (lists, quotes, tables, fences), where the
whole-text functions are measured against one regex pass (the floor, within 4x).

The per-piece floor: what any display written in Python costs fed the same pieces, whatever it
does with them: a display whose feed() returns one shared empty step (a method call and the
join, per piece). Where it alone exceeds 3x the whole-text functions (64,000 one-character
pieces), the target cannot be met by feeding the display piece by piece; the live display is
then also given as a multiple of that floor (the work it adds per piece). The SSE path never
feeds a character at a time: answers/sse/publish.py feeds the display what arrived since its
last flush.
Run: .venv/bin/python bench/bench_floods.py  (prints a Markdown report)
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

from bench_citations import SOURCES, answer, floor  # noqa: E402

from answers.citations import (  # noqa: E402
    LiveDisplay,
    finalize_citations,
    normalize_markers,
    strip_out_of_range_markers,
)

RESULTS = BENCH / "RESULTS_floods.md"
REPEATS = 3


def whole(text: str, count: int) -> str:
    stripped = strip_out_of_range_markers(normalize_markers(text).text, count)
    return finalize_citations(stripped.text, list(range(1, count + 1)), cut=stripped.cut).text


def live(pieces: list[str], count: int) -> str:
    display = LiveDisplay(count)
    return "".join(display.feed(piece).display for piece in pieces) + display.close().display


class _Floor:
    """The least a live display can do per piece: return one shared empty step."""

    _EMPTY = LiveDisplay(0).close()

    def feed(self, piece: str) -> object:
        return self._EMPTY

    def close(self) -> object:
        return self._EMPTY


def per_piece_floor(pieces: list[str]) -> str:
    display = _Floor()
    return "".join(display.feed(piece).display for piece in pieces) + display.close().display  # type: ignore[attr-defined]


def cpu_ms(run: Callable[[], object], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return statistics.median(times) * 1000


def split(text: str, pieces: int | None = None, size: int | None = None) -> list[str]:
    if size is None:
        assert pieces is not None
        size = -(-len(text) // pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]


def structured(markers: int) -> str:
    """bench_citations' answer, with a list, a quote, a table and fences between its paragraphs."""
    blocks = answer(markers).split("\n\n")
    extra = [
        "- first [1] with `a[2]`\n- second [3]\n\n  ```python\n  items[1] = items[2]\n  ```",
        "> quoted [2] and `b[1]`\n> ~~~\n> print(a[1])\n> ~~~",
        "| key | value |\n|---|---|\n| `a | b` [1] | c [2] |\n| d [9] | `e[3]` |",
        "1. step [1]\n2. step `[2]` [3]",
        "````\ncode [1]\n```\nstill code [2]\n````",
    ]
    out = []
    for i, block in enumerate(blocks):
        out.append(block)
        if i % 25 == 24:
            out.append(extra[(i // 25) % len(extra)])
    return "\n\n".join(out)


def main() -> None:
    lines: list[str] = []

    def print(line: str = "") -> None:
        builtins.print(line)
        lines.append(line)

    cases = [
        ("30 KB of `[1][1]...`, 5 pieces", "[1]" * 10_000, 3, {"pieces": 5}),
        ("30 KB of `[1][1]...`, 5 pieces, no sources", "[1]" * 10_000, 0, {"pieces": 5}),
        ("30 KB of unclosed `[1 `, 5 pieces", "[1 " * 10_000, 3, {"pieces": 5}),
        ("30 KB of unclosed `[1 `, 20-character pieces", "[1 " * 10_000, 3, {"size": 20}),
        ("300 KB of `[1]`, 20-character pieces", "[1]" * 100_000, 3, {"size": 20}),
        ("`[` and 64,000 digits, one character at a time", "[" + "1" * 64_000, 3, {"size": 1}),
        ("`[` and 64,000 digits then `]`, one character at a time", "[" + "1" * 64_000 + "]", 3, {"size": 1}),
    ]
    print(f"Python {sys.version.split()[0]}; CPU time, median of {REPEATS} runs.\n")
    print(
        "| text | whole text (ms) | live display (ms) | ratio | target | per-piece floor (ms) | live / floor |"  # noqa: E501
    )
    print("|---|---:|---:|---:|---|---:|---:|")
    figures = []
    for name, text, count, how in cases:
        pieces = split(text, **how)
        assert live(pieces, count) == whole(text, count)
        base = cpu_ms(lambda: whole(text, count))  # noqa: B023
        mine = cpu_ms(lambda: live(pieces, count))  # noqa: B023
        least = cpu_ms(lambda: per_piece_floor(pieces))  # noqa: B023
        ratio = mine / base
        figures.append({"name": name, "whole_ms": base, "live_ms": mine, "ratio": ratio, "floor_ms": least})
        print(
            f"| {name} | {base:.1f} | {mine:.1f} | {ratio:.2f}x "
            f"| within 3x: {'met' if ratio <= 3 else 'not met'} | {least:.1f} "
            f"| {f'{mine / least:.2f}x' if least > 3 * base else '-'} |"
        )

    text = structured(20_000)
    pieces = split(text, size=20)
    assert live(pieces, len(SOURCES)) == whole(text, len(SOURCES))
    base = cpu_ms(lambda: floor(text))
    all_three = cpu_ms(lambda: whole(text, len(SOURCES)))
    streamed = cpu_ms(lambda: live(pieces, len(SOURCES)), repeats=1)
    print()
    print(
        f"Markdown-structured answer: {len(text) / 1e6:.2f} MB, 20,000 markers, a list, quote, table or "
        "fence every 25 paragraphs.\n"
    )
    print("| floor: one regex pass (ms) | normalize + strip + finalize (ms) | ratio (target 4x) "
          "| live display, 20-character pieces (ms) | live / whole |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|")
    print(
        f"| {base:.1f} | {all_three:.1f} | {all_three / base:.2f}x "
        f"| {streamed:.0f} | {streamed / all_three:.2f}x |"
    )
    result = {"floods": figures, "structured": {"mb": len(text) / 1e6, "floor_ms": base,
              "all_ms": all_three, "live_ms": streamed}}  # fmt: skip
    (BENCH / "RESULTS_floods.json").write_text(json.dumps(result, indent=2) + "\n")
    header = [
        "## Marker floods and Markdown structure (`bench/bench_floods.py`)",
        "",
        (__doc__ or "").strip(),
        "",
    ]
    RESULTS.write_text("\n".join(header + lines) + "\n")


if __name__ == "__main__":
    main()
