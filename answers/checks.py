"""System checks for the app's settings; each problem has a stable id."""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NamedTuple

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, register

from answers.citations.normalize import DIALECTS
from answers.citations.trail import compute_trail
from answers.conf import EMBEDDINGS, NO_SOURCES, PROVIDERS, RERANKERS, SUPPORT_METHODS, conf
from answers.plugins import plugin_problem

# A bearer token: printable ASCII, no spaces (RFC 6750 allows fewer characters still).
_TOKEN = re.compile(r"[!-~]+")
_RATE = re.compile(r"^\d+/(s|sec|second|m|min|minute|h|hour|d|day)$")


@register()
def check_settings(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = _check_plugins()
    if conf.MAX_SOURCES < 1:
        errors.append(Error("ANSWERS_MAX_SOURCES must be at least 1.", id="answers.E002"))
    if not 0.0 <= conf.MIN_SCORE <= 1.0:
        errors.append(Error("ANSWERS_MIN_SCORE must be between 0 and 1.", id="answers.E003"))
    if conf.PROVIDER_TIMEOUT <= 0:
        errors.append(
            Error("ANSWERS_PROVIDER_TIMEOUT must be a positive number of seconds.", id="answers.E004")
        )
    for name, rate in (("ANSWERS_ANON_RATE", conf.ANON_RATE), ("ANSWERS_USER_RATE", conf.USER_RATE)):
        if not _RATE.match(rate):
            errors.append(
                Error(f"{name} is {rate!r}, not a rate.", hint="Write it like '30/min'.", id="answers.E005")
            )
    for proxy in conf.TRUSTED_PROXIES:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            errors.append(
                Error(
                    f"ANSWERS_TRUSTED_PROXIES names {proxy!r}, which is not an IP address or network.",
                    hint="List the reverse proxies' addresses or CIDR networks, e.g. '10.0.0.0/8,127.0.0.1'.",
                    id="answers.E025",
                )
            )
    if getattr(settings, "AXES_FAILURE_LIMIT", 1) < 1 or getattr(
        settings, "AXES_COOLOFF_TIME", timedelta(minutes=1)
    ) <= timedelta(0):
        errors.append(
            Error(
                "ADMIN_LOGIN_FAILURE_LIMIT must be at least 1 and ADMIN_LOGIN_COOLOFF_MINUTES positive.",
                id="answers.E026",
            )
        )
    if conf.EXTRACTIVE_DELAY_MS < 0:
        errors.append(Error("ANSWERS_EXTRACTIVE_DELAY_MS must not be negative.", id="answers.E006"))
    if conf.STALE_AFTER <= 0:
        errors.append(Error("ANSWERS_STALE_AFTER must be a positive number of seconds.", id="answers.E008"))
    if conf.SHUTDOWN_GRACE < 0:
        errors.append(Error("ANSWERS_SHUTDOWN_GRACE must not be negative.", id="answers.E009"))
    if conf.PIPELINE_DB_WORKERS < 1:
        errors.append(Error("ANSWERS_PIPELINE_DB_WORKERS must be at least 1.", id="answers.E011"))
    if conf.STREAM_DB_WORKERS < 1:
        errors.append(Error("ANSWERS_STREAM_DB_WORKERS must be at least 1.", id="answers.E010"))
    if conf.REQUEST_THREADS < 0:
        errors.append(
            Error("ANSWERS_REQUEST_THREADS must be 0 (a thread per request) or more.", id="answers.E039")
        )
    if conf.MAX_GENERATING < 0:
        errors.append(
            Error(
                "ANSWERS_MAX_GENERATING must be 0 (no limit) or more.",
                hint="It is the most answers one process generates at once; past it asks get 503.",
                id="answers.E050",
            )
        )
    if getattr(settings, "DATABASE_POOL_SIZE", 0) < 0:
        errors.append(Error("DATABASE_POOL_SIZE must be 0 (no pool) or more.", id="answers.E012"))
    if getattr(settings, "DATABASE_POOL_TIMEOUT", 1) <= 0:
        errors.append(Error("DATABASE_POOL_TIMEOUT must be a positive number of seconds.", id="answers.E013"))
    unknown = [name for name in conf.MARKER_DIALECTS if name not in DIALECTS]
    if unknown:
        errors.append(
            Error(
                f"ANSWERS_MARKER_DIALECTS names unknown dialects: {', '.join(map(repr, unknown))}.",
                hint=f"Use 'all', 'none' or some of: {', '.join(DIALECTS)}, comma-separated.",
                id="answers.E014",
            )
        )
    if conf.PROVIDER == "anthropic" and not conf.MODEL.strip():
        errors.append(
            Error(
                "ANSWERS_MODEL is required with ANSWERS_PROVIDER 'anthropic'.",
                hint="Name an Anthropic model that supports citations, e.g. ANSWERS_MODEL=claude-sonnet-4-5.",
                id="answers.E017",
            )
        )
    errors += _check_native_providers()
    errors += _check_support()
    errors += _check_decline()
    errors += _check_output_bounds()
    errors += _check_conversations()
    return errors


@dataclass(frozen=True)
class _NativeProvider:
    """What a native-citation provider's three checks name: the provider, its vendor, its ids."""

    name: str
    vendor: str
    env: str  # the prefix of its key and base-URL variables
    model_example: str
    url_example: str
    first_id: int  # E0nn of the model check; the key's and the base URL's follow


_NATIVE_PROVIDERS = (
    _NativeProvider(
        "cohere", "Cohere", "COHERE", "a Cohere chat model that cites documents, e.g. ANSWERS_MODEL="
        "command-a-03-2025", "https://gateway.example/cohere", 61
    ),
    _NativeProvider(
        "mistral", "Mistral", "MISTRAL", "a Mistral chat model, e.g. ANSWERS_MODEL=mistral-large-latest",
        "https://api.eu.mistral.ai", 64
    ),
)  # fmt: skip


def _check_native_providers() -> list[CheckMessage]:
    """ANSWERS_PROVIDER=cohere or mistral: the model, the key and the base URL (ids E061-E066)."""
    errors: list[CheckMessage] = []
    for provider in _NATIVE_PROVIDERS:
        if provider.name == conf.PROVIDER:
            errors += _check_native_provider(provider)
    return errors


def _check_native_provider(p: _NativeProvider) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    if not conf.MODEL.strip():
        errors.append(
            Error(
                f"ANSWERS_MODEL is required with ANSWERS_PROVIDER '{p.name}'.",
                hint=f"Name {p.model_example}.",
                id=f"answers.E0{p.first_id}",
            )
        )
    # The key goes into a header: one with a space or a line break would fail every request. It is
    # never quoted here (a message may reach a log).
    if not _TOKEN.fullmatch(getattr(conf, f"{p.env}_API_KEY") or ""):
        errors.append(
            Error(
                f"{p.env}_API_KEY is required with ANSWERS_PROVIDER '{p.name}' (printable, without spaces).",
                hint=f"Any non-empty value for a {p.vendor}-compatible server that needs no key.",
                id=f"answers.E0{p.first_id + 1}",
            )
        )
    base_url = getattr(conf, f"{p.env}_BASE_URL")
    if base_url is not None and not re.fullmatch(r"https?://[^\s/]+(/\S*)?", base_url):
        errors.append(
            Error(
                f"{p.env}_BASE_URL is {base_url!r}, not an http(s) URL.",
                hint=f"Leave it unset for {p.vendor}'s own API, or name a server, e.g. {p.url_example}.",
                id=f"answers.E0{p.first_id + 2}",
            )
        )
    return errors


def _check_decline() -> list[CheckMessage]:
    """ANSWERS_NO_SOURCES and ANSWERS_DECLINE_TEXT (answers.pipeline.flow): ids E033-E034."""
    errors: list[CheckMessage] = []
    if conf.NO_SOURCES not in NO_SOURCES:
        errors.append(
            Error(
                f"ANSWERS_NO_SOURCES is {conf.NO_SOURCES!r}, which is not a known behaviour.",
                hint=f"Use one of: {', '.join(NO_SOURCES)}.",
                id="answers.E033",
            )
        )
    text = conf.DECLINE_TEXT
    # The text is stored as both the raw and the final text, and streamed as its own display: a
    # marker in it would point at no source (and finalizing would change it). Every dialect is
    # looked for, whatever ANSWERS_MARKER_DIALECTS says (E014 reports a bad list of its own).
    trail = compute_trail(text, 0, dialects=None)
    if not text.strip() or trail.final_text != text or trail.stripped or trail.normalized:
        errors.append(
            Error(
                "ANSWERS_DECLINE_TEXT must be plain text: not empty, and without citation markers.",
                hint='The default reads: "The documents here don\'t cover this question."',
                id="answers.E034",
            )
        )
    return errors


def _check_output_bounds() -> list[CheckMessage]:
    """How much a provider may write (README, "Production"): ids E036-E037."""
    errors: list[CheckMessage] = []
    if conf.MAX_TOKENS < 1:
        errors.append(Error("ANSWERS_MAX_TOKENS must be at least 1.", id="answers.E036"))
    if conf.MAX_ANSWER_CHARS < 1:
        errors.append(Error("ANSWERS_MAX_ANSWER_CHARS must be at least 1.", id="answers.E037"))
    return errors


def _check_conversations() -> list[CheckMessage]:
    """Conversations (answers/conversations/): ids E045-E046."""
    errors: list[CheckMessage] = []
    if conf.CONVERSATION_TURNS < 1:
        errors.append(
            Error(
                "ANSWERS_CONVERSATION_TURNS must be 1 or more (1: no follow-ups).",
                hint="The default, 20, lets a conversation hold 20 answers.",
                id="answers.E045",
            )
        )
    if conf.CONVERSATION_HISTORY_CHARS < 0:
        errors.append(
            Error(
                "ANSWERS_CONVERSATION_HISTORY_CHARS must be 0 or more (0: follow-ups carry no history).",
                hint="The default, 6000, keeps about the last few turns of a conversation in the prompt.",
                id="answers.E046",
            )
        )
    return errors


class _PluginSetting(NamedTuple):
    """A plug-in setting (answers.plugins), what its class needs, and its two check ids."""

    setting: str
    value: str
    builtins: dict[str, str]
    kind: str
    needs: tuple[str, ...]
    not_loaded: str  # names no built-in and no importable class
    wrong_shape: str  # names something without what the pipeline calls on it


def _plugin_settings() -> list[_PluginSetting]:
    return [
        _PluginSetting(
            "ANSWERS_PROVIDER", conf.PROVIDER, PROVIDERS, "Provider", ("from_settings", "stream"),
            not_loaded="answers.E001", wrong_shape="answers.E047",
        ),
        _PluginSetting(
            "ANSWERS_RERANKER", conf.RERANKER, RERANKERS, "Reranker", ("score",),
            not_loaded="answers.E007", wrong_shape="answers.E048",
        ),
        _PluginSetting(
            "ANSWERS_SUPPORT_METHOD", conf.SUPPORT_METHOD, SUPPORT_METHODS, "SupportMethod", ("scores",),
            not_loaded="answers.E015", wrong_shape="answers.E049",
        ),
    ]  # fmt: skip


def _check_plugins() -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for plugin in _plugin_settings():
        problem = plugin_problem(plugin.value, plugin.builtins, needs=plugin.needs)
        if problem is not None:
            errors.append(
                Error(
                    f"{plugin.setting} is {plugin.value!r}, which {problem.message}.",
                    hint=f"Use one of: {', '.join(plugin.builtins)}, or a {plugin.kind} class's dotted path.",
                    id=plugin.wrong_shape if problem.loads else plugin.not_loaded,
                )
            )
    return errors


def _check_support() -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    if not 0.0 <= conf.SUPPORT_MIN <= 1.0:
        errors.append(Error("ANSWERS_SUPPORT_MIN must be between 0 and 1.", id="answers.E016"))
    return errors


@register()
def check_embeddings(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """Dense retrieval's settings (answers.retrieval.embeddings): ids from E020 up."""
    errors: list[CheckMessage] = []
    if conf.EMBEDDINGS not in EMBEDDINGS:
        errors.append(
            Error(
                f"ANSWERS_EMBEDDINGS is {conf.EMBEDDINGS!r}, which is not a known embeddings client.",
                hint=f"Use one of: {', '.join(EMBEDDINGS)}.",
                id="answers.E020",
            )
        )
    if conf.EMBEDDINGS == "openai" and not conf.EMBEDDING_MODEL:
        errors.append(
            Error("ANSWERS_EMBEDDING_MODEL is required with ANSWERS_EMBEDDINGS 'openai'.", id="answers.E021")
        )
    if conf.EMBEDDINGS == "openai" and conf.EMBEDDING_DIMENSIONS < 1:
        errors.append(
            Error(
                "ANSWERS_EMBEDDING_DIMENSIONS (the model's vector size) is required when"
                " ANSWERS_EMBEDDINGS is 'openai'.",
                id="answers.E022",
            )
        )
    if conf.EMBEDDINGS_TIMEOUT <= 0:
        errors.append(
            Error("ANSWERS_EMBEDDINGS_TIMEOUT must be a positive number of seconds.", id="answers.E023")
        )
    if conf.PGVECTOR_INDEX not in ("hnsw", "none"):
        errors.append(Error("ANSWERS_PGVECTOR_INDEX must be 'hnsw' or 'none'.", id="answers.E024"))
    return errors


@register()
def check_operations(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """Event retention and metrics (answers.metrics): ids E027-E029."""
    errors: list[CheckMessage] = []
    if not 0 <= conf.EVENT_RETENTION < math.inf:
        errors.append(
            Error(
                f"ANSWERS_EVENT_RETENTION is {conf.EVENT_RETENTION!r}: it must be seconds, 0 or more.",
                hint="The default, 604800, keeps an answer's events for 7 days after it finishes.",
                id="answers.E027",
            )
        )
    token = conf.METRICS_TOKEN
    if token and not _TOKEN.fullmatch(token):
        errors.append(
            Error(
                "ANSWERS_METRICS_TOKEN must be printable ASCII without spaces (it is sent in an "
                "Authorization header).",
                hint="Generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'",
                id="answers.E028",
            )
        )
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
    if token and directory and not (os.path.isdir(directory) and os.access(directory, os.W_OK)):
        errors.append(
            Error(
                f"PROMETHEUS_MULTIPROC_DIR is {directory!r}, which is not a writable directory.",
                hint="Create it (empty) before the server processes start, and empty it on each deploy.",
                id="answers.E029",
            )
        )
    return errors
