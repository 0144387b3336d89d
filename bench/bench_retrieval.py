"""Retrieval latency (p50/p95) at 1k/10k/100k chunks (1M on SQLite) against the bare full-text query.

    .venv/bin/python bench/bench_retrieval.py                    # quick: both databases, 1k/10k
    .venv/bin/python bench/bench_retrieval.py --full             # 1k/10k/100k both, then 1M on SQLite
    .venv/bin/python bench/bench_retrieval.py --db sqlite --sizes 1000,10000

Each database is a dedicated, freshly migrated one (a temporary SQLite file;
PostgreSQL database `bench_retrieval`, dropped and created again), so nothing
touches the app's data. The synthetic corpus is generated with a fixed seed:
Zipf-distributed made-up words mixed with real English function words and the
keywords the query parser treats as weak ("with", "for", "in"...), ~120 words a
chunk, 10 chunks a document. Questions mix rare, mid-frequency and common
words the way real questions do. Timed: the whole `retrieve()` call (search,
rerank, threshold, cap) and the engine's search alone (from the trace).

Baseline in the same run, on the same database and questions: the backend's
bare top-10 full-text query, no pipeline: the question's terms OR-ed, ranked
by the engine, ten ids (SQLite: `... MATCH '"a" OR "b"' ORDER BY rank LIMIT
10`; PostgreSQL: `WHERE search @@ q ORDER BY ts_rank_cd(search, q) DESC LIMIT
10`). The ratio retrieve / bare is the pipeline's overhead.

Ranking quality is measured on the demo corpus (the Python reference topics):
top-1 accuracy and mean reciprocal rank over the questions below, with the
default reranker and with the lexical score alone.

Results are written as a Markdown section to bench/RESULTS_retrieval.md; rows
are kept per (database, size) in RESULTS_retrieval.json, so a quick run updates
its sizes and keeps the big sizes of the last full run (each row says when).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from corpus import CHUNKS_PER_DOCUMENT, WORDS_PER_CHUNK, Corpus, analyze, insert  # noqa: E402

from answers.conf import MIN_SCORE_DEFAULT  # noqa: E402 - after the path is set

RESULTS = Path(__file__).resolve().parent / "RESULTS_retrieval.md"
ROWS = Path(__file__).resolve().parent / "RESULTS_retrieval.json"
PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
PG_BENCH_DB = "bench_retrieval"

QUERIES = 200

QUALITY_CASES = [
    ("How does the with statement work?", "pydoc:with"),
    ("What does the yield statement do?", "pydoc:yield"),
    ("How do I write a lambda expression?", "pydoc:lambda"),
    ("How are exceptions raised with the raise statement?", "pydoc:raise"),
    ("What is the assert statement for?", "pydoc:assert"),
    ("How does the for loop iterate?", "pydoc:for"),
    ("How do try except finally clauses work?", "pydoc:try"),
    ("What does the global statement declare?", "pydoc:global"),
    ("How does import find and load modules?", "pydoc:import"),
    ("What is operator precedence in Python?", "pydoc:operator-summary"),
    ("Which string methods split text?", "pydoc:string-methods"),
    ("How do format string replacement fields work?", "pydoc:formatstrings"),
    ("How do I use the pdb debugger?", "pydoc:debugger"),
    ("What does nonlocal do?", "pydoc:nonlocal"),
    ("How are class definitions executed?", "pydoc:class"),
    ("What are augmented assignment statements like +=?", "pydoc:augassign"),
    ("What does the while loop do?", "pydoc:while"),
    ("How does the del statement delete names?", "pydoc:del"),
    ("What does the pass statement do?", "pydoc:pass"),
    ("What is truth value testing?", "pydoc:truth"),
    ("How do slicings work?", "pydoc:slicings"),
    ("What are the dictionary mapping types?", "pydoc:typesmapping"),
    ("What is the if statement?", "pydoc:if"),
    ("How does the break statement end a loop?", "pydoc:break"),
    ("How do coroutines and async def work?", "pydoc:async"),
    ("What does the await expression do?", "pydoc:await"),
    ("How do membership tests with in work?", "pydoc:in"),
]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _bare_query(question: str) -> None:
    """The engine's own top-10 for the question's terms OR-ed: no planning, no rerank, no cap."""
    from django.db import connection

    from answers.retrieval.query import fts5_quote, query_terms

    terms = query_terms(question)
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT rowid FROM answers_chunk_fts WHERE answers_chunk_fts MATCH %s ORDER BY rank LIMIT 10",
                [" OR ".join(fts5_quote(t) for t in terms)],
            )
        else:
            one = "plainto_tsquery('answers_english'::regconfig, %s)"
            query = " || ".join([one] * len(terms))  # only constant SQL; the terms are bound parameters
            sql = (
                "SELECT c.id FROM answers_chunk AS c, (SELECT (" + query + ") AS q) AS q"  # noqa: S608
                " WHERE c.search @@ q.q ORDER BY ts_rank_cd(c.search, q.q) DESC LIMIT 10"
            )
            cursor.execute(sql, terms)
        cursor.fetchall()


def _time_queries(questions: list[str]) -> dict[str, float]:
    from answers.retrieval.pipeline import retrieve

    for question in questions[:10]:  # warm caches
        retrieve(question, min_score=MIN_SCORE_DEFAULT, max_sources=5)
        _bare_query(question)
    bare: list[float] = []
    total: list[float] = []
    search: list[float] = []
    candidates: list[int] = []
    for question in questions:
        # In turns, question by question: other load on the machine hits both alike.
        started = time.perf_counter()
        _bare_query(question)
        bare.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        result = retrieve(question, min_score=MIN_SCORE_DEFAULT, max_sources=5)
        total.append((time.perf_counter() - started) * 1000)
        search.append(float(result.trace["timings_ms"]["search"]))
        candidates.append(int(result.trace["candidates"]))
    return {
        "bare_p50": statistics.median(bare),
        "bare_p95": _percentile(bare, 0.95),
        "p50": statistics.median(total),
        "p95": _percentile(total, 0.95),
        "search_p50": statistics.median(search),
        "search_p95": _percentile(search, 0.95),
        "candidates": statistics.mean(candidates),
    }


def _quality() -> dict[str, dict[str, float]]:
    from answers.content.demo import load_demo_corpus
    from answers.models import Document
    from answers.retrieval.pipeline import retrieve
    from answers.retrieval.rerank import LexicalOnlyReranker, LexicalReranker, Reranker

    load_demo_corpus()
    by_id = dict(Document.objects.values_list("id", "key"))
    rerankers: dict[str, Reranker] = {
        "default reranker (coverage-v2)": LexicalReranker(),
        "lexical score only": LexicalOnlyReranker(),
    }
    out = {}
    for name, reranker in rerankers.items():
        top1 = 0
        rr = 0.0
        for question, expected in QUALITY_CASES:
            result = retrieve(question, min_score=0.0, max_sources=10, reranker=reranker)
            keys = [by_id[s.document_id] for s in result.sources if s.document_id is not None]
            top1 += keys[:1] == [expected]
            rr += 1 / (keys.index(expected) + 1) if expected in keys else 0.0
        out[name] = {"top1": top1, "mrr": rr / len(QUALITY_CASES)}
    Document.objects.filter(key__startswith="pydoc:").delete()
    return out


def run_one(db: str, sizes: list[int]) -> dict[str, Any]:
    """Runs inside a child process whose DATABASE_URL points at a fresh bench database."""
    import django

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0, skip_checks=True)
    quality = _quality()
    corpus = Corpus()
    questions = [corpus.question() for _ in range(QUERIES)]
    rows = []
    have = 0
    for size in sizes:
        started = time.perf_counter()
        insert(corpus, have // CHUNKS_PER_DOCUMENT, size - have)
        analyze()
        load_s = time.perf_counter() - started
        have = size
        timing = _time_queries(questions)
        rows.append(
            {
                "chunks": size,
                "load_s": load_s,
                "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                **timing,
            }
        )
        print(f"{db} {size:>7} chunks: {timing}", file=sys.stderr, flush=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT sqlite_version()" if connection.vendor == "sqlite" else "SHOW server_version")
        version = cursor.fetchone()[0]
    return {"db": db, "version": version, "rows": rows, "quality": quality}


def _child(db: str, sizes: list[int]) -> dict[str, Any]:
    import json

    env = dict(os.environ)
    tmp: tempfile.TemporaryDirectory[str] | None = None
    if db == "sqlite":
        tmp = tempfile.TemporaryDirectory()
        env["DATABASE_URL"] = f"sqlite:///{tmp.name}/bench.sqlite3"
    else:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {PG_BENCH_DB}")
            conn.execute(f"CREATE DATABASE {PG_BENCH_DB}")
        env["DATABASE_URL"] = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{PG_BENCH_DB}"
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", db, "--sizes", ",".join(map(str, sizes))],
            env=env,
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        ).stdout
        result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return result
    finally:
        if tmp is not None:
            tmp.cleanup()


def _markdown(results: list[dict[str, Any]], rows: list[dict[str, Any]], command: str) -> str:
    load = os.getloadavg()
    lines = [
        "## Retrieval latency",
        "",
        f"`{command}` (`make bench`: 1k/10k; `make bench-full`: 100k on both and 1M on SQLite), "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average {load[0]:.2f}/{load[1]:.2f} "
        "at the end. One `retrieve()` call = search + rerank (50 candidates) + threshold + cap, at the "
        f"default threshold (ANSWERS_MIN_SCORE {MIN_SCORE_DEFAULT:.2f}); "
        f"{QUERIES} generated questions (2-4 words of mixed frequency, half with a weak keyword) over a "
        f"synthetic Zipf corpus of ~{WORDS_PER_CHUNK}-word chunks (bench/corpus.py). Baseline, timed in "
        "turns with it: the backend's bare top-10 full-text query (terms OR-ed, engine rank, no pipeline). "
        "Targets: p50 < 50 ms at 100k chunks; retrieve / bare < 2x.",
        "",
        "| database | chunks | measured | load (s) | bare top-10 p50 (ms) | bare p95 (ms) "
        "| retrieve p50 (ms) | retrieve p95 (ms) | retrieve / bare (p50) | search p50 (ms) | search p95 (ms) "
        "| candidates (mean) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['name']} | {row['chunks']:,} | {row['when']} | {row['load_s']:.1f} "
            f"| {row['bare_p50']:.1f} | {row['bare_p95']:.1f} | {row['p50']:.1f} | {row['p95']:.1f} "
            f"| {row['p50'] / row['bare_p50']:.2f}x | {row['search_p50']:.1f} | {row['search_p95']:.1f} "
            f"| {row['candidates']:.0f} |"
        )
    lines += [
        "",
        "### Ranking quality on the demo corpus",
        "",
        f"{len(QUALITY_CASES)} questions about the Python reference, each with the topic that should come "
        "first (the same set the tests use, plus the ones still missed).",
        "",
        "| database | ranking | top-1 | MRR@10 |",
        "|---|---|---:|---:|",
    ]
    for result in results:
        for name, q in result["quality"].items():
            lines.append(f"| {result['db']} | {name} | {q['top1']}/{len(QUALITY_CASES)} | {q['mrr']:.3f} |")
    return "\n".join(lines) + "\n"


def _merge(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """This run's rows over the kept ones of earlier runs, by (database, size)."""
    kept: list[dict[str, Any]] = json.loads(ROWS.read_text()) if ROWS.exists() else []
    new = []
    for result in results:
        name = {"sqlite": f"SQLite {result['version']} FTS5", "postgres": f"PostgreSQL {result['version']}"}[
            result["db"]
        ]
        new += [{"db": result["db"], "name": name, **row} for row in result["rows"]]
    fresh = {(r["db"], r["chunks"]) for r in new}
    rows = [r for r in kept if (r["db"], r["chunks"]) not in fresh] + new
    rows.sort(key=lambda r: (r["db"] != "sqlite", r["chunks"]))
    ROWS.write_text(json.dumps(rows, indent=1) + "\n")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite,postgres", help="Comma-separated: sqlite, postgres.")
    parser.add_argument("--sizes", default="1000,10000", help="Chunk counts, ascending.")
    parser.add_argument("--full", action="store_true", help="1k/10k/100k on both databases, 1M on SQLite.")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        print(json.dumps(run_one(args.child, sizes)))
        return
    plan = {db.strip(): sizes for db in args.db.split(",") if db.strip()}
    if args.full:
        plan = {db: [1000, 10000, 100000] + ([1000000] if db == "sqlite" else []) for db in plan}
    results = [_child(db, db_sizes) for db, db_sizes in plan.items()]
    command = "bench/bench_retrieval.py" + (" --full" if args.full else f" --sizes {args.sizes}")
    text = _markdown(results, _merge(results), command)
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
