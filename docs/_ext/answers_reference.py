"""The docs' reference, generated from the code: one source for each fact.

Settings come from answers.conf's table, system check ids from answers.checks.CHECKS, each management
command's text from its own `--help`, the HTTP API from the OpenAPI schema drf-spectacular serves, and
the benchmarks from bench/bench_*.py's docstrings. Each generator returns Markdown (a test calls them);
the `answers-generated` directive renders one into a page. Settings, checks and commands become Sphinx
objects, so a page links them with {setting}`ANSWERS_MIN_SCORE`, {check}`answers.E002` or
{command}`ingest`, and the build (-n -W) fails on a name that does not exist, or on a setting, check,
command or API operation that no page documents.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from django.core.management import load_command_class
from docutils import nodes
from docutils.statemachine import StringList
from drf_spectacular.generators import SchemaGenerator
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from answers.checks import CHECKS
from answers.conf import settings_table

ROOT = Path(__file__).resolve().parents[2]
logger = logging.getLogger(__name__)

AREAS = {
    "providers": "Providers",
    "retrieval": "Retrieval and declining",
    "serving": "Serving: rates, proxies, processes",
    "support": "The support check",
    "embeddings": "Dense retrieval (embeddings)",
    "conversations": "Conversations",
    "operations": "Operations: event retention, metrics",
}
# Django's own options, which every command takes: the reference lists each command's own.
_COMMON_OPTIONS = {"--version", "--verbosity", "--settings", "--pythonpath", "--traceback", "--no-color"}
_COMMON_OPTIONS |= {"--force-color", "--skip-checks", "--help"}


def _row(*cells: str) -> str:
    """A Markdown table row; a cell's pipes escaped and its lines joined."""
    return "| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |"


def shown_default(setting: Any) -> str:
    """A setting's default as the reference states it (Setting.shown_default, else the value)."""
    if setting.shown_default:
        return str(setting.shown_default)
    value = setting.default
    if isinstance(value, str):
        return f"`{value}`" if value else "empty"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def default_role(
    name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None, content: Any = ()
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    """{default}`ANSWERS_MAX_TOKENS` in prose: the setting's default, from the table, never by hand."""
    found = {setting.name: setting for setting in settings_table()}.get(text)
    if found is None:
        message = inliner.reporter.error(f"{text!r} is no setting of answers.conf", line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    return [nodes.literal(rawtext, shown_default(found).replace("`", ""))], []


def settings_markdown(area: str | None = None) -> str:
    """The settings of one area (all without one): a summary table, then each setting's entry."""
    chosen = [setting for setting in settings_table() if area is None or setting.area == area]
    lines = ["| setting | environment variable | default | checked by |", "|---|---|---|---|"]
    for setting in chosen:
        checks = ", ".join(f"{{check}}`{check}`" for check in setting.checks) or "-"
        name, env = f"{{setting}}`{setting.name}`", f"`{setting.env_name}`"
        lines.append(_row(name, env, shown_default(setting), checks))
    lines.append("")
    for setting in chosen:
        lines += [f"```{{setting}} {setting.name}", setting.meaning, ""]
        facts = [f"Default: {shown_default(setting)}.", f"Environment variable: `{setting.env_name}`."]
        facts.append(f"Reads {setting.parser.kind}.")
        if setting.checks:
            facts.append("Checked by " + ", ".join(f"{{check}}`{check}`" for check in setting.checks) + ".")
        lines += [" ".join(facts), "```", ""]
    return "\n".join(lines)


def checks_markdown() -> str:
    """Every system check id, what it reports and the settings it guards."""
    guarded: dict[str, list[str]] = {}
    for setting in settings_table():
        for check in setting.checks:
            guarded.setdefault(check, []).append(setting.name)
    lines: list[str] = []
    for check, meaning in sorted(CHECKS.items()):
        lines += [f"```{{check}} {check}", meaning]
        if check in guarded:
            lines += ["", "Guards " + ", ".join(f"{{setting}}`{name}`" for name in guarded[check]) + "."]
        lines += ["```", ""]
    return "\n".join(lines)


def command_names() -> list[str]:
    """The app's management commands, by name."""
    folder = ROOT / "answers" / "management" / "commands"
    return sorted(path.stem for path in folder.glob("*.py") if not path.stem.startswith("_"))


def command_help(name: str) -> str:
    """`manage.py NAME --help` as the command prints it, without the options every command takes."""
    parser = load_command_class("answers", name).create_parser("manage.py", name)

    # argparse offers no public way to leave an option out of its help: drop Django's own from the
    # parser and its groups (this parser is made for the help alone and thrown away).
    def own(actions: list[Any]) -> list[Any]:
        return [action for action in actions if not set(action.option_strings) & _COMMON_OPTIONS]

    parser._actions = own(parser._actions)
    for group in parser._action_groups:
        group._group_actions = own(group._group_actions)
    # A command with subcommands (`evaluation import|export|from-reviews`): each one's help follows.
    subcommands = [
        choice
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for choice in action.choices.values()
    ]
    return "\n\n".join(part.format_help().rstrip() for part in [parser, *subcommands])


def command_markdown(name: str) -> str:
    return "\n".join([f"````{{command}} {name}", "```text", command_help(name), "```", "````", ""])


_SCHEMA: dict[str, Any] = {}


def openapi_schema() -> dict[str, Any]:
    """The OpenAPI schema drf-spectacular serves at /api/schema/ (built once per process)."""
    if not _SCHEMA:
        _SCHEMA.update(SchemaGenerator().get_schema(request=None, public=True))
    return _SCHEMA


def openapi_operations() -> list[tuple[str, str]]:
    """Every (METHOD, path) of the schema."""
    return [(method.upper(), path) for path, ops in openapi_schema()["paths"].items() for method in ops]


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#schema-{name.lower()})"
    if "allOf" in schema:
        return " and ".join(_type(part) for part in schema["allOf"])
    if "oneOf" in schema:
        return " or ".join(_type(part) for part in schema["oneOf"])
    kind = str(schema.get("type", "object"))
    if kind == "array":
        kind = f"list of {_type(schema.get('items', {}))}"
    if "enum" in schema:
        kind += " (" + ", ".join(f"`{value}`" for value in schema["enum"] if value) + ")"
    if schema.get("format"):
        kind += f", {schema['format']}"
    return kind + (", or null" if schema.get("nullable") else "")


def _fields(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", ()))
    lines = ["| field | type | required | meaning |", "|---|---|---|---|"]
    for name, field in schema.get("properties", {}).items():
        notes = [field.get("description", "")]
        if "maxLength" in field:
            notes.append(f"at most {field['maxLength']} characters")
        if "default" in field:
            notes.append(f"default `{json.dumps(field['default'])}`")
        if field.get("readOnly"):
            notes.append("read-only")
        meaning = "; ".join(note for note in notes if note)
        lines.append(_row(f"`{name}`", _type(field), "yes" if name in required else "", meaning))
    return lines


def _media(body: dict[str, Any]) -> str:
    content = body.get("content", {})
    schema = next(iter(content.values()), {}).get("schema", {}) if content else {}
    return _type(schema) if schema else "no body"


def openapi_operation_markdown(method: str, path: str) -> str:
    """One operation: its parameters, request body and responses, as the schema states them."""
    operation = openapi_schema()["paths"][path][method.lower()]
    lines = [f"`{method} {path}` (`{operation['operationId']}`)", ""]
    parameters = [p for p in operation.get("parameters", []) if p["in"] != "path"]
    if parameters:
        lines += ["| parameter | in | meaning |", "|---|---|---|"]
        lines += [_row(f"`{p['name']}`", p["in"], p.get("description", "")) for p in parameters]
        lines.append("")
    if "requestBody" in operation:
        lines += [f"Request body: {_media(operation['requestBody'])}.", ""]
    lines += ["| status | body | when |", "|---|---|---|"]
    for status, response in sorted(operation["responses"].items()):
        lines.append(_row(f"`{status}`", _media(response), response.get("description", "")))
    return "\n".join([*lines, ""])


def openapi_schemas_markdown() -> str:
    """Every schema the operations name, with its fields."""
    lines: list[str] = []
    for name, schema in sorted(openapi_schema()["components"]["schemas"].items()):
        lines += [f"(schema-{name.lower()})=", f"### `{name}`", ""]
        if schema.get("description"):
            lines += [schema["description"], ""]
        if "properties" in schema:
            lines += [*_fields(schema), ""]
        elif "enum" in schema:
            lines += [", ".join(f"`{value}`" for value in schema["enum"] if value) or "empty", ""]
    return "\n".join(lines)


def _bench_docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def benchmarks_markdown() -> str:
    """One section per bench/bench_*.py: what it measures (its docstring) and where its results are."""
    lines: list[str] = []
    for path in sorted((ROOT / "bench").glob("bench_*.py")):
        title, _, rest = _bench_docstring(path).partition("\n")
        results = path.with_name("RESULTS_" + path.stem.removeprefix("bench_") + ".md")
        label = path.stem.replace("_", "-")
        lines += [f"({label})=", f"### `{path.name}`", "", title, "", rest.strip(), ""]
        if results.exists():
            lines += [f"Results: {{download}}`bench/{results.name} <../bench/{results.name}>`.", ""]
    return "\n".join(lines)


GENERATORS: dict[str, Callable[..., str]] = {
    "settings": settings_markdown,
    "checks": checks_markdown,
    "command": command_markdown,
    "openapi-operation": openapi_operation_markdown,
    "openapi-schemas": openapi_schemas_markdown,
    "benchmarks": benchmarks_markdown,
}


class Generated(SphinxDirective):
    """```{answers-generated} settings providers``` renders that generator's Markdown here."""

    required_arguments = 1
    optional_arguments = 2

    def run(self) -> list[nodes.Node]:
        name, *arguments = self.arguments
        if name == "openapi-operation":
            _documented(self.env, "operations").add(" ".join(arguments))
        text = GENERATORS[name](*arguments)
        container = nodes.container()
        self.state.nested_parse(StringList(text.splitlines(), source=self.get_source_info()[0]), 0, container,
                                match_titles=True)  # fmt: skip
        return list(container.children)


def _documented(env: BuildEnvironment, kind: str) -> set[str]:
    found: dict[str, set[str]] = env.__dict__.setdefault("answers_documented", {})
    return found.setdefault(kind, set())


def _missing(documented: Iterable[str], expected: Iterable[str]) -> list[str]:
    return sorted(set(expected) - set(documented))


def check_everything_documented(app: Sphinx, env: BuildEnvironment) -> None:
    """Every setting, check, command and API operation has its place in the docs."""
    objects = {(kind, name) for (kind, name) in env.domains.standard_domain.objects}
    for kind, names in (
        ("setting", [setting.name for setting in settings_table()]),
        ("check", list(CHECKS)),
        ("command", command_names()),
    ):
        for name in _missing((n for k, n in objects if k == kind), names):
            logger.warning("the docs have no entry for the %s %s", kind, name)
    operations = [f"{method} {path}" for method, path in openapi_operations()]
    for name in _missing(_documented(env, "operations"), operations):
        logger.warning("the docs do not document the API operation %s", name)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_object_type("setting", "setting", "pair: %s; setting")
    app.add_object_type("check", "check", "pair: %s; system check")
    app.add_object_type("command", "command", "pair: %s; manage.py command")
    app.add_directive("answers-generated", Generated)
    app.add_role("default", default_role)
    app.connect("env-check-consistency", check_everything_documented)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
