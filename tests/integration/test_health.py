"""The health probe tells a load balancer whether the app can reach its database."""

from __future__ import annotations

from unittest import mock

import pytest
from django.db import OperationalError


@pytest.mark.django_db
def test_healthz_is_ok_when_the_database_answers(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_healthz_is_503_with_the_reason_when_the_database_fails(client):
    with mock.patch("answers.views._ping_database", side_effect=OperationalError("connection refused")):
        response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert "connection refused" in body["reason"]
