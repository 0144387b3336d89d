"""The site's own models as content: `register(Model, Source)` in an app's `answers_sources.py`.

Like `admin.site.register`: each app says in its `answers_sources.py` (found at start-up, as
`admin.py` is) which of its models are content and how an object becomes a document. Saving,
deleting and `manage.py reindex` then keep the documents in step (answers.content.indexing).
This module holds only the registry (no ORM queries), so it imports before the apps are ready.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db.models import Model, QuerySet
from django.utils.module_loading import autodiscover_modules

BODY_FORMATS = ("text", "markdown", "html")


class AlreadyRegistered(Exception):
    """A model may have one Source."""


class Source:
    """What of a model counts as content, and what each object's document says.

    Override what differs from the defaults; `body` is required. `body_format` is "text" or
    "markdown" (indexed as written) or "html" (scripts and styles dropped, text kept).
    """

    body_format = "text"

    def __init__(self, model: type[Model]) -> None:
        self.model = model

    @property
    def label(self) -> str:
        """The model's `app_label.model_name`: stored on its documents (Document.source)."""
        return str(self.model._meta.label_lower)

    def get_queryset(self) -> QuerySet[Any]:
        """The objects that are content (e.g. published ones only); the others have no document."""
        return self.model._default_manager.all()

    def key(self, obj: Any) -> str:
        """The document's stable key: by default the model's label and the object's primary key."""
        return f"{self.label}:{obj.pk}"

    def title(self, obj: Any) -> str:
        return str(obj)

    def body(self, obj: Any) -> str:
        raise NotImplementedError(f"{type(self).__name__} must define body(obj).")

    def url(self, obj: Any) -> str:
        """An http(s) or site-relative URL; by default the object's get_absolute_url(), if any."""
        get_url = getattr(obj, "get_absolute_url", None)
        return str(get_url()) if callable(get_url) else ""

    def updated_at(self, obj: Any) -> datetime | None:
        return None

    def access(self, obj: Any) -> str | list[str]:
        """ "public", "signed-in", "staff", or a list of group names (docs/reference/access.md)."""
        return "public"


_registry: dict[type[Model], Source] = {}
# Called with each model registered, those already registered included (answers.content.indexing
# connects its save and delete receivers to that model only).
_watchers: list[Callable[[type[Model]], object]] = []


def register(model: type[Model], source: type[Source] = Source) -> Source:
    """Index `model`'s objects as `source` (a Source subclass) says; returns the Source made."""
    if model in _registry:
        raise AlreadyRegistered(f"{model._meta.label} is registered already.")
    if source.body_format not in BODY_FORMATS:
        raise ValueError(f"{source.__name__}.body_format must be one of {', '.join(BODY_FORMATS)}.")
    made = source(model)
    _registry[model] = made
    for watch in _watchers:
        watch(model)
    return made


def unregister(model: type[Model]) -> None:
    _registry.pop(model, None)


def watch(callback: Callable[[type[Model]], object]) -> None:
    """Call `callback` with every model registered, now and later (once per callback)."""
    if callback in _watchers:
        return
    _watchers.append(callback)
    for model in list(_registry):
        callback(model)


def source_for(model: type[Model]) -> Source | None:
    return _registry.get(model)


def registered() -> list[Source]:
    return list(_registry.values())


def autodiscover() -> None:
    """Import every installed app's `answers_sources` module (where apps call register())."""
    autodiscover_modules("answers_sources")
