"""What the server benchmarks share: a real daphne process on SQLite or PostgreSQL, its corpus,
process and database gauges, percentiles and the results files.

The server is tests/fixtures/live_server.py's `running_server()` (daphne
`project.asgi:application` in a subprocess, its own freshly migrated database,
the `openai` provider pointed at a StubOpenAIServer in the bench process),
started with production settings (DEBUG off) and a raised file-descriptor limit.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fixtures.live_server import LiveServer, SeedDocument, running_server  # noqa: E402

PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
REDIS_BENCH_URL = "redis://127.0.0.1:6379/14"

# Production settings (DEBUG off: no query log kept per connection), plain http on loopback.
SERVER_ENV = {
    "DEBUG": "false",
    "SECURE_SSL_REDIRECT": "false",
    "SESSION_COOKIE_SECURE": "false",
    "CSRF_COOKIE_SECURE": "false",
    "LOG_LEVEL": "WARNING",
    "ANSWERS_PROVIDER_TIMEOUT": "60",
}
# django-eventstream as shipped: its DjangoModelStorage and its own events view (bench/stock_settings.py).
# django-eventstream as shipped: its storage and view, and a connection per stream (no pool).
STOCK_ENV = {"DJANGO_SETTINGS_MODULE": "bench.stock_settings", "DATABASE_POOL_SIZE": "0"}

SEED_DOCUMENTS = [
    SeedDocument(
        key=f"https://example.org/zebra-{i}",
        title=f"Zebra habitat guide {i}",
        url=f"https://example.org/zebra-{i}",
        body=f"Zebra habitat guide part {i}. Zebras live in grassland habitat and savanna; note {i}.",
    )
    for i in range(1, 5)
]
# Questions the demo corpus answers, asked in turn by the benchmarks that load it.
DEMO_QUESTIONS = [
    "How does the with statement work?",
    "What does the yield statement do?",
    "How do I write a lambda expression?",
    "How are exceptions raised with the raise statement?",
    "What is the assert statement for?",
    "How does the for loop iterate?",
    "How do try except finally clauses work?",
    "What does the global statement declare?",
    "How does import find and load modules?",
    "What does nonlocal do?",
]


def demo_question(i: int) -> str:
    """The i-th question of a run that asks DEMO_QUESTIONS in turn."""
    return DEMO_QUESTIONS[i % len(DEMO_QUESTIONS)]


SEED_QUESTION = "Zebra habitat guide: where do zebras live?"


def raise_fd_limit() -> int:
    """Soft RLIMIT_NOFILE up to the hard limit, for this process and the servers it starts."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


@contextlib.contextmanager
def server(
    db: str,
    *,
    openai_base_url: str,
    chunks: int = 0,
    stock: bool = False,
    redis: bool = False,
    extra_env: dict[str, str] | None = None,
    documents: Sequence[SeedDocument] = SEED_DOCUMENTS,
) -> Iterator[LiveServer]:
    """A daphne process on a fresh `db` ("sqlite" or "postgres") database with `chunks` synthetic chunks."""
    raise_fd_limit()
    env = {**SERVER_ENV, **(STOCK_ENV if stock else {}), **(extra_env or {})}
    if redis:
        env["REDIS_URL"] = REDIS_BENCH_URL
    saved = os.environ.get("DATABASE_URL")
    # running_server() creates a database of the same kind as this process's DATABASE_URL.
    os.environ["DATABASE_URL"] = PG_ADMIN_URL if db == "postgres" else ""
    try:
        with running_server(openai_base_url=openai_base_url, documents=documents, extra_env=env) as live:
            if chunks:
                load_corpus(live, chunks)
            yield live
    finally:
        if saved is None:
            os.environ.pop("DATABASE_URL", None)
        else:
            os.environ["DATABASE_URL"] = saved


def load_corpus(live: LiveServer, chunks: int) -> float:
    """Bulk-load synthetic chunks into the running server's database (bench/corpus.py); seconds taken."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, str(BENCH / "corpus.py"), "--chunks", str(chunks), "--start-doc", "1000"],
        cwd=ROOT,
        env=live.env,
        check=True,
    )
    return time.perf_counter() - started


def run_django(live: LiveServer, code: str, *, timeout: float = 600) -> str:
    """Run Python code in `manage.py shell` against the server's database and settings; its stdout."""
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=live.env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"manage.py shell failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    return result.stdout


def log_errors(live: LiveServer, limit: int = 3) -> dict[str, int]:
    """The most frequent exception lines in the server's log (what failed, as the server saw it)."""
    import re

    counts: dict[str, int] = {}
    pattern = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Timeout)\w*): (.{0,100})")
    with contextlib.suppress(OSError):
        for line in live.log_path.read_text(errors="replace").splitlines():
            match = pattern.match(line.strip())
            if match:
                key = f"{match.group(1)}: {match.group(2).strip()}"
                counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:limit])


def proc_status(pid: int) -> dict[str, int]:
    """Resident memory (KiB) and thread count of a process, from /proc."""
    out = {"rss_kb": 0, "threads": 0}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                out["rss_kb"] = int(line.split()[1])
            elif line.startswith("Threads:"):
                out["threads"] = int(line.split()[1])
    return out


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far."""
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


class PgGauge:
    """Counts sessions on a server's PostgreSQL database over one connection opened up front
    (so the count still works when the server has taken every other connection slot)."""

    def __init__(self, database_url: str) -> None:
        self.name = urlsplit(database_url).path.lstrip("/")
        self.conn: Any = None
        if database_url.startswith(("postgres://", "postgresql://")):
            import psycopg

            self.conn = psycopg.connect(PG_ADMIN_URL, autocommit=True)

    def sessions(self) -> int:
        """Sessions open on the database (0 for SQLite)."""
        if self.conn is None:
            return 0
        row = self.conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [self.name],
        ).fetchone()
        return int(row[0]) if row else 0

    def all_sessions(self) -> int:
        """Client sessions on the whole PostgreSQL server (other work on the machine included)."""
        if self.conn is None:
            return 0
        row = self.conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")
        return int(row.fetchone()[0])

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def pg_setting(name: str) -> str:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        row = conn.execute("SELECT current_setting(%s)", [name]).fetchone()
    return str(row[0]) if row else ""


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1); nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f}/{five:.2f}"


def cpu_probe_ms() -> float:
    """How fast this host runs Python right now: a fixed loop of 5M additions, fastest of 3 (ms).

    The VM's speed changes from hour to hour (other guests on the host); runs
    of the absolute targets (200 asks in < 5 s) compare only at a similar probe.
    """
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for i in range(5_000_000):
            total += i
        best = min(best, time.perf_counter() - started)
    return best * 1000


def machine() -> str:
    """One line: date, CPUs, memory, Python, load average (1/5 min) and CPU probe when the run started."""
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, {mem_gb:.0f} GiB, "
        f"Python {sys.version.split()[0]}, load average {load_average()} at start, "
        f"CPU probe {cpu_probe_ms():.0f} ms (5M-addition loop; lower is faster)"
    )


def db_label(db: str) -> str:
    return {"sqlite": "SQLite", "postgres": "PostgreSQL"}[db]


class Report:
    """Collects Markdown lines, echoes them, writes bench/RESULTS_<name>.md."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def table(self, header: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> None:
        align = align or "l" + "r" * (len(header) - 1)
        self("| " + " | ".join(header) + " |")
        self("|" + "|".join("---:" if a == "r" else "---" for a in align) + "|")
        for row in rows:
            self("| " + " | ".join(str(c) for c in row) + " |")

    def write(self) -> Path:
        path = BENCH / f"RESULTS_{self.name}.md"
        path.write_text("\n".join(self.lines).rstrip() + "\n")
        return path


def save_figures(name: str, figures: dict[str, Any]) -> None:
    """The key figures of a run, for the targets table (bench/summary.py): bench/RESULTS_<name>.json."""
    import json

    figures = {"when": machine(), **figures}
    (BENCH / f"RESULTS_{name}.json").write_text(json.dumps(figures, indent=1, default=str) + "\n")


def ms(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{seconds * 1000:.1f}"
