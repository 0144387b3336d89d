"""A real ASGI server (daphne, in a subprocess) for the SSE integration tests and the browser tests.

pytest-django's `live_server` is WSGI and cannot stream, and a background
generation needs the server's own event loop to outlive the request, so the
app runs as it does in production: `daphne project.asgi:application`, with

- its own database: a temporary SQLite file, or, when this test run's
  DATABASE_URL is PostgreSQL, a separate database created and dropped here;
- the `openai` provider pointed at a StubOpenAIServer running in the pytest
  process (tests script its replies);
- documents, users and API tokens seeded through the server's own
  `manage.py shell`, in the same database.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 30.0

# Users the seed creates; each gets an API token.
USERS = {
    "alice": {"is_staff": False},
    "bob": {"is_staff": False},
    "staff": {"is_staff": True},
}
PASSWORD = "a-long-test-password-1"

# One Django start for both steps (each start costs seconds on a busy machine).
_SEED = r"""
import json, os, hashlib
from django.core.management import call_command
call_command("migrate", interactive=False, verbosity=0)
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from answers.models import Chunk, Document

spec = json.loads(os.environ["LIVE_SEED"])
tokens = {}
User = get_user_model()
for name, attrs in spec["users"].items():
    user = User.objects.create_user(name, password=spec["password"], is_staff=attrs["is_staff"])
    tokens[name] = Token.objects.create(user=user).key
for doc in spec["documents"]:
    document = Document.objects.create(
        key=doc["key"], title=doc["title"], url=doc["url"], body=doc["body"],
        content_hash=hashlib.sha256(doc["body"].encode()).hexdigest(),
    )
    Chunk.objects.create(
        document=document, ordinal=0, heading="", title=doc["title"], text=doc["body"],
        start_offset=0, end_offset=len(doc["body"]),
    )
print("LIVE_SEED_RESULT=" + json.dumps({"tokens": tokens}))
"""


@dataclass(frozen=True)
class SeedDocument:
    key: str
    title: str
    url: str
    body: str


@dataclass
class LiveServer:
    """A running server: its base URL, API tokens by user name, and its log (shown on failures)."""

    url: str
    tokens: dict[str, str]
    log_path: Path
    env: dict[str, str] = field(repr=False)
    pid: int = 0

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def auth(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Token {self.tokens[user]}"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(args: Sequence[str], env: dict[str, str], *, timeout: float = 120) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"manage.py {args[0]} failed ({result.returncode}):\n"
            f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
        )
    return result.stdout


@contextmanager
def _database(workdir: Path) -> Iterator[str]:
    """A DATABASE_URL of the server's own database, of the same kind as this test run's."""
    current = os.environ.get("DATABASE_URL", "")
    if not current.startswith(("postgres://", "postgresql://")):
        yield f"sqlite:///{workdir / 'live.sqlite3'}"
        return
    import psycopg

    name = f"test_live_{os.getpid()}_{secrets.token_hex(3)}"
    parts = urlsplit(current)
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _wait_until_healthy(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    with httpx.Client(timeout=2) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                log = log_path.read_text(errors="replace")[-4000:]
                raise RuntimeError(f"the server exited ({process.returncode}):\n{log}")
            try:
                if client.get(f"{url}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    raise RuntimeError(f"the server did not become healthy:\n{log_path.read_text(errors='replace')[-4000:]}")


@contextmanager
def running_server(
    *, openai_base_url: str, documents: Sequence[SeedDocument], extra_env: dict[str, str] | None = None
) -> Iterator[LiveServer]:
    """Migrate and seed a fresh database, start daphne on a free port, yield; stop and clean up."""
    with tempfile.TemporaryDirectory(prefix="live-server-") as tmp:
        workdir = Path(tmp)
        with _database(workdir) as database_url:
            env = {
                key: value
                for key, value in os.environ.items()
                if not key.startswith(("PYTEST_", "ANSWERS_", "OPENAI_"))
                and key not in {"REDIS_URL", "TEST_DATABASE_NAME", "DATABASE_URL"}
            }
            env.update(
                {
                    "DJANGO_SETTINGS_MODULE": "project.settings",
                    "PYTHONUNBUFFERED": "1",
                    "DEBUG": "true",
                    "SECRET_KEY": "insecure-live-server-key-for-tests-only",
                    "ALLOWED_HOSTS": "127.0.0.1,localhost",
                    "DATABASE_URL": database_url,
                    "ANSWERS_PROVIDER": "openai",
                    "OPENAI_BASE_URL": openai_base_url,
                    "OPENAI_API_KEY": "test",
                    "ANSWERS_MODEL": "stub-model",
                    "ANSWERS_MIN_SCORE": "0",
                    "ANSWERS_MAX_SOURCES": "4",
                    "ANSWERS_PROVIDER_TIMEOUT": "20",
                    # Many questions from one address in a few seconds: the limits are not under test here.
                    "ANSWERS_ANON_RATE": "10000/min",
                    "ANSWERS_USER_RATE": "10000/min",
                    "LOG_LEVEL": "WARNING",
                    # Stopping the server at teardown does not wait long for answers still in flight.
                    "ANSWERS_SHUTDOWN_GRACE": "1",
                    **(extra_env or {}),
                }
            )
            seed = {
                "users": USERS,
                "password": PASSWORD,
                "documents": [vars(doc) for doc in documents],
            }
            out = _run(["shell", "-c", _SEED], {**env, "LIVE_SEED": json.dumps(seed)})
            line = next(ln for ln in out.splitlines() if ln.startswith("LIVE_SEED_RESULT="))
            tokens: dict[str, str] = json.loads(line.removeprefix("LIVE_SEED_RESULT="))["tokens"]

            with daphne(env, workdir / "server.log") as (url, pid):
                yield LiveServer(url=url, tokens=tokens, log_path=workdir / "server.log", env=env, pid=pid)


@contextmanager
def daphne(env: dict[str, str], log_path: Path) -> Iterator[tuple[str, int]]:
    """Serve the app with daphne on a free port under `env`; yield its base URL and process id."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "project.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_until_healthy(url, process, log_path)
            yield url, process.pid
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def corpus() -> list[SeedDocument]:
    """What the tests ask about.

    Four documents share the zebra question's words (so all four are retrieved,
    in an order the tests read from the `references` event); two more, about
    quokkas, carry markup and unsafe URLs in their titles.
    """
    zebra = [
        SeedDocument(
            key=f"https://example.org/zebra-{i}",
            title=f"Zebra habitat guide {i}",
            url=f"https://example.org/zebra-{i}" if i != 4 else "/docs/zebra-4",
            body=f"Zebra habitat guide part {i}. Zebras live in grassland habitat and savanna; note {i}.",
        )
        for i in range(1, 5)
    ]
    quokka = [
        SeedDocument(
            key="https://example.org/quokka-1",
            title="Quokka <script>window.__pwned = 1</script> facts",
            url="javascript:window.__pwned=1",
            body="Quokka facts: the quokka is a small marsupial that lives on Rottnest Island.",
        ),
        SeedDocument(
            key="https://example.org/quokka-2",
            title='Quokka <img src=x onerror="window.__pwned = 1"> facts',
            url="//evil.example/quokka",
            body="More quokka facts: quokka families live in dense scrub on the island.",
        ),
    ]
    return zebra + quokka


ZEBRA_QUESTION = "Zebra habitat guide: where do zebras live?"
QUOKKA_QUESTION = "Quokka facts?"


def references_event_titles(references: Sequence[dict[str, Any]]) -> list[str]:
    return [str(r["title"]) for r in references]
