"""Offline answers that say what the question asks: the share holding their key sentence, both databases.

    .venv/bin/python bench/bench_answers.py                    # SQLite and PostgreSQL, the labeled set
    .venv/bin/python bench/bench_answers.py --db sqlite
    .venv/bin/python bench/bench_answers.py --heldout          # also the held-out set (measure it once)

The sets: bench/answers_keyed.jsonl (labeled) and bench/answers_keyed_heldout.jsonl
(held out), one question a line over the demo corpus, with the page(s) holding its answer
("documents") and the key phrases a right answer contains ("keys", any one of them). Both
were written and committed before any answerer change they measure; the held-out set is
measured once, at the end (without --heldout its last figures are carried over and marked
so).

Each question is answered as `make run` answers it: retrieval at the default threshold and
source cap, then the extractive provider's compose_answer. The answer holds its key when,
citation markers removed and both compared as lower-case words (letters and digits; quotes,
brackets and other punctuation read as spaces), one of its keys is in it. Also reported:
whether retrieval brought a key page at all (a miss there is retrieval's, not the answerer's)
and the answers' mean length in words (an answerer quoting everything would hold more keys).

Baseline, in the same run: the same questions answered by the tree of BASELINE_COMMIT (the
commit that added the sets, before any answerer change they measure), extracted with `git
archive` into a temporary directory and run the same way on a database of its own.
Each database is fresh (a temporary SQLite file; PostgreSQL database `bench_answers`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
LABELED = BENCH / "answers_keyed.jsonl"
HELDOUT = BENCH / "answers_keyed_heldout.jsonl"
RESULTS = BENCH / "RESULTS_answers.md"
FIGURES = BENCH / "RESULTS_answers.json"
# The commit that added the two sets: the answerer before any change they measure.
BASELINE_COMMIT = "ae7d1cb"
PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
PG_BENCH_DB = "bench_answers"
AIM = 0.85
_MARKER = re.compile(r"\s*\[\d[\d,\s\-–]*\]")
_WORDS = re.compile(r"[a-z0-9]+")


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def words(text: str) -> str:
    """`text` as lower-case words joined by single spaces (underscores and hyphens split words)."""
    return " ".join(_WORDS.findall(text.lower().replace("_", " ")))


def holds_key(answer: str, keys: list[str]) -> bool:
    """Whether the answer, its citation markers removed, holds one of the keys (as words)."""
    said = f" {words(_MARKER.sub('', answer))} "
    return any(f" {words(key)} " in said for key in keys)


def measure(questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Each question answered as `make run` does; the share holding a key, and why the others do not."""
    from answers.conf import MIN_SCORE_DEFAULT, conf
    from answers.models import Document
    from answers.providers.extractive import compose_answer
    from answers.retrieval.pipeline import retrieve

    keys_of = dict(Document.objects.values_list("id", "key"))
    held = retrieved = total_words = 0
    misses: list[dict[str, Any]] = []
    for row in questions:
        sources = retrieve(row["question"], min_score=MIN_SCORE_DEFAULT, max_sources=conf.MAX_SOURCES).sources
        answer = compose_answer(row["question"], sources)
        found = any(keys_of.get(s.document_id) in row["documents"] for s in sources)
        ok = holds_key(answer, row["keys"])
        held += ok
        retrieved += found
        total_words += len(_MARKER.sub("", answer).split())
        if not ok:
            misses.append({"question": row["question"], "retrieved": found, "answer": answer})
    n = len(questions)
    return {
        "questions": n,
        "holds_key": held / n,
        "page_retrieved": retrieved / n,
        "mean_words": total_words / n,
        "misses": misses,
    }


def run_child(heldout: bool) -> dict[str, Any]:
    from corpus import demo_database

    out: dict[str, Any] = {"vendor": demo_database(), "labeled": measure(rows(LABELED))}
    if heldout:
        out["heldout"] = measure(rows(HELDOUT))
    return out


def _database_url(db: str, tmp: str) -> str:
    if db == "sqlite":
        return f"sqlite:///{tmp}/answers.sqlite3"
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {PG_BENCH_DB}")
        admin.execute(f"CREATE DATABASE {PG_BENCH_DB}")
    return f"{PG_ADMIN_URL.rsplit('/', 1)[0]}/{PG_BENCH_DB}"


def _child(db: str, tree: Path, heldout: bool) -> dict[str, Any]:
    """This script's --child run on `db`, importing the answers package of `tree`."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DATABASE_URL": _database_url(db, tmp), "DATABASE_POOL_SIZE": "0"}
        env["BENCH_ANSWERS_TREE"] = str(tree)
        args = [sys.executable, __file__, "--child"] + (["--heldout"] if heldout else [])
        done = subprocess.run(args, env=env, cwd=tree, check=True, capture_output=True, text=True)
        sys.stderr.write(done.stderr)
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result


def _baseline_tree(tmp: str) -> Path:
    """The project as it was at BASELINE_COMMIT, extracted into `tmp` (answers/ and project/)."""
    archive = subprocess.run(
        ["git", "archive", BASELINE_COMMIT, "answers", "project"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
    return Path(tmp)


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    dirty = " (answers/ modified)" if git("status", "--porcelain", "answers") else ""
    return git("rev-parse", "--short", "HEAD") + dirty


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _markdown(results: dict[str, Any], command: str, when: str) -> str:
    labeled, held = rows(LABELED), rows(HELDOUT)
    lines = [
        "## Offline answers: the key sentence (`bench/bench_answers.py`)",
        "",
        f"`{command}`, {when}, commit {results['commit']} against the baseline {BASELINE_COMMIT} (the "
        "answerer before any change these sets measure), both run in this run, "
        f"{os.cpu_count()} CPUs. The share of offline answers (`make run`'s: retrieval at the default, "
        "then the extractive provider) holding the key sentence or phrase a right answer contains "
        f"(bench/answers_keyed.jsonl, {len(labeled)} questions; held out: "
        f"bench/answers_keyed_heldout.jsonl, {len(held)}, measured once). Aim: {_pct(AIM)} on the labeled "
        "set. Page retrieved: retrieval brought a page holding the key at all (otherwise the miss is "
        "retrieval's). Words: the answers' mean length.",
        "",
        "| database | set | before: holds its key | after: holds its key | page retrieved "
        "| words before / after |",
        "|---|---|---|---|---|---|",
    ]
    for db, got in results["dbs"].items():
        for part, name in (("labeled", "labeled"), ("heldout", "held out")):
            after, before = got["after"].get(part), got["before"].get(part)
            if after is None or before is None:
                continue
            carried = " (carried from an earlier run)" if after.get("carried") else ""
            lines.append(
                f"| {db} | {name}{carried} | {_pct(before['holds_key'])} | {_pct(after['holds_key'])} "
                f"| {_pct(after['page_retrieved'])} "
                f"| {before['mean_words']:.0f} / {after['mean_words']:.0f} |"
            )
    for db, got in results["dbs"].items():
        for part, name in (("labeled", "labeled"), ("heldout", "held out")):
            after = got["after"].get(part)
            if after is None or after.get("carried"):
                continue
            lines += ["", f"Answers without their key now ({name}, {db}):", ""]
            lines += [
                f"- {m['question']}{'' if m['retrieved'] else ' (no key page retrieved)'}: {m['answer']}"
                for m in after["misses"]
            ] or ["- none"]
    return "\n".join(lines) + "\n"


def _strip(point: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in point.items() if k != "misses"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--heldout", action="store_true", help="also the held-out set (measure it once)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, os.environ["BENCH_ANSWERS_TREE"])
        print(json.dumps(run_child(args.heldout)))
        return
    dbs = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    carried = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    results: dict[str, Any] = {"commit": _commit(), "dbs": {}}
    with tempfile.TemporaryDirectory(prefix="bench-answers-baseline-") as tmp:
        baseline = _baseline_tree(tmp)
        for db in dbs:
            after, before = _child(db, ROOT, args.heldout), _child(db, baseline, args.heldout)
            if not args.heldout and "heldout" in carried.get(db, {}).get("after", {}):
                for side, got in (("after", after), ("before", before)):
                    got["heldout"] = {**carried[db][side]["heldout"], "carried": True}
            results["dbs"][db] = {"after": after, "before": before}
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    command = ("bench/bench_answers.py " + " ".join(sys.argv[1:])).strip()
    text = _markdown(results, command, when)
    print(text)
    RESULTS.write_text(text)
    figures = {
        db: {side: {part: _strip(p) for part, p in got[side].items() if part != "vendor"} for side in got}
        for db, got in results["dbs"].items()
    }
    FIGURES.write_text(json.dumps({"when": when, "commit": results["commit"], **figures}, indent=2) + "\n")


if __name__ == "__main__":
    main()
