"""Admin shows the site's content read-only: what retrieval can find, and how it was chunked."""

from __future__ import annotations

import pytest
from django.urls import reverse

from answers.content.storage import document_upsert
from answers.models import Document


@pytest.fixture
def document(db):
    doc, _, _ = document_upsert(
        key="https://example.org/<b>walrus</b>",
        title="Walrus <script>alert(1)</script> care",
        url="https://example.org/walrus",
        body="# Feeding\n\nWalruses eat clams. They dive for them.\n\n# Sleeping\n\nWalruses sleep in water.",
    )
    return doc


def test_the_document_list_shows_titles_and_chunk_counts_escaped(admin_client, document):
    response = admin_client.get(reverse("admin:answers_document_changelist"), {"q": "walrus"})

    html = response.content.decode()
    assert response.status_code == 200
    assert "Walrus &lt;script&gt;alert(1)&lt;/script&gt; care" in html
    assert "<script>alert(1)</script>" not in html
    assert f">{document.chunks.count()}<" in html


def test_a_document_page_lists_its_chunks_and_cannot_be_edited(admin_client, document):
    url = reverse("admin:answers_document_change", args=[document.pk])

    page = admin_client.get(url)
    posted = admin_client.post(url, {"title": "Changed"})

    assert page.status_code == 200
    assert "Walruses eat clams." in page.content.decode()
    assert "Sleeping" in page.content.decode()
    assert posted.status_code == 403
    assert Document.objects.get(pk=document.pk).title.startswith("Walrus")
    assert admin_client.get(reverse("admin:answers_document_add")).status_code == 403


def test_documents_are_not_shown_to_users_without_permission(client, django_user_model, document):
    client.force_login(django_user_model.objects.create_user("plain", password="pw", is_staff=True))
    assert client.get(reverse("admin:answers_document_changelist")).status_code == 403
