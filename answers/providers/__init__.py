"""Answer providers: the protocol the pipeline uses and the factory that picks one by setting.

Importing this package needs no Django; answers.providers.registry picks one by setting.
"""

from __future__ import annotations

from answers.failures import ErrorKind
from answers.providers.base import Provider, ProviderError
from answers.providers.prompt import PROMPT_VERSION, Prompt, build_prompt

__all__ = [
    "PROMPT_VERSION",
    "ErrorKind",
    "Prompt",
    "Provider",
    "ProviderError",
    "build_prompt",
]
