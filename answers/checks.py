"""System checks for the app's settings; each problem has a stable id."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, register
from django.utils.module_loading import import_string

from answers.citations.normalize import DIALECTS
from answers.conf import PROVIDERS, conf

_RATE = re.compile(r"^\d+/(s|sec|second|m|min|minute|h|hour|d|day)$")


@register()
def check_settings(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    if conf.PROVIDER not in PROVIDERS:
        errors.append(
            Error(
                f"ANSWERS_PROVIDER is {conf.PROVIDER!r}, which is not a known provider.",
                hint=f"Use one of: {', '.join(PROVIDERS)}.",
                id="answers.E001",
            )
        )
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
    if conf.EXTRACTIVE_DELAY_MS < 0:
        errors.append(Error("ANSWERS_EXTRACTIVE_DELAY_MS must not be negative.", id="answers.E006"))
    if conf.RERANKER not in ("lexical", "none"):
        try:
            import_string(conf.RERANKER)
        except ImportError as exc:
            errors.append(
                Error(
                    f"ANSWERS_RERANKER is {conf.RERANKER!r}, which cannot be imported: {exc}",
                    hint='Use "lexical", "none" or the dotted path of a Reranker class.',
                    id="answers.E007",
                )
            )
    if conf.STALE_AFTER <= 0:
        errors.append(Error("ANSWERS_STALE_AFTER must be a positive number of seconds.", id="answers.E008"))
    if conf.SHUTDOWN_GRACE < 0:
        errors.append(Error("ANSWERS_SHUTDOWN_GRACE must not be negative.", id="answers.E009"))
    if conf.PIPELINE_DB_WORKERS < 1:
        errors.append(Error("ANSWERS_PIPELINE_DB_WORKERS must be at least 1.", id="answers.E011"))
    if conf.STREAM_DB_WORKERS < 1:
        errors.append(Error("ANSWERS_STREAM_DB_WORKERS must be at least 1.", id="answers.E010"))
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
    return errors
