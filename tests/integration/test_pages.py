"""The web pages: the ask page, its no-JavaScript path, permalinks, and the server-side rendering they use."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from answers.citations.trail import compute_trail, final_markers
from answers.models import Answer, Document
from answers.pipeline import flow
from answers.rendering import link_url, render_answer_html
from tests.fixtures.answers import ScriptedProvider, fixed_retriever, make_documents, sources_for
from tests.fixtures.content import hostile_documents

# --- rendering (pure: no database)


@pytest.mark.parametrize(
    ("text", "count", "expected"),
    [
        ("Plain.", 0, "<p>Plain.</p>\n"),
        ("A [1].", 1, '<p>A <a class="cite" href="#source-1">[1]</a>.</p>\n'),
        (
            "A [1, 2].",
            2,
            '<p>A [<a class="cite" href="#source-1">1</a>, <a class="cite" href="#source-2">2</a>].</p>\n',
        ),
        ("Out of range [3].", 2, "<p>Out of range [3].</p>\n"),
        (
            "One\n\nTwo [1]\nthree",
            1,
            '<p>One</p>\n<p>Two <a class="cite" href="#source-1">[1]</a><br>\nthree</p>\n',
        ),
        (
            "<script>alert(1)</script> [1]",
            1,
            '<p>&lt;script&gt;alert(1)&lt;/script&gt; <a class="cite" href="#source-1">[1]</a></p>\n',
        ),
        ('<img src=x onerror="alert(1)">', 0, '<p>&lt;img src=x onerror="alert(1)"&gt;</p>\n'),
        ("Link [1](javascript:alert(1))", 1, "<p>Link [1](javascript:alert(1))</p>\n"),
        ("", 0, ""),
    ],
)
def test_render_answer_html_escapes_then_links_markers(text: str, count: int, expected: str) -> None:
    assert render_answer_html(text, reference_count=count) == expected


def test_rendering_links_the_markers_the_trail_recorded_and_nothing_else() -> None:
    # The removed [9] keeps the blank after it (not at a line start): no `[2](x)` link is formed.
    raw = "\r\n\r\nFirst [2[9]] then [1].\r\n\r\nA link [1][9] (x) is text."
    trail = compute_trail(raw, 2)
    assert trail.final_text == "\r\n\r\nFirst [1] then [2].\r\n\r\nA link [2] (x) is text."
    recorded = final_markers(trail.markers_json())
    assert [trail.final_text[m.start : m.end] for m in recorded] == ["[1]", "[2]", "[2]"]

    assert render_answer_html(trail.final_text, reference_count=2, markers=recorded) == (
        '<p>First <a class="cite" href="#source-1">[1]</a> then '
        '<a class="cite" href="#source-2">[2]</a>.</p>\n'
        '<p>A link <a class="cite" href="#source-2">[2]</a> (x) is text.</p>\n'
    )
    # What the record says decides: a marker it does not list stays text.
    assert render_answer_html("A [1].", reference_count=1, markers=[]) == "<p>A [1].</p>\n"


def test_rendered_html_keeps_the_text_visible_as_written() -> None:
    text = "Zebras & horses <b>graze</b> [1] and [1, 2]."
    rendered = render_answer_html(text, reference_count=2)
    visible = re.sub(r"<[^>]+>", "", rendered).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    assert visible == text + "\n"  # a paragraph, and the newline after it


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.org/a", "https://example.org/a"),
        ("HTTP://EXAMPLE.ORG", "HTTP://EXAMPLE.ORG"),
        ("/docs/a", "/docs/a"),
        ("//evil.example/a", None),
        ("/\\evil.example", None),
        ("javascript:alert(1)", None),
        ("JaVaScRiPt:alert(1)", None),
        ("data:text/html,x", None),
        (" https://example.org", None),
        ("https://", None),
        ("docs/relative", None),
        ("", None),
    ],
)
def test_only_http_https_and_site_relative_urls_become_links(url: str, expected: str | None) -> None:
    assert link_url(url) == expected


# --- the ask page


@pytest.mark.django_db
def test_ask_page_has_the_form_and_the_page_hooks(client: Client) -> None:
    response = client.get("/")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'name="question"' in html
    assert 'type="submit"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'action="/ask/"' in html
    assert "data-answer-text" in html
    assert "data-answer-sources" in html
    assert "data-answer-status" in html
    assert 'aria-live="polite"' in html
    assert "answers/answer.js" in html
    assert 'name="viewport"' in html
    assert "script-src 'self'" in response["Content-Security-Policy"]


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch, db: None) -> Callable[..., list[Document]]:
    """Make the pipeline answer with `pieces` over `count` fresh documents (no provider, no search)."""

    def script(pieces: list[str], *, count: int = 3, **provider: Any) -> list[Document]:
        documents = make_documents(count, prefix="Page")
        monkeypatch.setattr(flow, "get_provider", lambda: ScriptedProvider(pieces=pieces, **provider))
        monkeypatch.setattr(flow, "retrieve", fixed_retriever(sources_for(documents)))
        return documents

    return script


@pytest.mark.django_db
def test_form_without_javascript_answers_and_redirects_to_the_permalink(
    client: Client, scripted: Callable[..., list[Document]]
) -> None:
    scripted(["Page 3 says [3]", ", page 1 says [1]."])
    response = client.post("/ask/", {"question": "  What do the pages say?  "})

    answer = Answer.objects.get()
    assert response.status_code == 303
    # The permalink of the conversation the answer starts, at its turn (docs/reference/page-hooks.md).
    assert response["Location"] == f"/conversations/{answer.conversation_id}/#turn-1"
    assert answer.question == "What do the pages say?"
    assert answer.delivery == Answer.Delivery.JSON
    assert answer.asker_id is None

    page = client.get(response["Location"])
    html = page.content.decode()
    assert page.status_code == 200
    assert 'data-answer-status="done"' in html
    assert (
        'Page 3 says <a class="cite" href="#source-1">[1]</a>, '
        'page 1 says <a class="cite" href="#source-2">[2]</a>.' in html
    )
    sources = re.findall(
        r'<li id="source-(\d+)" value="\d+" data-number="\d+">\s*'
        r'<span class="source-number">\[\d+\]</span>\s*'
        r'<a class="source-title" href="([^"]+)">([^<]+)</a>',
        html,
    )
    assert sources == [
        ("1", "https://example.org/page-3", "Page 3"),
        ("2", "https://example.org/page-1", "Page 1"),
    ]


@pytest.mark.django_db
def test_form_signed_in_asker_owns_the_answer(
    client: Client, scripted: Callable[..., list[Document]]
) -> None:
    user = User.objects.create_user("asker", password="x-long-password-1")
    client.force_login(user)
    scripted(["Yes [1]."])
    response = client.post("/ask/", {"question": "Mine?"})
    assert response.status_code == 303
    assert Answer.objects.get().asker_id == user.pk


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("question", "message"),
    [
        ("", "Please type a question."),
        ("   ", "Please type a question."),
        ("x" * 2001, "at most 2000 characters"),
        ("\u200b\u200b", "at least one visible character"),
        ("\ufeff \u200e", "at least one visible character"),
    ],
)
def test_form_rejects_a_blank_or_over_long_question(
    client: Client, question: str, message: str, scripted: Callable[..., list[Document]]
) -> None:
    scripted(["never [1]"])
    response = client.post("/ask/", {"question": question})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Answer.objects.exists()


@pytest.mark.django_db
def test_form_needs_its_csrf_token() -> None:
    response = Client(enforce_csrf_checks=True).post("/ask/", {"question": "Hi?"})
    assert response.status_code == 403
    assert not Answer.objects.exists()


@pytest.mark.django_db
def test_form_provider_failure_lands_on_a_permalink_with_the_error(
    client: Client, scripted: Callable[..., list[Document]]
) -> None:
    scripted(
        ["Partial"], fail_kind="upstream", fail_message="The answer service had an internal error (500)."
    )
    response = client.post("/ask/", {"question": "Will it fail?"}, follow=True)
    html = response.content.decode()
    assert response.status_code == 200
    assert 'data-answer-status="failed"' in html
    assert "The answer service had an internal error (500)." in html
    assert "Partial" not in html, "a failed answer's partial text is not shown as an answer"


@pytest.mark.django_db
def test_get_on_the_form_endpoint_is_not_allowed(client: Client) -> None:
    assert client.get("/ask/").status_code == 405


# --- permalinks


@pytest.mark.django_db
def test_permalink_shows_the_fallback_answer_with_every_source(
    client: Client, answer_factory: Callable[..., Answer]
) -> None:
    answer = answer_factory(text="No numbers at all.", source_count=3)
    html = client.get(answer.get_absolute_url()).content.decode()
    assert "<p>No numbers at all.</p>" in html
    assert re.findall(r'<li id="source-(\d+)"', html) == ["1", "2", "3"]
    assert "cites no source by number" in html


@pytest.mark.django_db
def test_permalink_escapes_markup_from_the_text_and_the_sources(
    client: Client, answer_factory: Callable[..., Answer]
) -> None:
    documents = hostile_documents(second_url="//evil.example/x")
    answer = answer_factory(
        text='<script>alert("x")</script> [1] <img src=x onerror=alert(3)> [2]', documents=documents
    )
    html = client.get(answer.get_absolute_url()).content.decode()
    body = html.split("<main", 1)[1]
    assert "<script>alert" not in body
    assert "<img" not in body
    # Shown as text (nh3 writes quotes in text unescaped, which is safe there).
    assert '&lt;script&gt;alert("x")&lt;/script&gt;' in body
    assert "&lt;img src=x onerror=&quot;alert(2)&quot;&gt;" in body
    assert 'href="javascript' not in body
    assert 'href="//evil' not in body


@pytest.mark.django_db
def test_permalink_follows_the_read_rules(client: Client, answer_factory: Callable[..., Answer]) -> None:
    alice = User.objects.create_user("alice", password="x-long-password-1")
    bob = User.objects.create_user("bob", password="x-long-password-1")
    staff = User.objects.create_user("staff", password="x-long-password-1", is_staff=True)
    private = answer_factory(text="Private [1].", asker_id=alice.pk)
    public = answer_factory(text="Public [1].")

    assert client.get(private.get_absolute_url()).status_code == 404
    assert client.get(public.get_absolute_url()).status_code == 200
    for user, expected in ((alice, 200), (staff, 200), (bob, 404)):
        client.force_login(user)
        assert client.get(private.get_absolute_url()).status_code == expected, user.username
    assert client.get("/answers/00000000-0000-4000-8000-000000000000/").status_code == 404


def without_templates(html: str) -> str:
    """The page as shown: the inert <template> markup the script clones for a streamed answer left out."""
    return re.sub(r"<template\b.*?</template>", "", html, flags=re.S)


@pytest.mark.django_db
def test_a_done_permalink_offers_feedback_and_a_flag_on_each_source(
    client: Client, answer_factory: Callable[..., Answer]
) -> None:
    answer = answer_factory(text="Cites [3] then [1].", source_count=4)
    page = client.get(answer.get_absolute_url()).content.decode()
    html = without_templates(page)

    assert html.count("data-answer-feedback") == 1
    assert re.findall(r'<button type="button"[^>]*data-verdict="(\w+)"', html) == ["helpful", "unhelpful"]
    # One flag per source of the final list, named by the number shown.
    assert re.findall(r'<button type="button"[^>]*data-flag-source="(\d+)"', html) == ["1", "2"]
    assert f'data-answer-id="{answer.id}"' in html
    assert (
        f'data-feedback-url="/api/answers/{"0" * 8}-{"0" * 4}-{"0" * 4}-{"0" * 4}-{"0" * 12}/feedback/"'
        in html
    )
    assert "<script>" not in page.split("<main", 1)[1], "no inline script: the CSP allows none"
    assert " onclick=" not in html


@pytest.mark.django_db
def test_a_failed_permalink_offers_no_feedback(client: Client, answer_factory: Callable[..., Answer]) -> None:
    answer = answer_factory(text="Partial [1", source_count=2, fail_kind="upstream")
    html = without_templates(client.get(answer.get_absolute_url()).content.decode())
    assert "data-answer-feedback" not in html
    assert "data-flag-source" not in html
    assert "data-verdict" not in html


@pytest.mark.django_db
def test_the_demo_answer_reads_as_markdown_on_its_permalink(
    client: Client, demo_corpus: list[Document]
) -> None:
    """The extractive answer quotes the reference's reST-ish `*context manager*`: it reads as emphasis."""
    response = client.post(
        "/api/answers/", {"question": "What is a context manager?"}, content_type="application/json"
    )
    assert response.status_code in (200, 201), response.content
    answer = Answer.objects.get(id=response.json()["id"])
    assert "*context manager*" in answer.final_text
    page = client.get(answer.get_absolute_url()).content.decode()
    text = re.search(r"<div class=\"answer-text\" data-answer-text[^>]*>(.*?)</div>", page, re.S)
    assert text is not None
    assert "<em>context manager</em>" in text[1]
    assert "*context manager*" not in text[1]
    assert '<a class="cite" href="#source-1">[1]</a>' in text[1]


@pytest.mark.django_db
def test_the_markdown_download_carries_titles_and_the_question_as_text_not_html(
    client: Client, answer_factory: Callable[..., Answer]
) -> None:
    """Whatever renders a copied answer (raw HTML allowed or not), markup in a title or question is text."""
    from markdown_it import MarkdownIt

    hostile = make_documents(1, prefix="Quokka")[0]
    hostile.title = 'Quokka <img src=x onerror="alert(1)"> facts & [more]'
    hostile.save(update_fields=["title"])
    answer = answer_factory(
        text="Quokkas smile [1].", documents=[hostile], question="Is 2 <b>bold</b> & <script>x</script>?"
    )
    response = client.get(f"/answers/{answer.id}/answer.md")
    assert response.status_code == 200
    text = response.content.decode()
    html = MarkdownIt("commonmark").render(text)  # the commonmark preset passes raw HTML through
    for tag in ("<img", "<script", "<b>"):
        assert tag not in html
    assert "Quokka &lt;img src=x onerror=&quot;alert(1)&quot;&gt; facts &amp; [more]" in html
    assert "Is 2 &lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;x&lt;/script&gt;?" in html
    assert html.count("<a href=") == 1  # the title's brackets stay inside its one link
