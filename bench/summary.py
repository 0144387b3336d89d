"""The targets table of BENCHMARKS.md, built from the figures the benchmarks saved (bench/RESULTS_*.json).

.venv/bin/python bench/summary.py      # prints it; run_all.py puts it at the top of BENCHMARKS.md
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
if str(BENCH.parent) not in sys.path:
    sys.path.insert(0, str(BENCH.parent))

from answers.conf import MAX_GENERATING_DEFAULT  # noqa: E402

DBS = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
# bench_relevance.py --db all: a private PostgreSQL 18 with pgvector, for the dense figures only.
DENSE_ONLY_DBS = {"pgvector": "PostgreSQL 18 + pgvector"}
HELD_OUT_SETS = (
    ("heldout", "held-out set"),
    ("heldout2", "second held-out set"),
    ("heldout3", "third held-out set"),
    ("heldout4", "fourth held-out set"),
    ("heldout5", "fifth held-out set"),
    ("heldout6", "sixth held-out set"),
)


def _load(name: str) -> Any:
    path = BENCH / f"RESULTS_{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


class _Rows(list[list[str]]):
    """The table's rows, each remembering which benchmark's results it was built from (`sources`)."""

    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []
        self.source = ""  # the results the rows appended now come from

    def load(self, name: str) -> Any:
        """_load(name); the rows appended from now on come from it."""
        self.source = name
        return _load(name)

    def append(self, row: list[str]) -> None:
        super().append(row)
        self.sources.append(self.source)

    def __iadd__(self, rows: Iterable[list[str]]) -> _Rows:  # type: ignore[override,misc]
        for row in rows:
            self.append(row)
        return self


# The code each benchmark measures: its rows are stale once a commit after their run changed any of it.
# The page's static files (answers/static) count only where a benchmark names them: the others
# measure the server, which never runs them.
CODE = {
    "citations": ["answers/citations", "bench/bench_citations.py"],
    "floods": ["answers/citations", "bench/bench_floods.py"],
    "retrieval": ["answers/retrieval", "bench/bench_retrieval.py"],
    "relevance": ["answers/retrieval", "answers/providers/extractive.py", "bench/bench_relevance.py"],
    "latency": ["answers", "project", "bench/bench_latency.py"],
    "events": ["answers/sse", "bench/bench_events.py"],
    "streams": ["answers/sse", "answers/db.py", "project", "bench/bench_streams.py"],
    "concurrency": ["answers", "project", "bench/bench_concurrency.py"],
    "pipeline": ["answers", "bench/bench_pipeline.py", "bench/bench_concurrency.py"],
    "markdown": [
        "answers/rendering.py",
        "answers/static/answers/markdown.js",
        "answers/static/vendor/markdown-it",
        "bench/bench_markdown.py",
    ],
    "decline": ["answers", "bench/bench_decline.py"],
    "conversations": ["answers/conversations", "answers/pipeline", "bench/bench_conversations.py"],
    "hostile": ["answers", "project", "bench/bench_hostile.py"],
    "content": ["answers/content", "answers/retrieval", "bench/bench_content.py"],
    "cohere": ["answers/providers", "bench/bench_cohere.py"],
    "mistral": ["answers/providers", "bench/bench_mistral.py"],
    "evaluation": ["answers", "bench/bench_evaluation.py"],
    "answers": ["answers/retrieval", "answers/providers/extractive.py", "bench/bench_answers.py"],
    "capacity": ["answers", "project", "bench/bench_capacity.py"],
}

STATIC = "answers/static"


def _git(*args: str) -> str:
    """git's output in the repository ("" where git or the history is not there)."""
    try:
        done = subprocess.run(["git", *args], cwd=BENCH.parent, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return done.stdout.strip()


def head_commit() -> str:
    """The commit the working tree is at, as a benchmark run records it ("+changes": not committed)."""
    commit = _git("rev-parse", "--short", "HEAD")
    changed = _git("status", "--porcelain", "--untracked-files=no", "--", "answers", "project")
    return commit + ("+changes" if commit and changed else "")


def measured(name: str) -> str:
    """When and on which commit a benchmark's results were measured, and whether its code changed since."""
    data = _load(name)
    first = data[0] if isinstance(data, list) and data else data
    stored = f"bench/RESULTS_{name}.json"
    commit = (first.get("commit") if isinstance(first, dict) else None) or _git(
        "log", "-1", "--format=%h", "--", stored
    )
    when = first.get("when") if isinstance(first, dict) else None
    date = when[:10] if isinstance(when, str) else _git("log", "-1", "--format=%cs", "--", stored)
    if not commit:
        return date or "-"
    base = commit.split("+", 1)[0]
    code = CODE.get(name, ["answers"])
    if not any(path.startswith(STATIC) for path in code):
        code = [*code, f":(exclude){STATIC}"]
    later = _git("log", "--reverse", "--format=%h", f"{base}..HEAD", "--", *code)
    stale = f"; **stale** since `{later.split()[0]}`" if later else ""
    return f"{date}, `{commit}`{stale}"


def _met(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def _size(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


def _relevance_row(
    name: str, now: dict[str, Any], before: dict[str, Any], matched: dict[str, Any] | None = None
) -> list[str]:
    """A row of the relevance aims: the current scorer at its default against the old one at 0.10
    and, when measured, at the threshold where it declines 90 % of the labeled off-topic questions
    (`matched`: the two scorers at equal declines)."""
    at_equal = (
        ""
        if matched is None
        else f"; at {matched['threshold']:.2f} (declines {matched['declined_recall']:.0%}): right first "
        f"{matched['right_first']:.0%}, paraphrase top-5 {matched['paraphrase_top5']:.0%}"
    )
    paraphrases = (
        ""
        if now["paraphrase_top5"] >= before["paraphrase_top5"]
        else "; paraphrase top-5: **not met** against 0.10"
        + (
            ""
            if matched is None
            else " ("
            + ("met" if now["paraphrase_top5"] >= matched["paraphrase_top5"] else "**not met**")
            + " at equal declines)"
        )
    )
    return [f"relevance, {name}, threshold {now['threshold']:.2f}",
            f"old scorer at 0.10: declined {before['declined_recall']:.0%}, right first "
            f"{before['right_first']:.0%}, paraphrase top-5 {before['paraphrase_top5']:.0%}" + at_equal,
            "off-topic declined >= 90 %, on-topic right first >= 95 %, no loss on paraphrase top-5",
            f"declined {now['declined_recall']:.0%} (precision {now['declined_precision']:.0%}), "
            f"right first {now['right_first']:.0%}, paraphrase top-5 {now['paraphrase_top5']:.0%}",
            _met(now["declined_recall"] >= 0.9 and now["right_first"] >= 0.95) + paraphrases]  # fmt: skip


def rows() -> _Rows:
    out = _Rows()
    c = out.load("citations")
    if c:
        ratio = c["both_ms"] / c["floor_ms"]
        fastest = c["both_min_ms"] / c["floor_min_ms"] if "both_min_ms" in c else ratio
        out.append(
            [f"finalize + strip, {c['mb']:.2f} MB answer, {c['markers']:,} markers",
             f"one `re.sub` pass: {c['floor_ms']:.1f} ms (CPU, median)", "within 2x",
             f"{c['both_ms']:.1f} ms = {ratio:.2f}x (median); {fastest:.2f}x (fastest runs)",
             _met(ratio <= 2) + ("" if ratio <= 2 else f" (median); fastest runs: {_met(fastest <= 2)}")]
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
    f = out.load("floods")
    if f:
        for case in f["floods"]:
            verdict = _met(case["ratio"] <= 3)
            floor_ms = case.get("floor_ms")
            if case["ratio"] > 3 and floor_ms and floor_ms > 3 * case["whole_ms"]:
                verdict += (f" (a display that does nothing, fed the same pieces, costs {floor_ms:.1f} ms ="
                            f" {floor_ms / case['whole_ms']:.1f}x; the live display is"
                            f" {case['live_ms'] / floor_ms:.2f}x that floor)")  # fmt: skip
            out.append(
                [f"live display, {case['name']}", f"the whole-text functions: {case['whole_ms']:.1f} ms",
                 "within 3x", f"{case['live_ms']:.1f} ms = {case['ratio']:.2f}x", verdict]
            )  # fmt: skip
        s = f["structured"]
        ratio = s["all_ms"] / s["floor_ms"]
        out.append(
            [f"normalize + strip + finalize, {s['mb']:.2f} MB Markdown-structured answer",
             f"one `re.sub` pass: {s['floor_ms']:.1f} ms", "within 4x",
             f"{s['all_ms']:.1f} ms = {ratio:.2f}x", _met(ratio <= 4)]
        )  # fmt: skip
    r = out.load("retrieval")
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
    lat = out.load("latency")
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
    ev = out.load("events")
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
    st = out.load("streams")
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
    co = out.load("concurrency")
    if co:
        for db, m in co["in_flight"].items():
            base = co.get("baseline", {}).get(db)
            fails = "; ".join(f"{k}: {v}" for k, v in m["failures"].items())
            if base is None:  # figures from before the same-run baseline
                continue
            same_latency = m["p50"] <= 1.1 * base["p50"] and m["wall"] <= 1.1 * base["wall"]
            ok = m["ok"] == co["asks"] and m["peaks"]["threads"] < 50 and same_latency
            out.append(
                [f"{co['asks']} concurrent JSON asks, stub provider {co['provider_s']:g} s ({DBS[db]})",
                 f"Django's thread per request: {base['peaks']['threads']} threads, p50 {base['p50']:.1f} s, "
                 f"all answered in {base['wall']:.1f} s",
                 "under 50 threads, the baseline's latency, none failed",
                 f"{m['ok']}/{co['asks']} done; {m['peaks']['threads']} threads; p50 {m['p50']:.1f} s "
                 f"({m['p50'] / base['p50']:.2f}x), all answered in {m['wall']:.1f} s "
                 f"({m['wall'] / base['wall']:.2f}x)" + (f"; failed: {fails}" if fails else ""),
                 _met(ok)]
            )  # fmt: skip
    rel = out.load("relevance")
    if rel:
        for db, label in {**DBS, **DENSE_ONLY_DBS}.items():
            x = rel.get(db)
            if not x:
                continue
            now, before = x["at_default"], x["before"]
            if db not in DENSE_ONLY_DBS:
                out.append(_relevance_row(f"labeled set ({label})", now, before, x.get("before_chosen")))
            for key, name in HELD_OUT_SETS:
                if key in x and db not in DENSE_ONLY_DBS:
                    out.append(
                        _relevance_row(
                            f"{name} ({label})",
                            x[key]["new"]["at_default"],
                            x[key]["old"]["at_default"],
                            x[key]["old"].get("at_chosen"),
                        )
                    )
            if "answers" in x and db not in DENSE_ONLY_DBS:
                got = x["answers"]
                sets = [("labeled", "labeled")] + [(key, name) for key, name in HELD_OUT_SETS if key in got]
                out.append(
                    [f"offline answer opens with a right document, on-topic ({label})",
                     "retrieval's first source: " + ", ".join(
                         f"{name} {got[key]['retrieved_right_first']:.0%}" for key, name in sets),
                     "report",
                     ", ".join(f"{name} {got[key]['opens_right']:.0%}" for key, name in sets),
                     "reported"]
                )  # fmt: skip
            if "dense" in x:
                dn = x["dense"]
                hybrid = dn["at_default"][f"{dn['weight']:.2f}"]
                out.append(
                    [f"relevance with dense, {dn['model']} ({label}), weight {dn['weight']:.2f}",
                     f"lexical alone: declined {now['declined_recall']:.0%}, right first "
                     f"{now['right_first']:.0%}, paraphrase top-5 {now['paraphrase_top5']:.0%}",
                     "off-topic declined >= 90 %, on-topic right first >= 95 %, no loss on paraphrase top-5",
                     f"declined {hybrid['declined_recall']:.0%}, right first {hybrid['right_first']:.0%}, "
                     f"paraphrase top-5 {hybrid['paraphrase_top5']:.0%}"
                     + "".join(
                         f"; {name}: declined {h['declined_recall']:.0%}, "
                         f"right first {h['right_first']:.0%}, paraphrase top-5 {h['paraphrase_top5']:.0%}"
                         for key, name in HELD_OUT_SETS
                         if (h := dn.get(key, {}).get(f"{dn['weight']:.2f}"))
                     ),
                     _met(hybrid["declined_recall"] >= 0.9 and hybrid["right_first"] >= 0.95)
                     + ("" if hybrid["paraphrase_top5"] >= before["paraphrase_top5"]
                        else "; paraphrase top-5: **not met**")]
                )  # fmt: skip
            if "latency" in x:
                lat = x["latency"]
                out.append(
                    [f"retrieve() p50 at 100k chunks, relevance scorer ({label})",
                     f"old scorer: {lat['old_p50']:.1f} ms", "< 50 ms",
                     f"{lat['new_p50']:.1f} ms ({lat['new_p50'] / lat['old_p50']:.2f}x)",
                     _met(lat["new_p50"] < 50)]
                )  # fmt: skip
                if "asker_rarity" in lat:
                    ar = lat["asker_rarity"]
                    out.append(
                        [f"retrieve() p50 at 100k chunks, rarity over what the asker may read ({label})",
                         f"over every chunk (before issue 44): all public {ar['public_before_p50']:.1f} ms, "
                         f"every tenth document staff-only {ar['closed_before_p50']:.1f} ms ({ar['when']}, "
                         f"commit {ar['commit']}, load average {ar['load']:.1f})",
                         "report the ratio",
                         f"all public {ar['public_p50']:.1f} ms "
                         f"({ar['public_p50'] / ar['public_before_p50']:.2f}x), "
                         f"staff-only tenth {ar['closed_p50']:.1f} ms "
                         f"({ar['closed_p50'] / ar['closed_before_p50']:.2f}x)",
                         "reported"]
                    )  # fmt: skip
                if "bm25_order_p50" in lat:
                    out.append(
                        [f"retrieve() p50 at 100k chunks, candidates ordered by terms held ({label})",
                         f"bm25's order alone: {lat['bm25_order_p50']:.1f} ms", "< 50 ms; report the ratio",
                         f"{lat['new_p50']:.1f} ms ({lat['new_p50'] / lat['bm25_order_p50']:.2f}x)",
                         _met(lat["new_p50"] < 50)]
                    )  # fmt: skip
    pipe = out.load("pipeline")
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
    md = out.load("markdown")
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
    dec = out.load("decline")
    if dec:
        answered, declined = dec["asks"]["answered"], dec["asks"]["declined"]
        coverage, support = dec["records"]["coverage"], dec["records"]["support"]
        out.append(
            ["a declined question (terms in no document), demo corpus, extractive, JSON path",
             f"an answered question: p50 {answered['p50']:.1f} ms", "no provider call; not slower",
             f"{declined['provider_calls']} provider calls in {declined['asks']} asks; p50 "
             f"{declined['p50']:.1f} ms = {declined['p50'] / answered['p50']:.2f}x",
             _met(declined["provider_calls"] == 0 and declined["p50"] <= answered["p50"])]
        )  # fmt: skip
        out.append(
            ["the coverage record of an answer (beside its support record)",
             f"the support record (lexical): p50 {support['p50']:.2f} ms",
             "cheap: < 0.25x the support record",
             f"p50 {coverage['p50']:.2f} ms = {coverage['p50'] / support['p50']:.2f}x",
             _met(coverage["p50"] < 0.25 * support["p50"])]
        )  # fmt: skip
    conv = out.load("conversations")
    if conv:
        for db, f in conv["db"].items():
            ratio = f["turn5_p50_ms"] / f["turn1_p50_ms"]
            out.append(
                [f"`POST` -> `references`, turn 5 of a conversation vs turn 1 ({DBS[db]}, stub provider)",
                 f"turn 1 p50 {f['turn1_p50_ms']:.1f} ms", "a follow-up costs its rewrite only: within 1.5x",
                 f"turn 5 p50 {f['turn5_p50_ms']:.1f} ms = {ratio:.2f}x, p95 {f['turn5_p95_ms']:.1f} ms "
                 f"({f['complete']}/{f['conversations']} conversations)", _met(ratio <= 1.5)]
            )  # fmt: skip
        a = conv["assembly"]
        out.append(
            ["history assembly, 20 turns (markers removed, budget, prompt)",
             f"the prompt without history: {a['floor_p50_us']:.0f} µs", "< 1 ms",
             f"p50 {a['history_p50_us']:.0f} µs, p95 {a['history_p95_us']:.0f} µs",
             _met(a["history_p50_us"] < 1000)]
        )  # fmt: skip
    out.source = "hostile"
    out += _hostile_rows()
    out.source = "content"
    out += _content_rows()
    out.source = "cohere"
    out += _cohere_rows()
    out.source = "mistral"
    out += _provider_rows()
    out.source = "evaluation"
    out += _evaluation_rows()
    out.source = "answers"
    out += _answers_rows()
    out.source = "capacity"
    out += _capacity_rows()
    return out


def _capacity_rows() -> list[list[str]]:
    """bench_capacity.py: SSE and JSON asks at once on one process, at today's default admission limit."""
    c = _load("capacity")
    out: list[list[str]] = []
    if not c:
        return out
    for db in DBS:
        runs = {r["limit"]: r for r in c["runs"] if r["db"] == db}
        base, m = runs.get(0), runs.get(MAX_GENERATING_DEFAULT)
        if base is None or m is None:
            continue
        ok = m["done"] == m["taken"] > 0 and m["p95_x"] <= 2 and m["healthz_p99"] < 0.25
        out.append(
            [f"{c['sse']} SSE + {c['json']} JSON asks at once, provider {c['provider_s']:g} s, one process "
             f"({DBS[db]}), `ANSWERS_MAX_GENERATING={MAX_GENERATING_DEFAULT}` (the default)",
             f"no limit: {base['done']}/{base['taken']} done, p95 {base['p95']:.0f} s "
             f"({base['p95_x']:.1f}x the provider), `/healthz` p99 {base['healthz_p99'] * 1000:.0f} ms",
             "every answer taken done, p95 within 2x the provider's time, `/healthz` p99 < 250 ms",
             f"{m['taken']} taken, {m['refused']} refused (503); {m['done']} done, p95 {m['p95']:.1f} s "
             f"({m['p95_x']:.2f}x), `/healthz` p99 {m['healthz_p99'] * 1000:.0f} ms",
             _met(ok)]
        )  # fmt: skip
    return out


def _cohere_rows() -> list[list[str]]:
    co = _load("cohere")
    if not co:
        return []
    openai, cohere = co["paths"]["openai"], co["paths"]["cohere"]
    return [
        [f"cohere provider, CPU per answer ({co['chars']:,} characters, {co['citations']} citations; "
         "official client + adapter)",
         f"the openai path, same reply, same run: {openai['cpu']:.1f} ms", f"within {co['target']}x",
         f"{cohere['cpu']:.1f} ms = {co['ratio']:.2f}x (the adapter's own reader: "
         f"{co['parts']['cohere']['read']:.2f} ms); {co['when'].split(',')[0]}, commit `{co['commit']}`",
         _met(co["ratio"] <= co["target"])]
    ]  # fmt: skip


def _evaluation_rows() -> list[list[str]]:
    """bench_evaluation.py: a run's overhead per item, its concurrency, the demo set offline."""
    e = _load("evaluation")
    if not e:
        return []
    o, c = e["overhead"], e["concurrency"]
    rows = [
        ["`evaluate`, per item (SQLite, demo corpus, offline, `--concurrency 1`)",
         f"the JSON API until the support record is stored: {o['api_ms']:.0f} ms", "within 1.2x",
         f"{o['run_ms']:.0f} ms = {o['ratio']:.2f}x", _met(o["ratio"] <= 1.2)],
        ["`evaluate`, 100 items, a 1 s provider, `--concurrency 10` (SQLite)",
         f"provider time / 10: {c['floor_s']:.0f} s", "< 15 s",
         f"{c['span_s']:.1f} s (the run's own work alone, provider at once: {c['own_work_s']:.1f} s)",
         _met(c["span_s"] < 15)],
    ]  # fmt: skip
    demo = e["demo"].get("sqlite")
    if demo:
        rows.append(
            ["`evaluate demo` (142 items), offline provider (SQLite)", "—", "< 1 minute",
             f"{demo['span_s']:.1f} s", _met(demo["span_s"] < 60)]
        )  # fmt: skip
    return rows


def _hostile_rows() -> list[list[str]]:
    """bench_hostile.py: floods on both paths with /healthz timed, and a maximal answer's reads."""
    h = _load("hostile")
    out: list[list[str]] = []
    for db, label in DBS.items():
        data = (h or {}).get("db", {}).get(db)
        if not data:
            continue
        runs, reads = data["runs"], data["reads"]
        floods = [name for name in runs if name.startswith("flood")]
        health = max(runs[name][path]["health_max"] for name in floods for path in ("json", "sse"))
        base_health = max(runs["baseline"][path]["health_max"] for path in ("json", "sse"))
        ratios = ", ".join(
            f"{name.split(' ', 1)[1]}: {runs[name]['sse']['seconds'] / runs[name]['json']['seconds']:.1f}x"
            for name in floods
        )
        out.append(
            [f"{label}: `/healthz` during 30 KB marker floods (both paths)",
             f"during an ordinary answer: max {base_health * 1000:.0f} ms", "well under 1 s",
             f"max {health * 1000:.0f} ms; SSE path vs JSON path on the same flood: {ratios}",
             _met(health < 0.5)]
        )  # fmt: skip
        cases = [name for name in runs if name != "baseline"]
        path_ratios = {name: runs[name]["sse"]["seconds"] / runs[name]["json"]["seconds"] for name in cases}
        ordinary = runs["baseline"]["sse"]["seconds"] / runs["baseline"]["json"]["seconds"]
        out.append(
            [f"{label}: the SSE path vs the JSON path on the same reply (POST to its end)",
             f"an ordinary answer: {ordinary:.1f}x",
             "~1x",
             "; ".join(f"{name}: {ratio:.1f}x" for name, ratio in path_ratios.items()),
             _met(max(path_ratios.values(), default=0) <= 1.25)]
        )  # fmt: skip
        slowest = max(
            (reads[name][what], name, what)
            for name in reads
            if name != "baseline"
            for what in ("api", "page", "replay")
        )
        out.append(
            [f"{label}: reading a maximal answer (100,000 characters; API, permalink, replay)",
             f"an ordinary answer's slowest read: "
             f"{max(reads['baseline'][w] for w in ('api', 'page', 'replay')) * 1000:.0f} ms",
             "< 100 ms",
             f"slowest {slowest[0] * 1000:.0f} ms ({slowest[2]}, {slowest[1]}), at the client",
             _met(slowest[0] < 0.1)]
        )  # fmt: skip
    return out


def _provider_rows() -> list[list[str]]:
    """bench_mistral.py: a native-citation provider's cost per answer against openai's, same reply."""
    m = _load("mistral")
    if not m:
        return []
    return [
        [f"`mistral` provider, cost per answer ({m['chars']:,}-character cited reply; {m['when']}, "
         f"`{m['commit']}`)",
         f"`openai` on the same reply: {m['openai']['cpu_ms']:.1f} ms CPU", f"within {m['target']}x",
         f"{m['mistral']['cpu_ms']:.1f} ms CPU = {m['cpu_ratio']:.2f}x (wall {m['wall_ratio']:.2f}x)",
         _met(m["cpu_ratio"] <= m["target"])]
    ]  # fmt: skip


def _answers_rows() -> list[list[str]]:
    """bench_answers.py: offline answers holding their key sentence, labeled and held out."""
    out: list[list[str]] = []
    answers = _load("answers") or {}
    for db, label in DBS.items():
        got = answers.get(db)
        if not got:
            continue
        parts = [(p, n) for p, n in (("labeled", "labeled"), ("heldout", "held out")) if p in got["after"]]
        out.append(
            [f"offline answer holds its key sentence ({label}, commit {answers['commit']})",
             "the answerer before: "
             + ", ".join(f"{n} {got['before'][p]['holds_key']:.0%}" for p, n in parts),
             ">= 85 % labeled; held out reported",
             ", ".join(f"{n} {got['after'][p]['holds_key']:.0%}" for p, n in parts),
             _met(got["after"]["labeled"]["holds_key"] >= 0.85)]
        )  # fmt: skip
    return out


def _content_rows() -> list[list[str]]:
    """bench_content.py: reindex throughput and a save's re-index."""
    out: list[list[str]] = []
    content = _load("content")
    for r in content or []:
        label = DBS.get(r["db"], r["db"])
        out.append(
            [f"`reindex` of {r['objects']:,} objects ({label})",
             f"`ingest` of the same texts: {r['ingest_per_s']:,.0f} documents/s", "report",
             f"{r['reindex_per_s']:,.0f} objects/s = {r['reindex_per_s'] / r['ingest_per_s']:.2f}x; "
             + (f"with stub embeddings {r['reindex_embed_per_s']:,.0f}/s; "
                if r["reindex_embed_per_s"] is not None else "")
             + f"nothing changed {r['reindex_unchanged_per_s']:,.0f}/s", "reported"]
        )  # fmt: skip
        if r["db"] == "sqlite":
            out.append(
                ["a save re-indexing one object (SQLite)",
                 f"the save alone: {r['plain_save_p50_ms']:.1f} ms p50 "
                 f"({r['plain_save_cpu_p50_ms']:.1f} ms CPU)",
                 "< 50 ms",
                 f"p50 {r['save_p50_ms']:.1f} ms, p95 {r['save_p95_ms']:.1f} ms "
                 f"({r['save_cpu_p50_ms']:.1f} ms CPU) at load {r['load']:.1f}", _met(r["save_p50_ms"] < 50)]
            )  # fmt: skip
    return out


def markdown() -> str:
    lines = [
        "## Targets",
        "",
        "Built by `bench/summary.py` from the figures of the last runs (each section below says when and "
        "under what load it ran). *Measured*: the run's date (UTC) and the commit it measured (or, for a "
        "run that did not record it, the commit that stored its results); **stale** since the first later "
        "commit that changed the code it measures (CODE in bench/summary.py): rerun it to know.",
        "",
        "| what | baseline in the same run | target | result | | measured |",
        "|---|---|---|---|---|---|",
    ]
    table = rows()
    for row, name in zip(table, table.sources, strict=True):
        lines.append("| " + " | ".join([*row, measured(name)]) + " |")
    runs = []
    timed = (
        "citations",
        "pipeline",
        "latency",
        "events",
        "concurrency",
        "markdown",
        "hostile",
        "answers",
        "capacity",
    )
    for name in timed:
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
