"""The docs' offline commands run as written in a fresh checkout (issue 33; the docs site, issue 49).

The code blocks README.md and the docs pages mark as runnable offline (README with
`<!-- runs offline: tests/integration/test_docs_commands.py -->`, a docs page with the MyST comment
`% runs offline: tests/integration/test_docs_commands.py`) are run line by line with bash, in a copy
of the checkout's files (what `git ls-files` names, as a fresh clone has them; the shared virtualenv
linked as `.venv`), in an environment with no SECRET_KEY, DATABASE_URL or DEBUG: each exits 0 and
prints no traceback.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(
    r"(?:<!-- |% )runs offline: tests/integration/test_docs_commands\.py(?: -->)?\s*```sh\n(.*?)```", re.S
)
PAGES = sorted([ROOT / "README.md", *(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)])
RUNNABLE = [page for page in PAGES if MARK.search(page.read_text())]


def offline_commands(text: str) -> list[str]:
    """The lines of each ```sh block a page marks as runnable offline (comments and blanks left out)."""
    commands: list[str] = []
    for block in MARK.findall(text):
        for line in block.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                commands.append(line)
    return commands


@pytest.fixture
def fresh_checkout(tmp_path: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    checkout = tmp_path / "checkout"
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = checkout / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    # The virtualenv `make run` would make: the one running these tests.
    (checkout / ".venv").symlink_to(Path(sys.prefix))
    return checkout


def test_the_tutorial_marks_its_command_line_block_runnable() -> None:
    commands = offline_commands((ROOT / "docs" / "tutorial.md").read_text())
    assert any(" manage.py migrate" in c for c in commands)
    assert any(" manage.py ask " in c for c in commands)
    assert any(" manage.py drf_create_token " in c for c in commands)


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda page: str(page.relative_to(ROOT)))
def test_offline_commands_run_as_written_in_a_fresh_checkout(page: Path, fresh_checkout: Path) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"SECRET_KEY", "DATABASE_URL", "DEBUG"}
        and not key.startswith(("ANSWERS_", "TEST_DATABASE"))
    }
    assert not (fresh_checkout / "db.sqlite3").exists()
    outputs = {}
    for command in offline_commands((fresh_checkout / page.relative_to(ROOT)).read_text()):
        done = subprocess.run(
            ["bash", "-c", command], cwd=fresh_checkout, env=env, capture_output=True, text=True, timeout=600
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{command}\n{output[-3000:]}"
        assert "Traceback" not in output, f"{command}\n{output[-3000:]}"
        outputs[command] = output
    assert (fresh_checkout / "db.sqlite3").exists(), "the checkout's own database"
    asked = [output for command, output in outputs.items() if " manage.py ask " in command]
    assert all("Sources" in output for output in asked)
    tokens = [output for command, output in outputs.items() if " drf_create_token " in command]
    assert all(re.search(r"[0-9a-f]{40}", output) for output in tokens)


def test_a_page_that_reads_the_trail_makes_the_token_it_sends_first() -> None:
    """The trail is 401 without a token: each block that reads it makes one first and sends it."""
    blocks = [b for page in PAGES for b in re.findall(r"```sh\n(.*?)```", page.read_text(), re.S)]
    trail_reads = [b for b in blocks if re.search(r"curl [^\n]*/trail/", b)]
    assert trail_reads, "no page shows a request for the trail"
    for block in trail_reads:
        made = block.find("drf_create_token")
        sent = re.search(r'curl [^\n]*-H "Authorization: Token \$TOKEN"[^\n]*/trail/', block)
        assert made != -1, block
        assert sent, block
        assert made < sent.start(), block
