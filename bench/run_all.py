"""Run every benchmark, then gather their result sections into BENCHMARKS.md.

make bench          # or: .venv/bin/python bench/run_all.py [--only citations,pipeline]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
ORDER = ["citations", "retrieval", "pipeline"]
HEADER = """# Benchmarks

Speed and memory targets live here, never in tests. Each section is written by
`bench/bench_<name>.py` into `bench/RESULTS_<name>.md`; `make bench` runs them
all and rebuilds this file. Numbers are from this project's 2-core machine;
each benchmark reports its result against a baseline measured in the same run.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default=",".join(ORDER))
    args = parser.parse_args()
    for name in filter(None, args.only.split(",")):
        subprocess.run([sys.executable, str(BENCH / f"bench_{name}.py")], cwd=ROOT, check=True)
    sections = [(BENCH / f"RESULTS_{name}.md").read_text().strip() for name in ORDER]
    (ROOT / "BENCHMARKS.md").write_text(HEADER + "\n" + "\n\n".join(sections) + "\n")


if __name__ == "__main__":
    main()
