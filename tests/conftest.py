"""Fixtures shared by every test layer."""

from __future__ import annotations

from hypothesis import settings

# Property tests must be repeatable on CI: same examples every run.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("ci")
