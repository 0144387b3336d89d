"""`pip install .`: the wheel holds the answers app whole (code, migrations, templates, static files)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_holds_the_app_its_migrations_templates_and_static_files(tmp_path: Path):
    # Built from a copy, so that the build leaves nothing in the checkout.
    source = tmp_path / "src"
    source.mkdir()
    shutil.copytree(ROOT / "answers", source / "answers", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(source),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = tmp_path.glob("cited_answers-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())

    expected = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "answers").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert expected - names == set()
    assert {
        "answers/migrations/0001_initial.py",
        "answers/templates/answers/base.html",
        "answers/templates/answers/ask.html",
        "answers/templates/admin/answers/answer/change_form.html",
        "answers/static/answers/answer.js",
        "answers/static/vendor/markdown-it/markdown-it.min.js",
        "answers/management/commands/reindex.py",
    } <= names
    # Only the app: no demo project, tests or benchmarks.
    assert {name.split("/")[0] for name in names} == {
        "answers",
        wheel.name.split("-")[0] + "-0.1.0.dist-info",
    }
