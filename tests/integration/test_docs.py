"""The docs' reference is generated from the code (docs/_ext/answers_reference.py): one source per fact.

A default changed in answers.conf changes the settings page Sphinx builds; every check id, command
and API operation has its generated entry; and no page states a setting's default by hand (prose
writes {default}`NAME`, which the build fills in from answers.conf).
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import pytest
from django.core.management import load_command_class
from sphinx.cmd.build import build_main

from answers.checks import CHECKS
from answers.conf import AnswersSettings, settings_table

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import answers_reference  # noqa: E402 - docs/_ext, put on the path above

PAGES = {path: path.read_text() for path in DOCS.rglob("*.md") if "_build" not in path.parts}
MINIMAL_CONF = """
import sys
sys.path.insert(0, {ext!r})
extensions = ["myst_parser", "answers_reference"]
"""


def _build_settings_page(tmp_path: Path) -> str:
    """Sphinx, with the docs' own extension, on a page that generates the retrieval settings."""
    source = tmp_path / "source"
    source.mkdir(parents=True)
    (source / "conf.py").write_text(MINIMAL_CONF.format(ext=str(DOCS / "_ext")))
    (source / "index.md").write_text("# Settings\n\n```{answers-generated} settings retrieval\n```\n")
    out = tmp_path / "html"
    assert build_main(["-b", "html", "-q", "-E", str(source), str(out)]) == 0
    return (out / "index.html").read_text()


def _table_row(html: str, name: str) -> str:
    row = re.search(rf"<tr[^>]*>(?:(?!</tr>).)*{name}(?:(?!</tr>).)*</tr>", html, re.S)
    assert row, name
    return re.sub(r"<[^>]+>", " ", row.group(0))


def test_changing_a_default_in_answers_conf_changes_the_generated_settings_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings
) -> None:
    del settings.ANSWERS_MAX_SOURCES  # unset, as in a project that leaves the default
    assert "5" in _table_row(_build_settings_page(tmp_path / "before"), "ANSWERS_MAX_SOURCES").split()

    declared = vars(AnswersSettings)["MAX_SOURCES"]
    monkeypatch.setattr(declared, "setting", dataclasses.replace(declared.setting, default=9))

    row = _table_row(_build_settings_page(tmp_path / "after"), "ANSWERS_MAX_SOURCES")
    assert "9" in row.split()
    assert "5" not in row.split()
    assert AnswersSettings().MAX_SOURCES == 9, "the app reads the same declaration the page shows"


def test_every_check_id_has_its_entry_with_its_meaning_and_the_settings_it_guards() -> None:
    text = answers_reference.checks_markdown()
    for check, meaning in CHECKS.items():
        assert f"```{{check}} {check}\n{meaning}" in text
    entry = text.split("{check} answers.E002", 1)[1].split("```")[0]
    assert "Guards {setting}`ANSWERS_MAX_SOURCES`." in entry


def test_each_commands_entry_is_its_own_help_without_djangos_common_options() -> None:
    command = load_command_class("answers", "trim_events")
    text = answers_reference.command_markdown("trim_events")
    assert " ".join(command.help.split()) in " ".join(text.split())
    assert "--batch-size" in text
    assert "--settings" not in text
    assert "--traceback" not in text


def test_a_command_with_subcommands_has_each_subcommands_options_in_its_entry() -> None:
    text = answers_reference.command_markdown("evaluation")
    for usage in ("evaluation import", "evaluation export", "evaluation from-reviews"):
        assert f"usage: manage.py {usage}" in text
    assert "--if-missing" in text
    assert "--since" in text
    assert "--settings" not in text


def test_every_command_setting_and_api_operation_has_its_place_in_the_docs() -> None:
    commands = "\n".join(PAGES[DOCS / "reference" / "commands.md"].splitlines())
    assert set(re.findall(r"answers-generated\} command (\w+)", commands)) == set(
        answers_reference.command_names()
    )
    http = PAGES[DOCS / "reference" / "http.md"]
    for method, path in answers_reference.openapi_operations():
        assert f"answers-generated}} openapi-operation {method} {path}\n" in http, (method, path)
    areas = set(re.findall(r"answers-generated\} settings (\w+)", PAGES[DOCS / "reference" / "settings.md"]))
    assert areas == {setting.area for setting in settings_table()}


def _written(value: object) -> set[str]:
    """The ways a page could write a default by hand: 100000, 100,000, `100000`."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or value in (0, 1):
        return set()
    return {str(value), f"{value:,}"}


def test_no_page_states_a_settings_default_by_hand() -> None:
    stated = []
    for setting in settings_table():
        for literal in _written(setting.default):
            pattern = rf"{setting.name}`?\)?\s*\(\s*`?{re.escape(literal)}\b"
            stated += [f"{path.relative_to(ROOT)}: {setting.name} ({literal})" for path, text in PAGES.items()
                       if re.search(pattern, text)]  # fmt: skip
    assert not stated, "write {default}`NAME` instead:\n" + "\n".join(stated)
