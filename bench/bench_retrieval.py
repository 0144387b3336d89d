"""Retrieval latency (p50/p95) at 1k/10k/100k chunks on SQLite and PostgreSQL, and ranking quality.

    .venv/bin/python bench/bench_retrieval.py                    # both databases, 1k/10k/100k
    .venv/bin/python bench/bench_retrieval.py --db sqlite --sizes 1000,10000

Each database is a dedicated, freshly migrated one (a temporary SQLite file;
PostgreSQL database `bench_retrieval`, dropped and created again), so nothing
touches the app's data. The synthetic corpus is generated with a fixed seed:
Zipf-distributed made-up words mixed with real English function words and the
keywords the query parser treats as weak ("with", "for", "in"...), ~120 words a
chunk, 10 chunks a document. Questions mix rare, mid-frequency and common
words the way real questions do. Timed: the whole `retrieve()` call (search,
rerank, threshold, cap) and the engine's search alone (from the trace).

Ranking quality is measured on the demo corpus (the Python reference topics):
top-1 accuracy and mean reciprocal rank over the questions below, with the
default reranker and with the lexical score alone.

Results are written as a Markdown section to bench/RESULTS_retrieval.md.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "RESULTS_retrieval.md"
PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
PG_BENCH_DB = "bench_retrieval"

CHUNKS_PER_DOCUMENT = 10
WORDS_PER_CHUNK = 120
VOCABULARY = 30000
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

_FUNCTION_WORDS = [
    "the", "of", "and", "to", "a", "in", "is", "for", "with", "as", "on", "that", "by", "this", "from",
    "it", "or", "be", "are", "at", "an", "not", "which", "when", "while", "if", "else", "can", "will",
    "has", "have", "its", "their", "into", "than", "then",
]  # fmt: skip
_SYLLABLES = [
    c + v
    for c in ["b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st", "tr"]
    for v in ["a", "e", "i", "o", "u", "ai", "ou"]
]


class Corpus:
    """A deterministic synthetic corpus: made-up Zipf words among real function words."""

    def __init__(self, seed: int = 20261202) -> None:
        self.rng = random.Random(seed)
        words: set[str] = set()
        while len(words) < VOCABULARY:
            words.add("".join(self.rng.choice(_SYLLABLES) for _ in range(self.rng.randint(2, 4))))
        self.words = sorted(words)
        self.rng.shuffle(self.words)
        # Zipf: the k-th word is drawn with weight 1/k.
        weights = [1.0 / (k + 1) for k in range(len(self.words))]
        total = 0.0
        self.cum: list[float] = []
        for w in weights:
            total += w
            self.cum.append(total)

    def _content_words(self, n: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cum, k=n)

    def chunk_text(self) -> str:
        sentences = []
        words_left = WORDS_PER_CHUNK
        while words_left > 0:
            n = self.rng.randint(8, 20)
            content = self._content_words(n)
            sentence = [
                w if self.rng.random() > 0.4 else f"{self.rng.choice(_FUNCTION_WORDS)} {w}" for w in content
            ]
            sentences.append(" ".join(sentence).capitalize() + ".")
            words_left -= n
        return " ".join(sentences)

    def title(self) -> str:
        return " ".join(self._content_words(self.rng.randint(2, 5))).capitalize()

    def question(self) -> str:
        """Two to four words of varied frequency, half the time with a weak keyword."""
        picks = []
        for _ in range(self.rng.randint(2, 4)):
            # Log-uniform over frequency ranks: as many very common as rare words.
            rank = int(math.exp(self.rng.uniform(math.log(3), math.log(len(self.words) - 1))))
            picks.append(self.words[rank])
        if self.rng.random() < 0.5:
            picks.insert(1, self.rng.choice(["with", "for", "in", "is", "and"]))
        return "How does the " + " ".join(picks) + " work?"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _insert(corpus: Corpus, start_doc: int, chunks: int) -> None:
    from django.db import transaction

    from answers.models import Chunk, Document

    documents = []
    for i in range(start_doc, start_doc + chunks // CHUNKS_PER_DOCUMENT):
        documents.append(
            Document(
                key=f"bench:{i}",
                title=corpus.title(),
                url=f"/bench/{i}/",
                body="(generated)",
                content_hash="bench",
            )
        )
    with transaction.atomic():
        documents = Document.objects.bulk_create(documents, batch_size=2000)
        batch: list[Chunk] = []
        for document in documents:
            for ordinal in range(CHUNKS_PER_DOCUMENT):
                text = corpus.chunk_text()
                batch.append(
                    Chunk(
                        document=document,
                        ordinal=ordinal,
                        heading="",
                        title=document.title,
                        text=text,
                        start_offset=0,
                        end_offset=len(text),
                    )
                )
            if len(batch) >= 5000:
                Chunk.objects.bulk_create(batch, batch_size=2000)
                batch = []
        Chunk.objects.bulk_create(batch, batch_size=2000)


def _analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE answers_chunk")
        else:
            cursor.execute("INSERT INTO answers_chunk_fts(answers_chunk_fts) VALUES('optimize')")
            cursor.execute("ANALYZE")


def _time_queries(questions: list[str]) -> dict[str, float]:
    from answers.retrieval import retrieve

    for question in questions[:10]:  # warm caches
        retrieve(question, min_score=0.1, max_sources=5)
    total: list[float] = []
    search: list[float] = []
    candidates: list[int] = []
    for question in questions:
        started = time.perf_counter()
        result = retrieve(question, min_score=0.1, max_sources=5)
        total.append((time.perf_counter() - started) * 1000)
        search.append(float(result.trace["timings_ms"]["search"]))
        candidates.append(int(result.trace["candidates"]))
    return {
        "p50": statistics.median(total),
        "p95": _percentile(total, 0.95),
        "search_p50": statistics.median(search),
        "search_p95": _percentile(search, 0.95),
        "candidates": statistics.mean(candidates),
    }


def _quality() -> dict[str, dict[str, float]]:
    from answers import content
    from answers.models import Document
    from answers.retrieval.pipeline import retrieve
    from answers.retrieval.rerank import LexicalOnlyReranker, LexicalReranker, Reranker

    content.load_demo_corpus()
    by_id = dict(Document.objects.values_list("id", "key"))
    rerankers: dict[str, Reranker] = {
        "default reranker (lexical-v1)": LexicalReranker(),
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
        _insert(corpus, have // CHUNKS_PER_DOCUMENT, size - have)
        _analyze()
        load_s = time.perf_counter() - started
        have = size
        timing = _time_queries(questions)
        rows.append({"chunks": size, "load_s": load_s, **timing})
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


def _markdown(results: list[dict[str, Any]]) -> str:
    cpus = os.cpu_count()
    lines = [
        "## Retrieval latency",
        "",
        f"`bench/bench_retrieval.py`, {time.strftime('%Y-%m-%d')}, {cpus} CPUs, Python "
        f"{sys.version.split()[0]}. One `retrieve()` call = search + rerank (50 candidates) + threshold + "
        f"cap; {QUERIES} generated questions (2-4 words of mixed frequency, half with a weak keyword) "
        f"over a synthetic Zipf corpus of ~{WORDS_PER_CHUNK}-word chunks. "
        "Target: p50 < 50 ms at 100k chunks.",
        "",
        "| database | chunks | load (s) | retrieve p50 (ms) | retrieve p95 (ms) | search p50 (ms) "
        "| search p95 (ms) | candidates (mean) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        name = {"sqlite": f"SQLite {result['version']} FTS5", "postgres": f"PostgreSQL {result['version']}"}[
            result["db"]
        ]
        for row in result["rows"]:
            lines.append(
                f"| {name} | {row['chunks']:,} | {row['load_s']:.1f} | {row['p50']:.1f} | {row['p95']:.1f} "
                f"| {row['search_p50']:.1f} | {row['search_p95']:.1f} | {row['candidates']:.0f} |"
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


def main() -> None:
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite,postgres", help="Comma-separated: sqlite, postgres.")
    parser.add_argument("--sizes", default="1000,10000,100000", help="Chunk counts, ascending.")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        print(json.dumps(run_one(args.child, sizes)))
        return
    results = [_child(db.strip(), sizes) for db in args.db.split(",") if db.strip()]
    text = _markdown(results)
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
