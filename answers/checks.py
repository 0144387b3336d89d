"""System checks for the app's settings; each problem has a stable id, listed with its meaning in CHECKS."""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, register

from answers.citations.normalize import DIALECTS
from answers.citations.trail import compute_trail
from answers.conf import (
    EMBEDDINGS,
    NO_SOURCES,
    PROVIDERS,
    RERANKERS,
    SUPPORT_METHODS,
    AnswersSettings,
    Setting,
    SettingInvalid,
    conf,
    settings_table,
)
from answers.plugins import plugin_problem

# Every id a check here may report, with what it means: the system checks reference
# (docs/reference/checks.md) is generated from this, and answers.conf names which guard each setting.
CHECKS = {
    "answers.E001": "`ANSWERS_PROVIDER` names no built-in provider and no class that imports.",
    "answers.E002": "`ANSWERS_MAX_SOURCES` is under 1.",
    "answers.E003": "`ANSWERS_MIN_SCORE` is not between 0 and 1.",
    "answers.E004": "`ANSWERS_PROVIDER_TIMEOUT` is not a positive number of seconds.",
    "answers.E005": "`ANSWERS_ANON_RATE` or `ANSWERS_USER_RATE` is not a rate such as `30/min`.",
    "answers.E006": "`ANSWERS_EXTRACTIVE_DELAY_MS` is negative.",
    "answers.E007": "`ANSWERS_RERANKER` names no built-in reranker and no class that imports.",
    "answers.E008": "`ANSWERS_STALE_AFTER` is not a positive number of seconds.",
    "answers.E009": "`ANSWERS_SHUTDOWN_GRACE` is negative.",
    "answers.E010": "`ANSWERS_STREAM_DB_WORKERS` is under 1.",
    "answers.E011": "`ANSWERS_PIPELINE_DB_WORKERS` is under 1.",
    "answers.E012": "`DATABASE_POOL_SIZE` is negative.",
    "answers.E013": "`DATABASE_POOL_TIMEOUT` is not a positive number of seconds.",
    "answers.E014": "`ANSWERS_MARKER_DIALECTS` names an unknown dialect.",
    "answers.E015": "`ANSWERS_SUPPORT_METHOD` names no built-in method and no class that imports.",
    "answers.E016": "`ANSWERS_SUPPORT_MIN` is not between 0 and 1.",
    "answers.E017": "`ANSWERS_MODEL` is missing with `ANSWERS_PROVIDER=anthropic`.",
    "answers.E020": "`ANSWERS_EMBEDDINGS` names no known embeddings client.",
    "answers.E021": "`ANSWERS_EMBEDDING_MODEL` is missing with `ANSWERS_EMBEDDINGS=openai`.",
    "answers.E022": "`ANSWERS_EMBEDDING_DIMENSIONS` is under 1 with `ANSWERS_EMBEDDINGS=openai`.",
    "answers.E023": "`ANSWERS_EMBEDDINGS_TIMEOUT` is not a positive number of seconds.",
    "answers.E024": "`ANSWERS_PGVECTOR_INDEX` is neither `hnsw` nor `none`.",
    "answers.E025": "`ANSWERS_TRUSTED_PROXIES` names something that is not an IP address or network.",
    "answers.E026": "`ADMIN_LOGIN_FAILURE_LIMIT` is under 1 or `ADMIN_LOGIN_COOLOFF_MINUTES` not positive.",
    "answers.E027": "`ANSWERS_EVENT_RETENTION` is not a number of seconds, 0 or more.",
    "answers.E028": "`ANSWERS_METRICS_TOKEN` is not printable ASCII without spaces.",
    "answers.E029": "`PROMETHEUS_MULTIPROC_DIR` is not a writable directory while metrics are on.",
    "answers.E033": "`ANSWERS_NO_SOURCES` is neither `decline` nor `answer`.",
    "answers.E034": "`ANSWERS_DECLINE_TEXT` is empty or holds a citation marker.",
    "answers.E036": "`ANSWERS_MAX_TOKENS` is under 1.",
    "answers.E037": "`ANSWERS_MAX_ANSWER_CHARS` is under 1.",
    "answers.E039": "`ANSWERS_REQUEST_THREADS` is negative.",
    "answers.E045": "`ANSWERS_CONVERSATION_TURNS` is under 1.",
    "answers.E046": "`ANSWERS_CONVERSATION_HISTORY_CHARS` is negative.",
    "answers.E047": "`ANSWERS_PROVIDER` imports, but not a provider class (`from_settings`, `stream`).",
    "answers.E048": "`ANSWERS_RERANKER` imports, but not a reranker class (`score`).",
    "answers.E049": "`ANSWERS_SUPPORT_METHOD` imports, but not a support method class (`scores`).",
    "answers.E050": "`ANSWERS_MAX_GENERATING` is negative.",
    "answers.E061": "`ANSWERS_MODEL` is missing with `ANSWERS_PROVIDER=cohere`.",
    "answers.E062": "`COHERE_API_KEY` is missing, or not printable without spaces, with `cohere`.",
    "answers.E063": "`COHERE_BASE_URL` is not an http(s) URL.",
    "answers.E064": "`ANSWERS_MODEL` is missing with `ANSWERS_PROVIDER=mistral`.",
    "answers.E065": "`MISTRAL_API_KEY` is missing, or not printable without spaces, with `mistral`.",
    "answers.E066": "`MISTRAL_BASE_URL` is not an http(s) URL.",
    "answers.E067": "`OPENAI_API_KEY` is not printable without spaces, with `openai`.",
    "answers.E068": "`OPENAI_BASE_URL` is not an http(s) URL, with `openai`.",
    "answers.E069": "`ANTHROPIC_API_KEY` is missing, or not printable without spaces, with `anthropic`.",
    "answers.E070": "`ANTHROPIC_BASE_URL` is not an http(s) URL, with `anthropic`.",
}

# A bearer token: printable ASCII, no spaces (RFC 6750 allows fewer characters still).
_TOKEN = re.compile(r"[!-~]+")
_RATE = re.compile(r"^\d+/(s|sec|second|m|min|minute|h|hour|d|day)$")
_HTTP_URL = re.compile(r"https?://[^\s/]+(/\S*)?")

_Check = Callable[[], list[CheckMessage]]


def _unreadable() -> list[CheckMessage]:
    """A value a setting's parser cannot read, reported under the first check id that guards it."""
    errors: list[CheckMessage] = []
    for setting in settings_table():
        try:
            setting.value()
        except SettingInvalid as problem:
            errors.append(Error(str(problem), id=setting.checks[0]))
    return errors


def _readable(parts: Sequence[_Check]) -> list[CheckMessage]:
    """Each part's errors; a part that meets an unreadable value is left out (_unreadable reports it)."""
    errors: list[CheckMessage] = []
    for part in parts:
        try:
            errors += part()
        except SettingInvalid:
            continue
    return errors


@register()
def check_settings(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    return _unreadable() + _readable(
        [
            *(plugin.check for plugin in _PLUGINS),
            *(bound.check for bound in _BOUNDS),
            _check_rates,
            _check_proxies,
            _check_admin_login,
            _check_pool,
            _check_dialects,
            *(endpoint.check for endpoint in _ENDPOINTS),
            _check_decline,
        ]
    )


class _Bound(NamedTuple):
    """A number setting's range: its value must hold `holds`, else its first check id is reported."""

    setting: Setting[Any]
    holds: Callable[[Any], bool]
    must: str
    hint: str | None = None

    def check(self) -> list[CheckMessage]:
        if self.holds(self.setting.value()):
            return []
        return [Error(f"{self.setting.name} must {self.must}.", hint=self.hint, id=self.setting.checks[0])]


_BOUNDS = (
    _Bound(AnswersSettings.MAX_SOURCES, lambda n: n >= 1, "be at least 1"),
    _Bound(AnswersSettings.MIN_SCORE, lambda n: 0.0 <= n <= 1.0, "be between 0 and 1"),
    _Bound(AnswersSettings.PROVIDER_TIMEOUT, lambda n: n > 0, "be a positive number of seconds"),
    _Bound(AnswersSettings.EXTRACTIVE_DELAY_MS, lambda n: n >= 0, "not be negative"),
    _Bound(AnswersSettings.STALE_AFTER, lambda n: n > 0, "be a positive number of seconds"),
    _Bound(AnswersSettings.SHUTDOWN_GRACE, lambda n: n >= 0, "not be negative"),
    _Bound(AnswersSettings.PIPELINE_DB_WORKERS, lambda n: n >= 1, "be at least 1"),
    _Bound(AnswersSettings.STREAM_DB_WORKERS, lambda n: n >= 1, "be at least 1"),
    _Bound(AnswersSettings.REQUEST_THREADS, lambda n: n >= 0, "be 0 (a thread per request) or more"),
    _Bound(
        AnswersSettings.MAX_GENERATING, lambda n: n >= 0, "be 0 (no limit) or more",
        hint="It is the most answers one process generates at once; past it asks get 503.",
    ),
    _Bound(AnswersSettings.SUPPORT_MIN, lambda n: 0.0 <= n <= 1.0, "be between 0 and 1"),
    _Bound(AnswersSettings.MAX_TOKENS, lambda n: n >= 1, "be at least 1"),
    _Bound(AnswersSettings.MAX_ANSWER_CHARS, lambda n: n >= 1, "be at least 1"),
    _Bound(
        AnswersSettings.CONVERSATION_TURNS, lambda n: n >= 1, "be 1 or more (1: no follow-ups)",
        hint="The default, 20, lets a conversation hold 20 answers.",
    ),
    _Bound(
        AnswersSettings.CONVERSATION_HISTORY_CHARS, lambda n: n >= 0,
        "be 0 or more (0: follow-ups carry no history)",
        hint="The default, 6000, keeps about the last few turns of a conversation in the prompt.",
    ),
    _Bound(AnswersSettings.EMBEDDINGS_TIMEOUT, lambda n: n > 0, "be a positive number of seconds"),
    _Bound(
        AnswersSettings.EVENT_RETENTION, lambda n: 0 <= n < math.inf, "be seconds, 0 or more",
        hint="The default, 604800, keeps an answer's events for 7 days after it finishes.",
    ),
)  # fmt: skip


def _check_rates() -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for name, rate in (("ANSWERS_ANON_RATE", conf.ANON_RATE), ("ANSWERS_USER_RATE", conf.USER_RATE)):
        if not _RATE.match(rate):
            errors.append(
                Error(f"{name} is {rate!r}, not a rate.", hint="Write it like '30/min'.", id="answers.E005")
            )
    return errors


def _check_proxies() -> list[CheckMessage]:
    errors: list[CheckMessage] = []
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
    return errors


def _check_admin_login() -> list[CheckMessage]:
    """The project's django-axes settings (project/settings.py), which the app's client address feeds."""
    if getattr(settings, "AXES_FAILURE_LIMIT", 1) >= 1 and getattr(
        settings, "AXES_COOLOFF_TIME", timedelta(minutes=1)
    ) > timedelta(0):
        return []
    return [
        Error(
            "ADMIN_LOGIN_FAILURE_LIMIT must be at least 1 and ADMIN_LOGIN_COOLOFF_MINUTES positive.",
            id="answers.E026",
        )
    ]


def _check_pool() -> list[CheckMessage]:
    """The project's PostgreSQL pool (project/settings.py), which the pipeline's workers share."""
    errors: list[CheckMessage] = []
    if getattr(settings, "DATABASE_POOL_SIZE", 0) < 0:
        errors.append(Error("DATABASE_POOL_SIZE must be 0 (no pool) or more.", id="answers.E012"))
    if getattr(settings, "DATABASE_POOL_TIMEOUT", 1) <= 0:
        errors.append(Error("DATABASE_POOL_TIMEOUT must be a positive number of seconds.", id="answers.E013"))
    return errors


def _check_dialects() -> list[CheckMessage]:
    unknown = [name for name in conf.MARKER_DIALECTS if name not in DIALECTS]
    if not unknown:
        return []
    return [
        Error(
            f"ANSWERS_MARKER_DIALECTS names unknown dialects: {', '.join(map(repr, unknown))}.",
            hint=f"Use 'all', 'none' or some of: {', '.join(DIALECTS)}, comma-separated.",
            id="answers.E014",
        )
    ]


class _Endpoint(NamedTuple):
    """What a provider needs to be reached, checked while ANSWERS_PROVIDER names it.

    The key goes into a header: one with a space or a line break would fail every request. It is
    never quoted in a message (a message may reach a log).
    """

    provider: str
    key: Setting[str | None]
    url: Setting[str | None]
    url_hint: str
    key_required: bool = True
    model_check: str | None = None  # the id reporting a missing ANSWERS_MODEL, when one is required
    model_hint: str = ""

    def check(self) -> list[CheckMessage]:
        if self.provider != conf.PROVIDER:
            return []
        errors: list[CheckMessage] = []
        if self.model_check is not None and not conf.MODEL.strip():
            errors.append(
                Error(
                    f"ANSWERS_MODEL is required with ANSWERS_PROVIDER {self.provider!r}.",
                    hint=self.model_hint,
                    id=self.model_check,
                )
            )
        errors += self._check_key()
        base_url = self.url.value()
        if base_url is not None and not _HTTP_URL.fullmatch(base_url):
            errors.append(
                Error(
                    f"{self.url.env_name} is {base_url!r}, not an http(s) URL.",
                    hint=self.url_hint,
                    id=self.url.checks[0],
                )
            )
        return errors

    def _check_key(self) -> list[CheckMessage]:
        key = self.key.value()
        if (key is None and not self.key_required) or _TOKEN.fullmatch(key or ""):
            return []
        if self.key_required:
            message = f"is required with ANSWERS_PROVIDER {self.provider!r} (printable, without spaces)."
            vendor = self.provider.capitalize()
            hint = f"Any non-empty value for a {vendor}-compatible server that needs no key."
        else:
            message = f"must be printable, without spaces, with ANSWERS_PROVIDER {self.provider!r}."
            hint = "Leave it unset for a server that needs no key."
        return [Error(f"{self.key.env_name} {message}", hint=hint, id=self.key.checks[0])]


_ENDPOINTS = (
    _Endpoint(
        "openai", AnswersSettings.OPENAI_API_KEY, AnswersSettings.OPENAI_BASE_URL, key_required=False,
        url_hint="Leave it unset for OpenAI's own API, or name a server, e.g. http://127.0.0.1:11434/v1.",
    ),
    _Endpoint(
        "anthropic", AnswersSettings.ANTHROPIC_API_KEY, AnswersSettings.ANTHROPIC_BASE_URL,
        url_hint="Leave it unset for Anthropic's own API, or name a gateway, e.g. https://gateway.example/anthropic.",
        model_check="answers.E017",
        model_hint="Name an Anthropic model that supports citations, e.g. ANSWERS_MODEL=claude-sonnet-4-5.",
    ),
    _Endpoint(
        "cohere", AnswersSettings.COHERE_API_KEY, AnswersSettings.COHERE_BASE_URL,
        url_hint="Leave it unset for Cohere's own API, or name a server, e.g. https://gateway.example/cohere.",
        model_check="answers.E061",
        model_hint="Name a Cohere chat model that cites documents, e.g. ANSWERS_MODEL=command-a-03-2025.",
    ),
    _Endpoint(
        "mistral", AnswersSettings.MISTRAL_API_KEY, AnswersSettings.MISTRAL_BASE_URL,
        url_hint="Leave it unset for Mistral's own API, or name a server, e.g. https://api.eu.mistral.ai.",
        model_check="answers.E064",
        model_hint="Name a Mistral chat model, e.g. ANSWERS_MODEL=mistral-large-latest.",
    ),
)  # fmt: skip


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


class _PluginSetting(NamedTuple):
    """A plug-in setting (answers.plugins), what its class needs, and its two check ids."""

    setting: Setting[str]
    builtins: dict[str, str]
    kind: str
    needs: tuple[str, ...]

    def check(self) -> list[CheckMessage]:
        value = self.setting.value()
        problem = plugin_problem(value, self.builtins, needs=self.needs)
        if problem is None:
            return []
        # checks[0] names no loadable class, checks[1] names something without what the pipeline calls.
        not_loaded, wrong_shape = self.setting.checks
        return [
            Error(
                f"{self.setting.name} is {value!r}, which {problem.message}.",
                hint=f"Use one of: {', '.join(self.builtins)}, or a {self.kind} class's dotted path.",
                id=wrong_shape if problem.loads else not_loaded,
            )
        ]


_PLUGINS = (
    _PluginSetting(AnswersSettings.PROVIDER, PROVIDERS, "Provider", ("from_settings", "stream")),
    _PluginSetting(AnswersSettings.RERANKER, RERANKERS, "Reranker", ("score",)),
    _PluginSetting(AnswersSettings.SUPPORT_METHOD, SUPPORT_METHODS, "SupportMethod", ("scores",)),
)


@register()
def check_embeddings(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """Dense retrieval's settings (answers.retrieval.embeddings): ids from E020 up."""
    return _readable([_check_embeddings])


def _check_embeddings() -> list[CheckMessage]:
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
    if conf.PGVECTOR_INDEX not in ("hnsw", "none"):
        errors.append(Error("ANSWERS_PGVECTOR_INDEX must be 'hnsw' or 'none'.", id="answers.E024"))
    return errors


@register()
def check_operations(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """Metrics (answers.metrics): ids E028-E029."""
    return _readable([_check_metrics])


def _check_metrics() -> list[CheckMessage]:
    errors: list[CheckMessage] = []
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
    directory = conf.PROMETHEUS_MULTIPROC_DIR
    if token and directory and not (os.path.isdir(directory) and os.access(directory, os.W_OK)):
        errors.append(
            Error(
                f"PROMETHEUS_MULTIPROC_DIR is {directory!r}, which is not a writable directory.",
                hint="Create it (empty) before the server processes start, and empty it on each deploy.",
                id="answers.E029",
            )
        )
    return errors
