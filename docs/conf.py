"""Sphinx configuration of the docs site (`make docs`): Markdown pages (MyST), the furo theme.

The reference pages' tables (settings, system checks, management commands, the HTTP API) are
generated from the code by docs/_ext/answers_reference.py, so this build sets Django up first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import django

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(ROOT), str(DOCS / "_ext")]
os.environ["DJANGO_SETTINGS_MODULE"] = "project.settings"
# The build reads the code, never a database or a secret: a placeholder key serves.
os.environ.setdefault("SECRET_KEY", "docs-build-only")
django.setup()

project = "Cited answers"
author = "The cited answers contributors"
copyright = "the cited answers contributors"

extensions = ["myst_parser", "sphinx_copybutton", "answers_reference"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
root_doc = "index"

# MyST: `{role}` and ```{directive} blocks, heading anchors for [text](page.md#anchor) links,
# definition lists and fenced attributes for notes.
myst_enable_extensions = ["colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 4

html_theme = "furo"
html_title = "Cited answers"
html_static_path = ["_static"]

# A copy button on commands, without the prompt or the output lines.
copybutton_prompt_text = r"\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = False

# `-n`: every cross-reference must resolve.
nitpicky = True
smartquotes = False  # commands and options stay as written (`--demo`, not an en dash)
