"""The documents API: integrators push content by key, with model permissions and ingest's validation."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from answers.models import Chunk, Document
from answers.retrieval.pipeline import retrieve

pytestmark = pytest.mark.django_db

URL = "/api/documents/"
PAYLOAD = {
    "key": "https://example.com/tea",
    "title": "Tea",
    "url": "https://example.com/tea",
    "body": "Tea is a drink.",
}


def user_with(*codenames: str, staff: bool = False) -> User:
    user = User.objects.create_user(username=f"u{User.objects.count()}", password=None, is_staff=staff)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="answers", codename__in=codenames)
    )
    return user


def token_client(*codenames: str) -> APIClient:
    client = APIClient()
    token = Token.objects.create(user=user_with(*codenames))
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def writer() -> APIClient:
    return token_client("add_document", "change_document", "view_document", "delete_document")


def test_routes_are_named() -> None:
    assert reverse("api:document-upsert") == URL
    assert reverse("api:document-detail", kwargs={"document_id": 7}) == "/api/documents/7/"


def test_post_creates_then_updates_by_key(writer: APIClient) -> None:
    response = writer.post(URL, PAYLOAD, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["created"] is True
    assert body["chunk_count"] == 1
    response = writer.post(URL, {**PAYLOAD, "body": "Tea is a hot drink."}, format="json")
    assert response.status_code == 200
    assert response.json()["id"] == body["id"]
    assert response.json()["changed"] is True
    assert Document.objects.count() == 1
    assert Document.objects.get().body == "Tea is a hot drink."


def test_posted_document_is_searchable(writer: APIClient) -> None:
    writer.post(URL, {**PAYLOAD, "body": "Quokkas smile at tourists."}, format="json")
    (source,) = retrieve("quokkas", min_score=0.0, max_sources=5).sources
    assert source.title == "Tea"


def test_get_and_delete(writer: APIClient) -> None:
    document_id = writer.post(URL, PAYLOAD, format="json").json()["id"]
    response = writer.get(f"{URL}{document_id}/")
    assert response.status_code == 200
    assert response.json()["key"] == PAYLOAD["key"]
    assert writer.delete(f"{URL}{document_id}/").status_code == 204
    assert not Document.objects.exists()
    assert not Chunk.objects.exists()
    assert writer.get(f"{URL}{document_id}/").status_code == 404


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"key": ""}, "key"),
        ({"key": "k" * 2001}, "key"),
        ({"title": "   "}, "title"),
        ({"body": ""}, "body"),
        ({"body": None}, "body"),
        ({"metadata": [1, 2]}, "metadata"),
        ({"url": "u" * 2001}, "url"),
        ({"title": -3.2e-240}, "title"),  # a number is not a title (DRF would coerce it)
        ({"url": 0.12}, "url"),
        ({"key": 42}, "key"),
    ],
)
def test_invalid_input_is_400_naming_the_field(writer: APIClient, change: dict[str, Any], field: str) -> None:
    response = writer.post(URL, {**PAYLOAD, **change}, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not Document.objects.exists()


def test_missing_fields_are_named(writer: APIClient) -> None:
    response = writer.post(URL, {}, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"key", "title", "body"}


def test_unsafe_url_is_stored_without_link_and_reported(writer: APIClient) -> None:
    response = writer.post(URL, {**PAYLOAD, "url": "javascript:alert(1)"}, format="json")
    assert response.status_code == 201
    assert response.json()["url"] == ""
    assert "url" in response.json()["warnings"]


@pytest.mark.parametrize("char", ["\u200e", "\u200f", "\u061c", "\u2028", "\u200b", "\u00ad"])
def test_a_url_with_an_invisible_or_bidi_character_is_stored_without_link(
    writer: APIClient, char: str
) -> None:
    response = writer.post(URL, {**PAYLOAD, "url": f"https://example.org/a{char}b"}, format="json")

    assert response.status_code == 201
    assert response.json()["url"] == ""
    assert "url" in response.json()["warnings"]
    assert Document.objects.get().url == ""


def test_anonymous_is_refused() -> None:
    assert APIClient().post(URL, PAYLOAD, format="json").status_code in (401, 403)
    assert not Document.objects.exists()


def test_bad_token_is_refused() -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token nope")
    response = client.post(URL, PAYLOAD, format="json")
    assert response.status_code in (401, 403)
    assert "detail" in response.json()


def test_token_without_permission_is_403() -> None:
    response = token_client().post(URL, PAYLOAD, format="json")
    assert response.status_code == 403
    assert "detail" in response.json()


def test_staff_without_permission_is_403() -> None:
    client = APIClient()
    client.force_login(user_with(staff=True))
    assert client.post(URL, PAYLOAD, format="json").status_code == 403


def test_staff_with_permission_may_create() -> None:
    client = APIClient()
    client.force_login(user_with("add_document", staff=True))
    assert client.post(URL, PAYLOAD, format="json").status_code == 201


def test_add_permission_alone_cannot_update_an_existing_key(writer: APIClient) -> None:
    writer.post(URL, PAYLOAD, format="json")
    response = token_client("add_document").post(URL, {**PAYLOAD, "title": "Hijacked"}, format="json")
    assert response.status_code == 403
    assert Document.objects.get().title == "Tea"


def test_reading_needs_view_permission(writer: APIClient) -> None:
    document_id = writer.post(URL, PAYLOAD, format="json").json()["id"]
    assert token_client("add_document").get(f"{URL}{document_id}/").status_code == 403
    assert token_client("view_document").get(f"{URL}{document_id}/").status_code == 200


def test_deleting_needs_delete_permission(writer: APIClient) -> None:
    document_id = writer.post(URL, PAYLOAD, format="json").json()["id"]
    assert token_client("view_document").delete(f"{URL}{document_id}/").status_code == 403
    assert Document.objects.exists()
