"""Every Python snippet of README.md and the docs pages compiles, and what it imports or names exists.

A snippet's imports run, and each dotted path it writes as a string (a settings snippet names classes
and apps that way: "answers.sse.storage.AnswerEventStorage", "rest_framework") is imported, so a
renamed module or class fails here rather than in a reader's project. `yourproject.` stands for the
reader's own project and is left alone.
"""

from __future__ import annotations

import ast
import re
from importlib import import_module
from pathlib import Path

import pytest
from django.utils.module_loading import import_string

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *(p for p in sorted((ROOT / "docs").rglob("*.md")) if "_build" not in p.parts)]
SNIPPETS = [
    pytest.param(code, id=f"{page.relative_to(ROOT)}:{number}")
    for page in PAGES
    for number, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S), start=1)
]
_DOTTED = re.compile(r"[a-z_][a-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")
_PLACEHOLDER = "yourproject."


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _names(tree: ast.Module) -> list[str]:
    """The strings the snippet writes that name a module or an object: dotted paths, and the apps a
    statement adds to INSTALLED_APPS (a single name there is a module too)."""
    found = [value for value in _strings(tree) if _DOTTED.fullmatch(value)]
    for statement in tree.body:
        if "INSTALLED_APPS" in ast.unparse(statement):
            found += _strings(statement)
    return [name for name in found if not name.startswith(_PLACEHOLDER)]


def _resolve(name: str) -> None:
    try:
        import_module(name)
    except ImportError:
        import_string(name)


def test_the_docs_have_python_snippets_to_check() -> None:
    assert SNIPPETS


@pytest.mark.parametrize("code", SNIPPETS)
def test_a_python_snippet_compiles_and_what_it_imports_or_names_exists(code: str) -> None:
    tree = ast.parse(code)
    compile(tree, "<snippet>", "exec")
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    exec(compile(ast.Module(body=imports, type_ignores=[]), "<snippet imports>", "exec"), {})  # noqa: S102
    for name in _names(tree):
        _resolve(name)
