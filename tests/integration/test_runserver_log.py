"""`make run`'s server (`manage.py runserver`, daphne's) logs each request line once."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from tests.fixtures.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_runserver_prints_each_request_line_once(tmp_path: Path) -> None:
    port = _free_port()
    env = {
        **os.environ,
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("SECRET_KEY", None)
    log = tmp_path / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    answered = 0

    def healthy() -> bool:
        nonlocal answered
        if server.poll() is not None:
            raise AssertionError(f"runserver exited: {log.read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                pass
        except urllib.error.HTTPError:
            answered += 1  # answered (a database not migrated yet may give 503): logged all the same
            return True
        except OSError:
            return False
        answered += 1
        return True

    try:
        wait_until(healthy, within=120, what="runserver answering", detail=log.read_text)
        wait_until(
            lambda: "GET /healthz" in log.read_text(),
            within=30,
            what="the request logged",
            detail=log.read_text,
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    lines = [line for line in log.read_text().splitlines() if "GET /healthz" in line]
    assert len(lines) == answered, lines
