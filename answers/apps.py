"""App configuration: registers the checks and refuses to start on a bad provider name."""

from __future__ import annotations

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured

from answers import checks  # noqa: F401  (registers the checks)
from answers.conf import PROVIDERS, conf
from answers.sse.fanout import install_redis_listener


class AnswersConfig(AppConfig):
    name = "answers"
    verbose_name = "Answers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        install_redis_listener()

        # Servers such as daphne run no system checks: fail at startup anyway.
        if conf.PROVIDER not in PROVIDERS:
            raise ImproperlyConfigured(
                f"ANSWERS_PROVIDER is {conf.PROVIDER!r}; use one of: {', '.join(PROVIDERS)}."
            )
