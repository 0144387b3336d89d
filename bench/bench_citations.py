"""Benchmark: (normalize,) strip, finalize on long, marker-dense answers against one regex pass (the floor).

Run: .venv/bin/python bench/bench_citations.py  (prints a Markdown report)
"""

from __future__ import annotations

import builtins
import json
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from summary import head_commit  # (bench/summary.py: the commit a run measures, for BENCHMARKS.md)

from answers.citations import finalize_citations, normalize_markers, strip_out_of_range_markers
from answers.citations.trail import run_steps

RESULTS = Path(__file__).resolve().parent / "RESULTS_citations.md"
SOURCES = [f"source {n}" for n in range(1, 11)]
REPEATS = 9
WORDS = [
    "the",
    "of",
    "answer",
    "source",
    "retrieval",
    "cites",
    "a",
    "that",
    "is",
    "in",
    "for",
    "with",
    "as",
    "on",
    "it",
    "by",
    "this",
]
# Weighted marker forms: mostly plain single markers, as models write them, and
# every other form the grammar has; 9 % of them point past the 10 sources.
FORMS: list[tuple[int, Callable[[random.Random], str]]] = [
    (60, lambda r: f"[{r.randint(1, 10)}]"),
    (8, lambda r: f"[{r.randint(1, 10)}, {r.randint(1, 10)}]"),
    (5, lambda r: f"[{r.randint(1, 5)}-{r.randint(6, 10)}]"),
    (3, lambda r: f"[ {r.randint(1, 10)} ,\t{r.randint(1, 10)} ]"),
    (3, lambda r: f"[0{r.randint(1, 9)}]"),
    (6, lambda r: f"[{r.randint(11, 99)}]"),
    (3, lambda r: f"[{r.randint(1, 10)}, {r.randint(11, 40)}, {r.randint(1, 10)}]"),
    (4, lambda r: f"[{r.randint(1, 10)}][{r.randint(1, 10)}]"),
    (3, lambda r: f"[{r.randint(1, 10)}](https://example.com)"),
    (2, lambda r: f"`[{r.randint(1, 10)}]`"),
    (3, lambda r: f"\\[{r.randint(1, 10)}]"),
]
# Marker dialects (docs/citations.md, normalize_markers), 5 % of the markers of an
# answer that has them ({n}: a source number): each of the six dialects, and near misses.
DIALECT_SHARE = 0.05
DIALECT_TEMPLATES = [
    "\u3010{n}\u3011", "[[{n}]]", "[citation:{n}]", "[doc{n}]", "\u3010{n}\u2020source\u3011", "[^{n}]",
    "\uff3b{n}\uff3d",
    "\u3010ID {n}\u3011",  # not a dialect
    "[ref {n}](https://example.com)",  # a link: refused
]  # fmt: skip
FLOOR = re.compile(r"\[(\d+)\]")


def answer(markers: int, seed: int = 7, dialects: bool = False) -> str:
    """About 55 characters per marker: prose, paragraphs, now and then a fenced block.

    With `dialects`, 5 % of the markers are dialect forms, and every 500th
    paragraph is a footnote definition the model appended.
    """
    rng = random.Random(seed)
    weights = [w for w, _ in FORMS]
    makers = [m for _, m in FORMS]
    parts: list[str] = []
    for i in range(markers):
        parts.append(" ".join(rng.choices(WORDS, k=10)) + " ")
        if dialects and rng.random() < DIALECT_SHARE:
            parts.append(rng.choice(DIALECT_TEMPLATES).format(n=rng.randint(1, 10)))
        else:
            parts.append(rng.choices(makers, weights)[0](rng))
        parts.append("." if i % 3 else ".\n\n")
        if i % 500 == 499:
            parts.append("\n```python\nitems[1] = items[2]  # [3]\n```\n")
        if dialects and i % 500 == 249:
            parts.append(f"\n[^{rng.randint(1, 10)}]: {' '.join(rng.choices(WORDS, k=6))}\n\n")
    return "".join(parts)


def floor(text: str) -> str:
    """One plain regex pass renumbering every `[n]`: the least any finalizer does."""
    renumber = {n: (n * 7) % 10 + 1 for n in range(1, 11)}
    return FLOOR.sub(lambda m: f"[{renumber.get(int(m.group(1)), 0)}]", text)


def pipeline(text: str) -> str:
    stripped = strip_out_of_range_markers(text, len(SOURCES))
    return finalize_citations(stripped.text, SOURCES, cut=stripped.cut).text


def normalized_pipeline(text: str) -> str:
    """The three steps as an answer takes them (trail.run_steps: normalize hands strip where code is)."""
    return run_steps(text, len(SOURCES)).final.text


def median_ms(run: Callable[[], object], repeats: int = REPEATS) -> float:
    """Median CPU time of `run`: other work on a shared machine inflates it less than wall time."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return statistics.median(times) * 1000


def steps(text: str) -> dict[str, Callable[[], object]]:
    stripped = strip_out_of_range_markers(text, len(SOURCES)).text
    return {
        "floor": lambda: floor(text),
        "strip": lambda: strip_out_of_range_markers(text, len(SOURCES)),
        "finalize": lambda: finalize_citations(stripped, SOURCES),
        "both": lambda: pipeline(text),
    }


def steps_with_normalize(text: str) -> dict[str, Callable[[], object]]:
    normalized = normalize_markers(text).text
    return {
        "floor": lambda: floor(text),
        "normalize": lambda: normalize_markers(text),
        "both": lambda: pipeline(normalized),
        "all": lambda: normalized_pipeline(text),
    }


def against_the_floor(runs: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Median times of the floor and of each step, measured in turns so that noise hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(REPEATS):
        for name, run in runs.items():
            times[name].append(median_ms(run, repeats=1))
    out = {name: statistics.median(values) for name, values in times.items()}
    # The fastest run of each, too: what other work on the machine disturbed least (timeit's choice).
    out.update({f"{name}_min": min(values) for name, values in times.items()})
    return out


def main() -> None:
    lines: list[str] = []

    def print(line: str = "") -> None:
        builtins.print(line)
        lines.append(line)

    print(f"Python {sys.version.split()[0]}; CPU time, median of {REPEATS} runs.\n")
    print("### strip + finalize against the floor\n")
    print(
        "| text | markers | floor (ms) | strip (ms) | finalize (ms) | strip + finalize (ms) | ratio "
        "| ratio of the fastest runs |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    figures = {}
    for markers in (5_000, 10_000, 20_000):
        text = answer(markers)
        ms = against_the_floor(steps(text))
        figures = {"mb": len(text) / 1e6, "markers": markers, "floor_ms": ms["floor"], "both_ms": ms["both"],
                   "floor_min_ms": ms["floor_min"], "both_min_ms": ms["both_min"]}  # fmt: skip
        print(
            f"| {len(text) / 1e6:.2f} MB | {markers:,} | {ms['floor']:.1f} | {ms['strip']:.1f} "
            f"| {ms['finalize']:.1f} | {ms['both']:.1f} | {ms['both'] / ms['floor']:.2f}x "
            f"| {ms['both_min'] / ms['floor_min']:.2f}x |"
        )

    text = answer(20_000, dialects=True)
    normalized = normalize_markers(text)
    print("\n### normalize + strip + finalize against the floor, dialects mixed in\n")
    print(
        f"The same kind of answer with 5 % of its markers in dialects: {len(normalized.found):,} rewrites "
        "(footnote definitions included).\n"
    )
    print(
        "| text | markers | floor (ms) | normalize (ms) | strip + finalize (ms) | all three (ms) | ratio "
        "| ratio of the fastest runs |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    ms = against_the_floor(steps_with_normalize(text))
    print(
        f"| {len(text) / 1e6:.2f} MB | 20,000 | {ms['floor']:.1f} | {ms['normalize']:.1f} | {ms['both']:.1f} "
        f"| {ms['all']:.1f} | {ms['all'] / ms['floor']:.2f}x | {ms['all_min'] / ms['floor_min']:.2f}x |"
    )
    figures.update(
        {"normalized_floor_ms": ms["floor"], "normalized_all_ms": ms["all"], "normalize_ms": ms["normalize"],
         "normalized_floor_min_ms": ms["floor_min"], "normalized_all_min_ms": ms["all_min"]}
    )  # fmt: skip

    (RESULTS.parent / "RESULTS_citations.json").write_text(
        json.dumps({"when": _when(), "commit": head_commit(), **figures}, indent=1) + "\n"
    )

    # The streaming engine (answers.citations.LiveDisplay) is measured by bench/bench_live.py.
    print("\n### Adversarial inputs\n")
    print("| input | strip + finalize (ms) |")
    print("|---|---:|")
    adversarial = {
        '`"[" + "1" * 10**6`': "[" + "1" * 10**6,
        '`"[" * 10**6`': "[" * 10**6,
        '`"[1," * 250_000` (no marker)': "[1," * 250_000,
        '`"[" + "1," * 500_000 + "1]"` (one marker)': "[" + "1," * 500_000 + "1]",
        '`"[9" * 333_333 + "]" * 333_333` (a pass per level)': "[9" * 333_333 + "]" * 333_333,
        '`` "`" * 10**6 ``': "`" * 10**6,
        "a run of each length 1..1414, none paired": " ".join("`" * n for n in range(1, 1415)),
        '`` "` " * 500_000 + "[1]" ``': "` " * 500_000 + "[1]",
        "a million runs of lengths 1..5, then [1]": "".join("`" * (1 + k % 5) + " " for k in range(10**6))
        + "[1]",
        '`` "` `` " * 200_000 + "[1]" ``': "` `` " * 200_000 + "[1]",
        '`"\\n```\\n[1]" * 125_000` (fences)': "\n```\n[1]" * 125_000,
        '`"\\\\[1]" * 250_000` (escaped)': "\\[1]" * 250_000,
    }
    for label, text in adversarial.items():
        pipeline_ms = median_ms(lambda text=text: pipeline(text), repeats=3)
        print(f"| {label} ({len(text):,} chars) | {pipeline_ms:.0f} |")

    print("\n### normalize_markers on near-dialects\n")
    print("| input | normalize (ms) |")
    print("|---|---:|")
    near = [
        "[citation:" + "1" * 10**6,  # no closing bracket
        "\u3010" * 10**6,
        "[" * 10**6,
        "[[" + "1," * 500_000,  # a double never closed
        "[1\u2020" * 333_333,  # daggers never closed
        "\u30101\u2020" * 333_333,
        "[ref" * 250_000,
        "[^" + "1" * 10**6,
        "[[1-99]]" * 125_000,  # ranges out of bounds
        "`\u30101\u3011`" * 200_000,  # all in code
        "\u30101\u3011" * 333_333,  # every one rewritten
    ]
    for text in near:
        ms_near = median_ms(lambda text=text: normalize_markers(text), repeats=3)
        print(f"| `{text[:16]!r}`... ({len(text):,} chars) | {ms_near:.0f} |")

    # The hand-written intro and the notes from "### Reading it" on are kept; the tables are replaced.
    old = RESULTS.read_text() if RESULTS.exists() else "## Citations\n"
    intro = old.split("\nPython ", 1)[0].split("\n### ", 1)[0]
    notes = old[old.index("### Reading it") :] if "### Reading it" in old else ""
    RESULTS.write_text(intro.rstrip() + "\n\n" + "\n".join(lines).strip() + "\n\n" + notes)


def _when() -> str:
    load = os.getloadavg()
    return (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}, load average {load[0]:.2f}/{load[1]:.2f} at the end"
    )


if __name__ == "__main__":
    main()
