"""HTTP methods: JSON errors under /api/ (the schema and its docs too), no event stream but for GET,
pages answering HEAD as GET."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db(transaction=True)  # the stream checks access on a thread of its own


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("post", "/api/docs/"),
        ("put", "/api/docs/"),
        ("delete", "/api/docs/"),
        ("post", "/api/schema/"),
        ("patch", "/api/schema/"),
        ("trace", "/api/schema/"),
        ("trace", "/api/answers/"),
    ],
)
def test_a_method_an_api_url_does_not_take_is_a_json_405(client: Client, method: str, url: str) -> None:
    response = getattr(client, method)(url)

    assert response.status_code == 405
    assert response["Content-Type"] == "application/json"
    assert method.upper() in response.json()["detail"]


@pytest.mark.parametrize("url", ["/api/docs/", "/api/schema/", "/api/answers/"])
def test_options_on_an_api_url_is_json(client: Client, url: str) -> None:
    response = client.options(url)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json()["name"]


def test_the_schema_and_docs_still_answer_get(client: Client) -> None:
    schema = client.get("/api/schema/")
    docs = client.get("/api/docs/")

    assert schema.status_code == 200
    assert schema["Content-Type"].startswith("application/vnd.oai.openapi")
    assert docs.status_code == 200
    assert docs["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("method", ["options", "trace", "head", "post", "put", "delete"])
def test_only_get_opens_an_event_stream(client: Client, answer_factory, method: str) -> None:
    answer = answer_factory(text="Walruses sip tea [1].", source_count=1)

    for url in (f"/answers/{answer.id}/events/", "/answers/NOT-AN-ID/events/"):
        response = getattr(client, method)(url)

        assert response.status_code == 405, url
        assert not response.streaming
        assert response["Allow"] == "GET"
        if method != "head":
            assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize("url", ["/", "/?q=tea", "/favicon.ico"])
def test_head_on_a_page_is_answered_as_get(client: Client, url: str) -> None:
    head = client.head(url)

    assert head.status_code == client.get(url).status_code
    assert head.status_code in (200, 302)


def test_head_on_a_permalink_follows_its_read_rules(client: Client, answer_factory) -> None:
    answer = answer_factory(text="Walruses sip tea [1].", source_count=1)

    assert client.head(f"/answers/{answer.id}/").status_code == 200
    assert client.head("/answers/00000000-0000-4000-8000-000000000000/").status_code == 404
