"""One Content-Security-Policy on every HTML page, and pages that need nothing it forbids.

The policy allows only the site's own scripts and styles: a page with an inline
script, an `on*=` handler or an inline style would break under it (the browser
tests in tests/browser/test_csp.py check that nothing is blocked for real).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from bs4 import BeautifulSoup
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from answers.models import Answer
from tests.fixtures.content import hostile_documents

pytestmark = pytest.mark.django_db

EXPECTED_DIRECTIVES = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}


def directives(header: str) -> dict[str, list[str]]:
    parsed: dict[str, list[str]] = {}
    for part in header.split(";"):
        name, *values = part.split()
        parsed[name] = values
    return parsed


def inline_code(html: str) -> list[str]:
    """Everything in `html` that a script-src/style-src 'self' policy blocks."""
    soup = BeautifulSoup(html, "html.parser")
    found = [f"inline <script>: {str(s)[:80]}" for s in soup.find_all("script") if not s.get("src")]
    found += [f"<style>: {str(s)[:80]}" for s in soup.find_all("style")]
    for tag in soup.find_all(True):
        found += [f"<{tag.name} {attr}=...>" for attr in tag.attrs if attr.lower().startswith("on")]
        if tag.has_attr("style"):
            found.append(f'<{tag.name} style="{tag["style"]}">')
        for attr in ("href", "src", "action", "formaction"):
            if str(tag.get(attr, "")).strip().lower().startswith("javascript:"):
                found.append(f"<{tag.name} {attr}=javascript:...>")
    return found


@pytest.fixture
def staff() -> User:
    return User.objects.create_user("staff", password="x-long-password-1", is_staff=True, is_superuser=True)


@pytest.fixture
def hostile_answer(answer_factory: Callable[..., Answer]) -> Answer:
    """A done answer whose text and sources carry markup: none of it may turn into code on any page."""
    documents = hostile_documents(second_url="https://example.org/2")
    return answer_factory(
        text='<script>alert("x")</script> [1] <b onclick="alert(3)">bold</b> [2] <style>*{}</style>',
        documents=documents,
    )


def page_urls(answer: Answer) -> dict[str, tuple[str, bool]]:
    """Every kind of HTML page: url and whether it needs a staff session."""
    return {
        "ask page": ("/", False),
        "permalink of a done answer": (answer.get_absolute_url(), False),
        "admin login": (reverse("admin:login"), False),
        "admin index": (reverse("admin:index"), True),
        "admin answer list": (reverse("admin:answers_answer_changelist"), True),
        "admin answer page": (reverse("admin:answers_answer_change", args=[answer.pk]), True),
        "admin citation health": (reverse("admin:answers_answer_health"), True),
        "admin document list": (reverse("admin:answers_document_changelist"), True),
        "API docs (Swagger UI)": (reverse("api-docs"), False),
    }


def test_every_page_kind_carries_the_policy_and_nothing_it_would_block(
    client: Client, staff: User, hostile_answer: Answer
) -> None:
    assert hostile_answer.status == Answer.Status.DONE
    problems: dict[str, object] = {}
    for kind, (url, needs_staff) in page_urls(hostile_answer).items():
        if needs_staff:
            client.force_login(staff)
        else:
            client.logout()
        response = client.get(url)
        assert response.status_code == 200, (kind, response.status_code)
        assert response["Content-Type"].startswith("text/html"), kind
        if directives(response.get("Content-Security-Policy", "")) != EXPECTED_DIRECTIVES:
            problems[kind] = response.get("Content-Security-Policy")
        if found := inline_code(response.content.decode()):
            problems[kind] = found
    assert problems == {}


def test_swagger_ui_start_up_script_is_served_as_a_file(client: Client) -> None:
    html = client.get(reverse("api-docs")).content.decode()
    scripts = [s["src"] for s in BeautifulSoup(html, "html.parser").find_all("script")]
    start_up = client.get(scripts[-1])
    assert start_up.status_code == 200
    assert start_up["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in start_up.content.decode()
    assert "/api/schema/" in start_up.content.decode()


@pytest.mark.parametrize(
    "url",
    ["/api/answers/00000000-0000-4000-8000-000000000000/", "/api/schema/", "/healthz", "/no-such-page/"],
)
def test_json_and_error_responses_carry_the_policy_too(client: Client, url: str) -> None:
    response = client.get(url)
    assert directives(response["Content-Security-Policy"]) == EXPECTED_DIRECTIVES


def test_the_inline_code_finder_finds_what_the_policy_blocks() -> None:
    html = (
        '<script>x()</script><script src="/a.js"></script><style>a{}</style>'
        '<p style="color:red" onclick="x()">t</p><a href=" JavaScript:x()">l</a><a href="/ok">ok</a>'
    )
    assert inline_code(html) == [
        "inline <script>: <script>x()</script>",
        "<style>: <style>a{}</style>",
        "<p onclick=...>",
        '<p style="color:red">',
        "<a href=javascript:...>",
    ]
