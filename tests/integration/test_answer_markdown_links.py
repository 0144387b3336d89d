"""`answer.md` (what *Copy answer* copies) cannot be made to say more than the page: a document URL
holding `>` and `)` is refused at every way in (the ingest command, the documents API, a registered
model), a URL stored before that refusal still cannot end its link target early, and the model's raw
HTML reads as text, as on the page (docs/reference/http.md, "GET /answers/<id>/answer.md")."""

from __future__ import annotations

import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from markdown_it import MarkdownIt

import answers.content
from answers.content.indexing import index_object
from answers.content.validation import InvalidDocument
from answers.models import Answer, Document
from tests.fixtures.api import document_writer

pytestmark = pytest.mark.django_db

# A URL that, once inside `<...>`, closes it and writes a second link of its own.
PHISHING = "https://example.org/x>)[Verify your account here](https://evil.example/phish"
REFUSAL = "holds < or >"


def _rendered(markdown: str) -> str:
    """What a renderer that lets raw HTML through makes of a copied answer (CommonMark's preset)."""
    return MarkdownIt("commonmark").render(markdown)


def test_the_ingest_command_refuses_the_url_naming_it(tmp_path: Path) -> None:
    (tmp_path / "feed.jsonl").write_text(
        json.dumps({"id": "phish", "title": "Account help", "body": "Text.", "url": PHISHING}) + "\n"
    )
    err = StringIO()

    with pytest.raises(CommandError):
        call_command("ingest", str(tmp_path), stdout=StringIO(), stderr=err)

    assert f"feed.jsonl:1: url: {REFUSAL}" in err.getvalue()
    assert not Document.objects.exists()


def test_the_documents_api_refuses_it_with_a_400_naming_url() -> None:
    response = document_writer().post(
        "/api/documents/", {"key": "k", "title": "T", "body": "B.", "url": PHISHING}, format="json"
    )

    assert response.status_code == 400
    assert REFUSAL in json.dumps(response.json()["url"])
    assert not Document.objects.exists()


class _PhishingSource(answers.content.Source):
    def body(self, obj: Any) -> str:
        return "Account help text."

    def url(self, obj: Any) -> str:
        return PHISHING


def test_a_registered_models_document_is_refused_too() -> None:
    user = User.objects.create_user("someone")

    with pytest.raises(InvalidDocument, match=REFUSAL):
        index_object(_PhishingSource(User), user.pk, embed=False)

    assert not Document.objects.exists()


def test_a_url_stored_before_the_refusal_cannot_end_its_link(
    client: Client, answer_factory: Callable[..., Answer]
) -> None:
    stored = Document.objects.create(
        key="phish", title="Account help", url=PHISHING, body="Account help text.", content_hash="1"
    )
    answer = answer_factory(text="Reset it from your profile [1].", documents=[stored])

    markdown = client.get(f"/answers/{answer.id}/answer.md").content.decode()

    html = _rendered(markdown)
    assert html.count("<a href=") == 1
    assert 'href="https://evil.example' not in html
    assert ">Account help</a>" in html


def test_the_models_raw_html_reads_as_text_as_on_the_page(
    client: Client, answer_factory: Callable[..., Answer]
) -> None:
    text = (
        'Quokkas smile <img src=x onerror="alert(1)"> [1]. <script>alert(2)</script>\n\n'
        "In code it stays: `<b>bold</b>`; escaped already: \\<i>kept</i>; a link: <https://example.org/q>."
    )
    answer = answer_factory(text=text, source_count=1)

    # Quotes in text are written `&quot;` by one renderer and as they are by the other.
    html = _rendered(client.get(f"/answers/{answer.id}/answer.md").content.decode()).replace("&quot;", '"')
    page = client.get(f"/answers/{answer.id}/").content.decode()

    for tag in ("<img", "<script", "<i>"):
        assert tag not in html
    for shown in (
        'Quokkas smile &lt;img src=x onerror="alert(1)"&gt;',
        "&lt;script&gt;alert(2)&lt;/script&gt;",
        "<code>&lt;b&gt;bold&lt;/b&gt;</code>",
        "escaped already: &lt;i&gt;kept&lt;/i&gt;",
        '<a href="https://example.org/q">https://example.org/q</a>',
    ):
        assert shown in html
        assert shown in page  # the page shows the same
