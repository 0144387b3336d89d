"""The site's content: documents in, checked once, stored with their chunks.

- `registry`: `register(Model, Source)` for a site's own models, in an app's `answers_sources.py`.
- `indexing`: keeping registered models' documents in step (saves, deletes, `reindex`).
- `validation`: `clean_document`, the one check for the ingest command and the documents API.
- `storage`: `document_upsert` / `document_store` / `document_delete` (writes; chunks rebuilt on change).
- `readers`: Markdown, text, HTML files and JSON/JSONL feeds to records (plain Python, no Django).
- `ingest`: files and records through validation into storage, with a report (`ingest_paths`).
- `demo`: the demo corpus (`load_demo_corpus`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from answers.content.registry import AlreadyRegistered, Source, register, unregister

__all__ = ["AlreadyRegistered", "Source", "register", "unregister"]


def __getattr__(name: str) -> Any:
    # `answers.content.register` and friends load on first use: the registry needs Django, and
    # `readers` (this package too) must import without it (tests/unit/content/test_readers.py).
    if name in __all__:
        return getattr(importlib.import_module("answers.content.registry"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
