"""App configuration: registers the checks and refuses to start on a provider that does not load."""

from __future__ import annotations

from django.apps import AppConfig

from answers import checks  # noqa: F401  (registers the checks)
from answers.conf import PROVIDERS, conf
from answers.content import registry
from answers.plugins import plugin_class
from answers.sse.fanout import install_redis_listener


class AnswersConfig(AppConfig):
    name = "answers"
    verbose_name = "Answers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        install_redis_listener()
        # Each app's answers_sources.py registers its content models (like admin.py), then saves
        # and deletes of those models keep their documents in step.
        registry.autodiscover()
        # Imported here, not at the top: indexing reads the models, which load only after this
        # module (Django's own pattern for signal receivers).
        from answers.content import indexing

        indexing.connect()

        # Servers such as daphne run no system checks: fail at startup anyway (a built-in's
        # client is imported when first used, a dotted path's class now).
        if conf.PROVIDER not in PROVIDERS:
            plugin_class("ANSWERS_PROVIDER", conf.PROVIDER, PROVIDERS)
