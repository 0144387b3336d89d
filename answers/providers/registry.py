"""Which provider answers: ANSWERS_PROVIDER names one of conf.PROVIDERS or a class's dotted path
(answers.plugins), built from the settings."""

from __future__ import annotations

from answers.conf import PROVIDERS, conf
from answers.plugins import plugin_class
from answers.providers.base import Provider


def get_provider(name: str | None = None) -> Provider:
    """A new provider instance for ``name`` (default: ANSWERS_PROVIDER), configured from settings.

    Settings are read on each call, never at import, so override_settings works and
    no client exists before it is needed.
    """
    name = conf.PROVIDER if name is None else name
    provider: Provider = plugin_class("ANSWERS_PROVIDER", name, PROVIDERS).from_settings(conf)
    return provider
