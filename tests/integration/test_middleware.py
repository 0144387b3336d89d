"""The middleware chain stays async, so an answer being generated holds no server thread."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.utils.module_loading import import_string


@pytest.mark.parametrize("path", settings.MIDDLEWARE)
def test_every_middleware_is_async_capable(path):
    assert getattr(import_string(path), "async_capable", False), (
        f"{path} would force async views into a thread"
    )


@pytest.mark.django_db
def test_static_files_are_still_served(client):
    response = client.get("/static/answers/answer.js")
    assert response.status_code == 200
    assert b"EventSource" in b"".join(response.streaming_content)
