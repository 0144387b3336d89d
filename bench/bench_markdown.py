"""Benchmark: an answer's Markdown rendering, on the server and in the page.

Server: answers.rendering.render_answer_html (markdown-it-py, the citation plugin, nh3) on a
20 KB Markdown answer with 200 markers (paragraphs, lists, tables, fenced and inline code),
against the renderer it replaced (bench/baseline_rendering.py: paragraphs, line breaks and
citation links only), measured in the same run; target: under 20 ms. CPU time, median.

Page: in Chromium (Debian's, driven by Playwright), the page's own static files
(static/vendor/, static/answers/markdown.js) re-render the same answer as it grows by 100
deltas: AnswerMarkdown.render of the whole text so far, then AnswerMarkdown.patch into the
page, as static/answers/answer.js does. Reported: the time per update (p50/p95), and a paced
run that delivers a delta every 100 ms (ten a second) and renders after every one (the page
itself renders at most every 150 ms, so this is more than it ever does): the renders per second
achieved and how many fell behind. Target: ten deltas a second kept up with.
Run: .venv/bin/python bench/bench_markdown.py  (prints a Markdown report)
"""

from __future__ import annotations

import builtins
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

import baseline_rendering  # noqa: E402
from bench_citations import WORDS, _when, median_ms  # noqa: E402
from markdown_it import MarkdownIt  # noqa: E402

from answers.citations import scan_markers  # noqa: E402
from answers.rendering import clean_html, render_answer_html  # noqa: E402

RESULTS = BENCH / "RESULTS_markdown.md"
CHROMIUM = Path("/usr/bin/chromium")
SOURCES = 10
REPEATS = 21
DELTAS = 100


def markdown_answer(markers: int = 200, seed: int = 21, words_per_item: int = 19) -> str:
    """About 100 characters per marker, in blocks a model writes: paragraphs, lists, tables, code."""
    rng = random.Random(seed)

    def words(k: int) -> str:
        return " ".join(rng.choices(WORDS, k=k))

    def marker() -> str:
        n = rng.randint(1, SOURCES)
        return f"[{n}]" if rng.random() < 0.85 else f"[{n}, {n % SOURCES + 1}]"

    blocks: list[str] = []
    left = markers
    while left > 0:
        kind = rng.choice(["paragraph", "paragraph", "list", "table", "code"])
        if kind == "paragraph":
            blocks.append(
                " ".join(f"{words(words_per_item)} **{words(2)}** `{words(1)}` {marker()}." for _ in range(3))
            )
            left -= 3
        elif kind == "list":
            blocks.append(
                "\n".join(f"- {words(words_per_item)} {marker()}" for _ in range(3)) + f"\n  - {words(6)}"
            )
            left -= 3
        elif kind == "table":
            rows = "\n".join(f"| `{words(1)}` | {words(words_per_item - 4)} {marker()} |" for _ in range(2))
            blocks.append(f"| name | what |\n|:--|--:|\n{rows}")
            left -= 2
        else:
            blocks.append(
                f"```python\nitems[1] = {words(1)!r}  # [1]\nprint(items)\n```\nAs shown {marker()}."
            )
            left -= 1
    return "\n\n".join(blocks)


def server(text: str) -> dict[str, float]:
    count = SOURCES
    markers = scan_markers(text)
    plain = MarkdownIt("commonmark").enable("table")
    rendered = render_answer_html(text, reference_count=count)
    return {
        "baseline": median_ms(
            lambda: baseline_rendering.render_answer_html(text, reference_count=count), REPEATS
        ),
        "scanner": median_ms(lambda: render_answer_html(text, reference_count=count), REPEATS),
        "recorded": median_ms(
            lambda: render_answer_html(text, reference_count=count, markers=markers), REPEATS
        ),
        "markdown_it": median_ms(lambda: plain.render(text), REPEATS),
        "nh3": median_ms(lambda: clean_html(rendered), REPEATS),
        "scan": median_ms(lambda: scan_markers(text), REPEATS),
    }


PAGE_BENCH = """async ({text, deltas, interval}) => {
  const size = Math.ceil(text.length / deltas);
  const pieces = [];
  for (let i = 0; i < text.length; i += size) { pieces.push(text.slice(i, i + size)); }
  const target = document.getElementById("answer");
  const update = (shown) => {
    const started = performance.now();
    window.AnswerMarkdown.patch(target, window.AnswerMarkdown.render(shown, 10));
    return performance.now() - started;
  };
  // Every update as fast as it goes (twice: the first warms the engine up).
  let times = [];
  for (let round = 0; round < 2; round += 1) {
    target.replaceChildren();
    times = [];
    let shown = "";
    for (const piece of pieces) { shown += piece; times.push(update(shown)); }
  }
  // Paced: a delta every `interval` ms, rendered at once.
  target.replaceChildren();
  let shown = "";
  let late = 0;
  let renders = 0;
  const began = performance.now();
  await new Promise((resolve) => {
    let i = 0;
    const tick = () => {
      shown += pieces[i];
      const took = update(shown);
      renders += 1;
      if (took > interval) { late += 1; }
      i += 1;
      if (i < pieces.length) { setTimeout(tick, Math.max(0, interval - took)); } else { resolve(); }
    };
    tick();
  });
  const seconds = (performance.now() - began) / 1000;
  const links = target.querySelectorAll("a.cite").length;
  return {times: times, pieces: pieces.length, renders: renders, seconds: seconds, late: late, links: links};
}"""


def page(text: str) -> dict[str, Any] | None:
    if not CHROMIUM.exists():
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            tab = browser.new_page()
            tab.set_content('<div id="answer"></div>')
            for script in (
                "answers/static/vendor/markdown-it/markdown-it.min.js",
                "answers/static/vendor/dompurify/purify.min.js",
                "answers/static/answers/markdown.js",
            ):
                tab.add_script_tag(path=str(ROOT / script))
            result: dict[str, Any] = tab.evaluate(
                PAGE_BENCH, {"text": text, "deltas": DELTAS, "interval": 100}
            )
            result["version"] = browser.version
        finally:
            browser.close()
    return result


def _met(ok: bool) -> str:
    return "met" if ok else "not met"


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    lines: list[str] = []

    def print(line: str = "") -> None:
        builtins.print(line)
        lines.append(line)

    text = markdown_answer()
    markers = len(scan_markers(text))
    kb = len(text.encode()) / 1024
    print("## Answer rendering (Markdown)\n")
    print(f"Python {sys.version.split()[0]}; the answer: {kb:.1f} KB of Markdown, {markers} markers "
          "(paragraphs with bold and inline code, lists, tables, fenced Python).\n")  # fmt: skip
    print(f"### Server: render_answer_html, CPU time, median of {REPEATS}\n")
    ms = server(text)
    print("| renderer | ms | against the old renderer |")
    print("|---|---:|---:|")
    print(
        f"| the old renderer (paragraphs, line breaks, citation links; baseline) | {ms['baseline']:.2f} "
        "| 1.00x |"
    )
    for key, label in (
        ("scanner", "**Markdown** (markdown-it-py + citation plugin + nh3), markers found by the scanner"),
        ("recorded", "**Markdown**, markers from the trail's record (the `done` event and the permalink)"),
        ("markdown_it", "markdown-it-py alone, no plugin, no sanitizer (the library's floor)"),
        ("nh3", "nh3 alone on the rendered HTML"),
        ("scan", "scan_markers alone"),
    ):
        print(f"| {label} | {ms[key]:.2f} | {ms[key] / ms['baseline']:.2f}x |")
    verdict = "met" if ms["recorded"] < 20 and ms["scanner"] < 20 else "not met"
    print(f"\nTarget: under 20 ms for a 20 KB answer with 200 markers: **{verdict}** "
          f"({max(ms['scanner'], ms['recorded']):.1f} ms).\n")  # fmt: skip

    figures: dict[str, Any] = {"kb": kb, "markers": markers, **{f"server_{k}_ms": v for k, v in ms.items()}}
    result = page(text)
    print("### Page: re-rendering in Chromium as the answer grows\n")
    if result is None:
        print(f"Not measured: {CHROMIUM} is missing.\n")
    else:
        times = result["times"]
        last = times[-10:]
        rate = result["renders"] / result["seconds"]
        print(f"Chromium {result['version']}; {result['pieces']} deltas of about {len(text) // DELTAS} "
              "characters; each update renders the whole text so far and patches it in.\n")  # fmt: skip
        print("| measure | value |")
        print("|---|---:|")
        print(
            f"| time per update, all {len(times)} (p50 / p95) "
            f"| {_quantile(times, 0.5):.1f} / {_quantile(times, 0.95):.1f} ms |"
        )
        print(
            f"| time per update, the last 10 (the last tenth of the answer; p50 / max) "
            f"| {statistics.median(last):.1f} / {max(last):.1f} ms |"
        )
        capacity = 1000 / max(last)
        print(
            f"| updates a second it could do at the full size (1000 / the last 10's max) | {capacity:.0f} |"
        )
        print(f"| paced: a delta every 100 ms, rendered at once: renders a second achieved | {rate:.1f} |")
        print(
            f"| paced: renders that took longer than the 100 ms between deltas "
            f"| {result['late']} of {result['renders']} |"
        )
        print(f"| citation links at the end | {result['links']} |")
        kept = rate >= 9.5
        print(f"\nTarget: keeps up with ten deltas a second on a 20 KB answer: **{_met(kept)}** "
              f"({rate:.1f} renders/s achieved with a render after every delta, ten a second offered; a "
              "render that ran over its 100 ms is caught up by the next). The page itself renders at most "
              "every 150 ms, each render showing every delta so far, so it does fewer renders than this.\n"
              )  # fmt: skip
        figures.update(
            {"page_p50_ms": _quantile(times, 0.5), "page_p95_ms": _quantile(times, 0.95),
             "page_last_max_ms": max(last), "page_paced_rate": rate, "page_late": result["late"],
             "page_renders": result["renders"], "chromium": result["version"]}
        )  # fmt: skip
    print(f"Measured {_when()}.")
    (BENCH / "RESULTS_markdown.json").write_text(json.dumps({"when": _when(), **figures}, indent=1) + "\n")
    RESULTS.write_text("\n".join(lines).strip() + "\n")


if __name__ == "__main__":
    started = time.perf_counter()
    main()
