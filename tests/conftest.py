"""Fixtures shared by every test layer; each area keeps its own in tests/fixtures/."""

from __future__ import annotations

import asyncio
import os

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from hypothesis import settings

pytest_plugins = [
    "tests.fixtures.content",
    "tests.fixtures.providers",
    "tests.fixtures.answers",
    "tests.fixtures.live_server",
    "tests.fixtures.anthropic_stub",
    "tests.fixtures.cohere_stub",
    "tests.fixtures.mistral_stub",
    "tests.fixtures.redis_server",
    "tests.fixtures.pushpin",
    "tests.fixtures.embeddings_server",
    "tests.fixtures.pgvector",
    "tests.fixtures.conversations",
    "tests.fixtures.reviewers",
    "tests.fixtures.migrations",
    "tests.fixtures.evaluation",
]

# The example site (tests/example_site) is its own Django project: its tests run in a session of
# their own, under its settings (`pytest tests/example_site --ds=tests.example_site.settings`).
if os.environ.get("DJANGO_SETTINGS_MODULE") != "tests.example_site.settings":
    collect_ignore = ["example_site"]

# Property tests must be repeatable on CI: same examples every run.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("ci")


@pytest.fixture(scope="session", autouse=True)
def _close_connections_of_other_threads(request):
    """Async tests reach the database from asgiref's worker thread; close its connections too,
    or PostgreSQL refuses to drop the test database while they are open."""
    if not request.config.pluginmanager.hasplugin("django"):
        yield
        return
    request.getfixturevalue("django_db_setup")  # so this tears down before the database does
    blocker = request.getfixturevalue("django_db_blocker")
    yield
    with blocker.unblock():
        asyncio.run(sync_to_async(connections.close_all)())


@pytest.fixture(autouse=True)
def _a_stop_ends_with_its_test():
    """A test that stops the pipeline (lifecycle.shutdown, begin_shutdown) leaves the next one a process
    that takes questions: a stopping one refuses every new ask."""
    yield
    # Imported here: importing answers before pytest-django has set Django up fails.
    from answers.pipeline import lifecycle

    lifecycle._shutting_down = False
