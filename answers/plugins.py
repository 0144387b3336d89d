"""One plug-in mechanism: a setting names a built-in or gives a class's dotted path.

As django-allauth takes its adapter from a setting, ANSWERS_PROVIDER, ANSWERS_RERANKER and
ANSWERS_SUPPORT_METHOD each name one of their built-ins (conf.PROVIDERS, conf.RERANKERS,
conf.SUPPORT_METHODS: short names for dotted paths) or the dotted path of a class of the
site's own; either is loaded with Django's import_string. The system checks
(answers.checks) report a value that does not load, or loads something of the wrong shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string


def plugin_class(setting: str, value: str, builtins: Mapping[str, str]) -> Any:
    """The class `value` names: a built-in's, or the one at its dotted path; else ImproperlyConfigured."""
    try:
        return import_string(builtins.get(value, value))
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"{setting} is {value!r}: use one of: {', '.join(builtins)}, or a class's dotted path ({exc})."
        ) from exc


@dataclass(frozen=True)
class PluginProblem:
    """Why a plug-in setting's value cannot serve: it does not load, or what loads has the wrong shape."""

    loads: bool
    message: str


def plugin_problem(value: str, builtins: Mapping[str, str], *, needs: Sequence[str]) -> PluginProblem | None:
    """Why `value` cannot serve as the plug-in, for a system check; None when it can.

    A built-in is taken as it is (its heavy client, if any, is imported only when used); a dotted
    path must import and name a class with the attributes in `needs`.
    """
    if value in builtins:
        return None
    try:
        found = import_string(value)
    except ImportError as exc:
        return PluginProblem(loads=False, message=f"cannot be imported: {exc}")
    if not isinstance(found, type) or any(not hasattr(found, name) for name in needs):
        return PluginProblem(loads=True, message=f"is not a class with {', '.join(needs)}")
    return None
