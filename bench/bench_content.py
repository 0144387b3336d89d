"""A site's own models as content: `reindex` of 10,000 objects, and one save re-indexing its object.

    .venv/bin/python bench/bench_content.py                  # SQLite and PostgreSQL, 10,000 objects
    .venv/bin/python bench/bench_content.py --db sqlite --objects 2000

Runs the example site (tests/example_site: an `articles` app registered in answers_sources.py)
on a fresh database in a child process: a temporary SQLite file, or (PostgreSQL) the
database named by BENCH_POSTGRES_URL's server, created and dropped here.

Measured, each against a baseline of the same run:
- `reindex` of N articles created with bulk_create (no signals, so no document yet), in
  objects per second; baseline: `ingest` of the same N texts as feed records (the path
  files and feeds take), documents per second;
- `reindex` again with nothing changed (every object compared, none written);
- `reindex` with ANSWERS_EMBEDDINGS on, vectors from the stub embeddings server of the
  tests (tests/fixtures/embeddings_server.py) in this process, stub time included;
- one article's save that changes its body, in its own transaction, re-indexed when it commits
  (chunks rebuilt), in ms; baseline: the same save with the model not registered (Django alone).
  Target: under 50 ms on SQLite.
Results: bench/RESULTS_content.md (and .json for the targets table).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from harness import percentile  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS_content.md"
SAVES = 200
WORDS = [
    "garden",
    "compost",
    "hive",
    "queen",
    "orchard",
    "pruning",
    "pond",
    "lighthouse",
    "harbour",
    "kettle",
    "tea",
    "walrus",
    "glacier",
    "river",
    "bridge",
    "station",
    "ticket",
    "museum",
    "library",
    "archive",
    "recipe",
    "bread",
    "flour",
    "yeast",
    "oven",
    "timber",
    "roof",
]


def _body(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(6, 12)):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
        sentences.append(" ".join(words).capitalize() + ".")
    return (
        "# Notes\n\n"
        + " ".join(sentences[: len(sentences) // 2])
        + "\n\n"
        + " ".join(sentences[len(sentences) // 2 :])
    )


def run_one(objects: int) -> dict[str, Any]:
    """Runs in a child process whose settings are the example site's and DATABASE_URL a fresh database."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.test import override_settings

    from answers.content import registry
    from answers.content.indexing import reindex
    from answers.content.ingest import ingest_records
    from answers.content.readers import Record
    from answers.models import Document
    from tests.example_site.articles.answers_sources import ArticleSource
    from tests.example_site.articles.models import Article
    from tests.fixtures.embeddings_server import StubEmbeddingsServer, embeddings_settings

    call_command("migrate", verbosity=0, skip_checks=True)
    rng = random.Random(7)
    bodies = [_body(rng) for _ in range(objects)]
    Article.objects.bulk_create(
        [
            Article(title=f"Article {i}", slug=f"a{i}", body=body, published=True)
            for i, body in enumerate(bodies)
        ],
        batch_size=1000,
    )
    records = [
        Record(f"feed:{i}", {"key": f"feed:{i}", "title": f"Article {i}", "url": "", "body": body})
        for i, body in enumerate(bodies)
    ]

    def timed(fn: Any) -> tuple[Any, float]:
        started = time.perf_counter()
        value = fn()
        return value, time.perf_counter() - started

    report, ingest_s = timed(lambda: ingest_records(records))
    assert report.created == objects, report.summary()
    first, reindex_s = timed(lambda: reindex(embed=False))
    assert first.added == objects, first.summary()
    again, unchanged_s = timed(lambda: reindex(embed=False))
    assert again.unchanged == objects, again.summary()

    # With embeddings: the documents again from nothing, their vectors from the stub (PostgreSQL:
    # only where the server has pgvector).
    embed_per_s: float | None = None
    stored_vectors = 0
    if connection.vendor == "sqlite" or _has_pgvector(connection):
        Document.objects.filter(source="articles.article").delete()
        with (
            StubEmbeddingsServer() as server,
            override_settings(**embeddings_settings(server, ANSWERS_EMBEDDINGS_TIMEOUT=30.0)),
        ):
            embedded, embed_s = timed(reindex)
        assert embedded.embeddings is not None
        assert embedded.embeddings.problem is None, embedded.embeddings
        stored_vectors = embedded.embeddings.stored
        embed_per_s = objects / embed_s

    # One save at a time, each its own transaction, re-indexed as it commits.
    picks = rng.sample(range(objects), SAVES)
    articles = {a.slug: a for a in Article.objects.filter(slug__in=[f"a{i}" for i in picks])}

    def saves() -> tuple[list[float], list[float]]:
        wall, cpu = [], []
        for i in picks:
            article = articles[f"a{i}"]
            article.body = bodies[i] + f"\n\nRevised {uuid.uuid4().hex[:8]} {rng.choice(WORDS)}."
            started, started_cpu = time.perf_counter(), time.process_time()
            with transaction.atomic():
                article.save()
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
        return wall, cpu

    indexed, indexed_cpu = saves()
    key = f"articles.article:{articles[f'a{picks[-1]}'].pk}"
    assert "Revised" in Document.objects.get(key=key).body
    registry.unregister(Article)
    try:
        plain, plain_cpu = saves()
    finally:
        registry.register(Article, ArticleSource)
    with connection.cursor() as cursor:
        cursor.execute("SELECT sqlite_version()" if connection.vendor == "sqlite" else "SHOW server_version")
        version = cursor.fetchone()[0]
    return {
        "db": connection.vendor if connection.vendor == "sqlite" else "postgres",
        "version": version,
        "objects": objects,
        "ingest_per_s": objects / ingest_s,
        "reindex_per_s": objects / reindex_s,
        "reindex_unchanged_per_s": objects / unchanged_s,
        "reindex_embed_per_s": embed_per_s,
        "vectors": stored_vectors,
        "save_p50_ms": statistics.median(indexed),
        "save_p95_ms": percentile(indexed, 0.95),
        "plain_save_p50_ms": statistics.median(plain),
        "plain_save_p95_ms": percentile(plain, 0.95),
        "save_cpu_p50_ms": statistics.median(indexed_cpu),
        "plain_save_cpu_p50_ms": statistics.median(plain_cpu),
        "saves": SAVES,
        "load": os.getloadavg()[0],
    }


def _has_pgvector(connection: Any) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        return cursor.fetchone() is not None


def _child(db: str, objects: int) -> dict[str, Any]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.example_site.settings", "SECRET_KEY": "bench-only"}
    with tempfile.TemporaryDirectory() as tmp:
        admin_url = name = None
        if db == "sqlite":
            env["DATABASE_URL"] = f"sqlite:///{tmp}/bench.sqlite3"
        else:
            import psycopg

            base = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
            parts = urlsplit(base)
            name = f"bench_content_{uuid.uuid4().hex[:8]}"
            admin_url = urlunsplit(parts._replace(path="/postgres"))
            with psycopg.connect(admin_url, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            env["DATABASE_URL"] = urlunsplit(parts._replace(path=f"/{name}"))
        out = Path(tmp) / "result.json"
        try:
            subprocess.run(
                [sys.executable, __file__, "--child", "--out", str(out), "--objects", str(objects)],
                env=env,
                check=True,
                cwd=ROOT,
            )
        finally:
            if admin_url is not None:
                with psycopg.connect(admin_url, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        result: dict[str, Any] = json.loads(out.read_text())
        return result


def _markdown(results: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# Site content: reindex and save",
        "",
        f"`{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, the example site's articles "
        "(tests/example_site), ~700-character Markdown bodies. Objects (or documents) per second; a save is "
        f"one article's body changed in its own transaction, re-indexed as it commits ({SAVES} saves).",
        "",
        "| database | objects | ingest (baseline) | reindex | reindex / ingest | reindex, nothing changed "
        "| reindex with embeddings (stub) | save + re-index p50 / p95 (CPU p50) "
        "| save alone p50 / p95 (CPU p50) | save + re-index / save alone (p50) | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['db']} {r['version']} | {r['objects']:,} | {r['ingest_per_s']:,.0f}/s "
            f"| {r['reindex_per_s']:,.0f}/s "
            f"| {r['reindex_per_s'] / r['ingest_per_s']:.2f}x | {r['reindex_unchanged_per_s']:,.0f}/s "
            + (
                f"| {r['reindex_embed_per_s']:,.0f}/s ({r['vectors']:,} vectors) "
                if r["reindex_embed_per_s"] is not None
                else "| - (no pgvector on this server) "
            )
            + f"| {r['save_p50_ms']:.1f} / {r['save_p95_ms']:.1f} ms ({r['save_cpu_p50_ms']:.1f}) "
            f"| {r['plain_save_p50_ms']:.1f} / {r['plain_save_p95_ms']:.1f} ms "
            f"({r['plain_save_cpu_p50_ms']:.1f}) "
            f"| {r['save_p50_ms'] / r['plain_save_p50_ms']:.1f}x "
            f"| {r['load']:.1f} |"
        )
    sqlite = next((r for r in results if r["db"] == "sqlite"), None)
    if sqlite is not None:
        verdict = "met" if sqlite["save_p50_ms"] < 50 else "not met"
        lines += [
            "",
            f"Target, a save re-indexing one object under 50 ms on SQLite: **{verdict}** "
            f"(p50 {sqlite['save_p50_ms']:.1f} ms, p95 {sqlite['save_p95_ms']:.1f} ms wall clock at load "
            f"{sqlite['load']:.1f}, {sqlite['save_p50_ms'] / sqlite['plain_save_p50_ms']:.1f}x the save "
            f"alone; {sqlite['save_cpu_p50_ms']:.1f} ms of CPU against "
            f"{sqlite['plain_save_cpu_p50_ms']:.1f} ms for the save alone).",
        ]
    lines += [
        "",
        "Wall clock on a 2-core machine shared with other test runs: `load` is the 1-minute load average "
        "at the end of each database's run. Ingest and reindex run minutes apart, so their ratio moves "
        "with the load; the CPU columns are the process's own time.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        Path(args.out).write_text(json.dumps(run_one(args.objects)))
        return
    dbs = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    saved = RESULTS.with_suffix(".json")
    results: list[dict[str, Any]] = json.loads(saved.read_text()) if saved.exists() else []
    for db in dbs:  # each database's row as soon as it is measured; the other's last one is kept
        row = _child(db, args.objects)
        results = sorted([r for r in results if r["db"] != db] + [row], key=lambda r: r["db"] != "sqlite")
        saved.write_text(json.dumps(results, indent=1))
    RESULTS.write_text(_markdown(results, "bench/bench_content.py " + " ".join(sys.argv[1:])))
    print(RESULTS.read_text())


if __name__ == "__main__":
    main()
