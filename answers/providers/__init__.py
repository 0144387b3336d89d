"""Answer providers: the protocol the pipeline uses and the factory that picks one by setting.

Importing this package needs no Django settings (the factory reads them when called).
"""

from __future__ import annotations

from answers.providers.base import ErrorKind, Provider, ProviderError
from answers.providers.prompt import PROMPT_VERSION, Prompt, build_prompt

__all__ = [
    "PROMPT_VERSION",
    "ErrorKind",
    "Prompt",
    "Provider",
    "ProviderError",
    "build_prompt",
    "get_provider",
]


def get_provider(name: str | None = None) -> Provider:
    """A new provider instance for ``name`` (default: ANSWERS_PROVIDER), configured from settings.

    Settings are read on each call, never at import, so override_settings works and
    no client exists before it is needed.
    """
    from django.core.exceptions import ImproperlyConfigured

    from answers.conf import PROVIDERS, conf

    name = conf.PROVIDER if name is None else name
    if name == "extractive":
        from answers.providers.extractive import ExtractiveProvider

        return ExtractiveProvider(delay_ms=conf.EXTRACTIVE_DELAY_MS)
    if name == "openai":
        # Imported here: the openai package is heavy and unused by the default provider.
        from answers.providers.openai_provider import OpenAIProvider

        return OpenAIProvider(
            base_url=conf.OPENAI_BASE_URL,
            api_key=conf.OPENAI_API_KEY,
            model=conf.MODEL or None,
            timeout=conf.PROVIDER_TIMEOUT,
        )
    raise ImproperlyConfigured(
        f"ANSWERS_PROVIDER is {name!r}, which is not a known provider; use one of: {', '.join(PROVIDERS)}."
    )
