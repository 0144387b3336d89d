"""The targets table of BENCHMARKS.md, built from the figures the benchmarks saved (bench/RESULTS_*.json).

.venv/bin/python bench/summary.py      # prints it; run_all.py puts it at the top of BENCHMARKS.md
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
DBS = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


def _load(name: str) -> Any:
    path = BENCH / f"RESULTS_{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _met(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def _size(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


def rows() -> list[list[str]]:
    out: list[list[str]] = []
    c = _load("citations")
    if c:
        ratio = c["both_ms"] / c["floor_ms"]
        fastest = c["both_min_ms"] / c["floor_min_ms"] if "both_min_ms" in c else ratio
        out.append(
            [f"finalize + strip, {c['mb']:.2f} MB answer, {c['markers']:,} markers",
             f"one `re.sub` pass: {c['floor_ms']:.1f} ms (CPU, median)", "within 3x",
             f"{c['both_ms']:.1f} ms = {ratio:.2f}x (median); {fastest:.2f}x (fastest runs)",
             _met(ratio <= 3) + ("" if ratio <= 3 else f" (median); fastest runs: {_met(fastest <= 3)}")]
        )  # fmt: skip
        if "normalized_all_ms" in c:
            ratio = c["normalized_all_ms"] / c["normalized_floor_ms"]
            fastest = c["normalized_all_min_ms"] / c["normalized_floor_min_ms"]
            out.append(
                ["normalize + strip + finalize, the same answer with 5 % of its markers in dialects",
                 f"one `re.sub` pass: {c['normalized_floor_ms']:.1f} ms (CPU, median)", "within 3x",
                 f"{c['normalized_all_ms']:.1f} ms = {ratio:.2f}x (median); {fastest:.2f}x (fastest runs)",
                 _met(ratio <= 3) + ("" if ratio <= 3 else f" (median); fastest runs: {_met(fastest <= 3)}")]
            )  # fmt: skip
    f = _load("floods")
    if f:
        for case in f["floods"]:
            out.append(
                [f"live display, {case['name']}", f"the whole-text functions: {case['whole_ms']:.1f} ms",
                 "within 3x", f"{case['live_ms']:.1f} ms = {case['ratio']:.2f}x", _met(case["ratio"] <= 3)]
            )  # fmt: skip
        s = f["structured"]
        ratio = s["all_ms"] / s["floor_ms"]
        out.append(
            [f"normalize + strip + finalize, {s['mb']:.2f} MB Markdown-structured answer",
             f"one `re.sub` pass: {s['floor_ms']:.1f} ms", "within 4x",
             f"{s['all_ms']:.1f} ms = {ratio:.2f}x", _met(ratio <= 4)]
        )  # fmt: skip
    r = _load("retrieval")
    if r:
        for db, label in DBS.items():
            mine = [x for x in r if x["db"] == db]
            if not mine:
                continue
            at100k = next((x for x in mine if x["chunks"] == 100_000), None)
            sizes = ", ".join(
                f"{_size(x['chunks'])}: {x['p50']:.1f}/{x['p95']:.1f} ms ({x['p50'] / x['bare_p50']:.2f}x)"
                for x in mine
            )
            bare = ", ".join(f"{_size(x['chunks'])}: {x['bare_p50']:.1f} ms" for x in mine)
            over = [x for x in mine if x["p50"] / x["bare_p50"] >= 2]
            verdict = (
                _met(at100k["p50"] < 50) + " (p50 at 100k)" if at100k else "100k not measured (`--full`)"
            ) + (
                "; overhead < 2x: " + _met(not over)
                + (f" at {', '.join(_size(x['chunks']) for x in over)}" if over else "")
            )  # fmt: skip
            out.append(
                [f"retrieval p50/p95 ({label}; retrieve / bare)", f"bare top-10 p50: {bare}",
                 "p50 < 50 ms at 100k; pipeline < 2x bare", sizes, verdict]
            )  # fmt: skip
    lat = _load("latency")
    if lat:
        for db, f in lat["db"].items():
            out.append(
                [f"`POST` (stream) -> `references` at the client, {lat['chunks']:,} chunks ({DBS[db]})",
                 f"retrieval alone p50 {f['retrieval_p50_ms']:.1f} ms", "p50 < 100 ms",
                 f"p50 {f['references_p50_ms']:.1f} ms, p95 {f['references_p95_ms']:.1f} ms "
                 f"({f['ok']}/{f['asks']} ok)",
                 _met(f["references_p50_ms"] < 100 and f["ok"] == f["asks"])]
            )  # fmt: skip
        for db, f in lat["db"].items():
            out.append(
                [f"provider's last piece -> `done` at the client ({DBS[db]})", "-", "p50 < 50 ms",
                 f"p50 {f['done_p50_ms']:.1f} ms, p95 {f['done_p95_ms']:.1f} ms", _met(f["done_p50_ms"] < 50)]
            )  # fmt: skip
    ev = _load("events")
    if ev:
        for db, label in DBS.items():
            mine = [x for x in ev["e2e"] if x["db"] == db]
            project = [x for x in mine if x["variant"] == "project"]
            stock = [x for x in mine if x["variant"] == "stock"]
            if not project:
                continue
            raw = ev["raw"].get(db, {}).get("rows", [])

            def rate(rows: list[dict[str, Any]], storage: str) -> str:
                return ", ".join(
                    f"{x['threads']}: {x['events'] / x['seconds']:,.0f}/s"
                    for x in rows
                    if x["storage"] == storage
                )

            stock_raw = rate(raw, "django_eventstream.storage.DjangoModelStorage")
            ours = {x["storage"] for x in raw} - {"django_eventstream.storage.DjangoModelStorage"}
            lost = sum(x["lost"] + x["failed_posts"] for x in project)
            worst = max(x["rate_max"] for x in project)
            result = (
                "per answer " + ", ".join(f"x{x['answers']}: {x['rate_median']:.1f}/s" for x in project)
                + f" (max {worst:.1f}; deltas {max(x['delta_rate_median'] for x in project):.1f}/s); "
                + f"lost: {lost}"
                + (f"; raw append {rate(raw, next(iter(ours)))}" if ours else "")
            )  # fmt: skip
            stock_e2e = ", ".join(f"x{x['answers']}: {x['rate_median']:.1f}/s" for x in stock)
            baseline = f"stock store, raw append (1/4/16 channels) {stock_raw}" + (
                f"; end to end {stock_e2e}" if stock else ""
            )
            out.append(
                [f"stored events/s, 1/4/16 answers streaming at once ({label})", baseline,
                 "no event lost; <= 10 stored events/s per answer", result, _met(lost == 0 and worst <= 10)]
            )  # fmt: skip
    st = _load("streams")
    if st:
        project = [x for x in st if x["variant"] == "project"]
        stock = [x for x in st if x["variant"].startswith("stock")]
        base = "; ".join(
            f"{x['streams']:,} asked: {x['opened']} opened, {x['got_done']} got `done`, "
            f"PG sessions {x['sessions_held']}" for x in stock
        )  # fmt: skip
        for x in project:
            p95 = x.get("first_live_p95_ms") or 1e9
            held_all = x["streams"] >= 2000 and x["got_done"] == x["streams"]
            ok = held_all and p95 < 1000 and x["threads_held"] < 50
            out.append(
                [f"open SSE streams one process holds (PostgreSQL, max_connections 100): {x['streams']:,}"
                 + (" with Redis" if "redis" in x["variant"] else ""),
                 base or "-", "2,000 held, each gets the broadcast, p95 < 1 s; the process under 50 threads",
                 f"{x['opened']:,} opened, {x['got_done']:,} got `done`; broadcast p50/p95 "
                 f"{x.get('first_live_p50_ms')}/{x.get('first_live_p95_ms')} ms (`done` {x['p50_ms']}/"
                 f"{x['p95_ms']} ms); {x['kb_per_stream']} KiB per stream; {x['threads_held']:,} threads "
                 f"({(x['threads_held'] - x['threads_idle']) / max(1, x['opened']):.2f} per stream); "
                 f"PG sessions {x['sessions_held']}",
                 _met(ok) if x["streams"] >= 2000 else "(quick size)"]
            )  # fmt: skip
    co = _load("concurrency")
    if co:
        for db, m in co["in_flight"].items():
            ok = m["ok"] == co["asks"] and m["wall"] < 5
            fails = "; ".join(f"{k}: {v}" for k, v in m["failures"].items())
            out.append(
                [f"{co['asks']} concurrent JSON asks, stub provider {co['provider_s']:g} s ({DBS[db]})",
                 f"the provider's {co['provider_s']:g} s", "all done in < 5 s, none failed",
                 f"{m['ok']}/{co['asks']} done, all answered in {m['wall']:.2f} s"
                 + (f"; failed: {fails}" if fails else ""),
                 _met(ok)]
            )  # fmt: skip
    pipe = _load("pipeline")
    if co or pipe:
        parts = []
        for db, label in DBS.items():
            bits = []
            if pipe and db in pipe["per_second"]:
                bits.append(f"{pipe['per_second'][db]:.1f}/s in-process sequential")
            if co:
                bits += [f"{t['per_s']:.1f}/s over HTTP from {t['clients']} client(s)"
                         for t in co["throughput"] if t["db"] == db]  # fmt: skip
            if bits:
                parts.append(f"{label}: " + ", ".join(bits))
        out.append(
            ["JSON-path answers per second, extractive provider", "-", "report", "; ".join(parts), "reported"]
        )
    md = _load("markdown")
    if md:
        server = max(md["server_scanner_ms"], md["server_recorded_ms"])
        out.append(
            [f"server Markdown rendering (`html`), {md['kb']:.0f} KB answer, {md['markers']} markers",
             f"the old renderer: {md['server_baseline_ms']:.1f} ms (CPU, median)", "< 20 ms",
             f"{server:.1f} ms = {server / md['server_baseline_ms']:.1f}x the old one "
             f"(markdown-it-py alone {md['server_markdown_it_ms']:.1f} ms)", _met(server < 20)]
        )  # fmt: skip
        if "page_paced_rate" in md:
            ok = md["page_paced_rate"] >= 9.5
            out.append(
                [f"the page re-rendering a growing {md['kb']:.0f} KB answer (Chromium)", "-",
                 "keeps up with 10 deltas/s",
                 f"{md['page_paced_rate']:.1f} renders/s paced ({md['page_late']} of {md['page_renders']} "
                 "over 100 ms); "
                 f"per update p50 {md['page_p50_ms']:.1f} ms, p95 {md['page_p95_ms']:.1f} ms", _met(ok)]
            )  # fmt: skip
    return out


def markdown() -> str:
    lines = [
        "## Targets",
        "",
        "Built by `bench/summary.py` from the figures of the last runs (each section below says when and "
        "under what load it ran).",
        "",
        "| what | baseline in the same run | target | result | |",
        "|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows()]
    runs = []
    for name in ("citations", "pipeline", "latency", "events", "concurrency", "markdown"):
        data = _load(name)
        if isinstance(data, dict) and data.get("when"):
            runs.append(f"`bench_{name}.py`: {data['when']}")
    streams = _load("streams") or []
    runs += [f"`bench_streams.py` {x['variant']} x{x['streams']}: {x['when']}" for x in streams]
    if runs:
        lines += ["", "Runs (machine, date, load average when each started):", ""]
        lines += [f"- {r}" for r in runs]
    notes = BENCH / "NOTES.md"
    if notes.exists():
        lines += ["", notes.read_text().strip()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown())
