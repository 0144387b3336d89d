"""The defaults README and docs/api.md state for each ANSWERS_* setting are the app's own.

Each settings table row names one or more settings and, in its last cell, their defaults. Where
that cell starts with literals (`5`, 0.25, `decline`, "The documents here ...", `30/min`, `120/min`),
answers.conf must read the same with the setting absent, set to that literal, and set as
project/settings.py sets it when no environment variable does. A row whose
default is prose ("the provider's default", "unset: ...") is left out. README's table once said
0.30 for ANSWERS_MIN_SCORE after the default had moved to 0.25: this is the check that would have
caught it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from answers.conf import conf

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md",)
_NAME = re.compile(r"`(ANSWERS_[A-Z_]+)`")
# A default cell's leading literals: `code`, "quoted" or a bare number, separated by commas.
_LITERAL = re.compile(r'\s*(?:`([^`]*)`|"([^"]*)"|(\d+(?:\.\d+)?)(?![\w/]))\s*(?:,|$|\()')


def documented_defaults(text: str) -> dict[str, str]:
    """{setting: default as written} for the table rows whose default cell starts with literals."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("| `ANSWERS_"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        names = _NAME.findall(cells[0])
        values: list[str] = []
        rest = cells[-1]
        while (match := _LITERAL.match(rest)) and len(values) < len(names):
            values.append(next(group for group in match.groups() if group is not None))
            rest = rest[match.end() :]
        if len(values) == len(names):
            found.update(zip(names, values, strict=True))
    return found


def project_settings(names: list[str]) -> dict[str, Any]:
    """The values project/settings.py gives these settings when no environment variable sets them."""
    env = {k: v for k, v in os.environ.items() if k not in names and k != "DJANGO_SETTINGS_MODULE"}
    env.setdefault("SECRET_KEY", "documented-defaults-only")
    script = (
        "import json, sys, project.settings as s; "
        "print(json.dumps({n: getattr(s, n) for n in sys.argv[1:] if hasattr(s, n)}, default=str))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *names], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    values: dict[str, Any] = json.loads(done.stdout)
    return values


@pytest.mark.parametrize("document", DOCUMENTS)
def test_the_tables_state_the_defaults_the_app_uses(document: str, settings: Any) -> None:
    documented = documented_defaults((ROOT / document).read_text())
    # The rows this check must read, so that a change of table layout cannot make it pass on nothing.
    assert {"ANSWERS_MIN_SCORE", "ANSWERS_MAX_SOURCES", "ANSWERS_NO_SOURCES", "ANSWERS_PROVIDER"} <= set(
        documented
    ), documented
    project = project_settings(sorted(documented))
    wrong = []
    for name, written in sorted(documented.items()):
        attribute = name.removeprefix("ANSWERS_")
        if hasattr(settings, name):
            delattr(settings, name)
        unset = getattr(conf, attribute)
        setattr(settings, name, written)
        as_written = getattr(conf, attribute)
        if name in project:  # project/settings.py sets it when no environment variable does
            setattr(settings, name, project[name])
        as_project = getattr(conf, attribute)
        if not unset == as_written == as_project:
            wrong.append(
                f"{name}: {document} says {written!r}; conf reads {unset!r} with it unset, {as_written!r} "
                f"with it set so, {as_project!r} with project/settings.py's value"
            )
    assert not wrong, "\n".join(wrong)


def test_the_reader_of_the_tables_takes_literals_and_leaves_prose() -> None:
    table = "\n".join(
        [
            "| `ANSWERS_A` | x | `5` |",
            "| `ANSWERS_B` | x | 0.25 (measured: BENCHMARKS.md) |",
            '| `ANSWERS_C` | x | "Text, with a comma." |',
            "| `ANSWERS_D`, `ANSWERS_E` | x | `30/min`, `120/min` |",
            "| `ANSWERS_F` | x | the provider's default |",
            "| `ANSWERS_G`, `ANSWERS_H` | x | 8, 4 |",
            "| `ANSWERS_I` | x | unset: `/metrics` is `404` |",
        ]
    )
    assert documented_defaults(table) == {
        "ANSWERS_A": "5",
        "ANSWERS_B": "0.25",
        "ANSWERS_C": "Text, with a comma.",
        "ANSWERS_D": "30/min",
        "ANSWERS_E": "120/min",
        "ANSWERS_G": "8",
        "ANSWERS_H": "4",
    }
