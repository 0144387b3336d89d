"""Which provider answers: ANSWERS_PROVIDER names one of conf.PROVIDERS, built from the settings."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from answers.conf import PROVIDERS, conf
from answers.providers.base import Provider


def get_provider(name: str | None = None) -> Provider:
    """A new provider instance for ``name`` (default: ANSWERS_PROVIDER), configured from settings.

    Settings are read on each call, never at import, so override_settings works and
    no client exists before it is needed.
    """
    name = conf.PROVIDER if name is None else name
    if name not in PROVIDERS:
        raise ImproperlyConfigured(
            f"ANSWERS_PROVIDER is {name!r}, which is not a known provider; "
            f"use one of: {', '.join(PROVIDERS)}."
        )
    provider: Provider = import_string(PROVIDERS[name]).from_settings(conf)
    return provider
