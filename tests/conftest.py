"""Fixtures shared by every test layer; each area keeps its own in tests/fixtures/."""

from __future__ import annotations

from hypothesis import settings

pytest_plugins = [
    "tests.fixtures.content",
    "tests.fixtures.providers",
    "tests.fixtures.answers",
]

# Property tests must be repeatable on CI: same examples every run.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("ci")
