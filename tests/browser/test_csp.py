"""The Content-Security-Policy in a real browser: nothing on our pages, the admin or the API docs is blocked.

Every page is watched for `securitypolicyviolation` events and for the console
messages Chromium writes when it refuses something; either fails the test.
"""

from __future__ import annotations

import json

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.fixtures.browser_pages import sign_in
from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer, manage
from tests.fixtures.providers import Reply, StubOpenAIServer

ANSWER = "[data-answer]"
WATCH_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  const where = `${e.sourceFile}:${e.lineNumber}`;
  window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} (${where})`);
});
"""

MAKE_STAFF_A_QA_REVIEWER = r"""
from django.contrib.auth.models import Group, User
User.objects.get(username="staff").groups.add(Group.objects.get(name="QA reviewers"))
"""


class Watched:
    def __init__(self, page: Page) -> None:
        self.page = page
        self.console: list[str] = []
        page.add_init_script(WATCH_VIOLATIONS)
        page.on("console", self._on_console)

    def _on_console(self, message: object) -> None:
        text = getattr(message, "text", "")
        if "Content Security Policy" in text or "Content-Security-Policy" in text:
            self.console.append(text)

    def violations(self) -> list[str]:
        in_page: list[str] = self.page.evaluate("window.__cspViolations || []")
        return in_page + self.console


@pytest.fixture
def watched(page: Page) -> Watched:
    return Watched(page)


@pytest.fixture(scope="module")
def qa_staff(browser_server: LiveServer) -> str:
    manage(["shell", "-c", MAKE_STAFF_A_QA_REVIEWER], browser_server.env)
    return "staff"


def test_asking_on_the_page_breaks_no_rule(watched: Watched, browser_stub: StubOpenAIServer) -> None:
    page = watched.page
    browser_stub.enqueue(Reply(pieces=["Zebras live ", "in grassland [2]", " and savanna [1]."], delay_s=0.1))
    page.goto("/")
    page.fill("textarea[name=question]", ZEBRA_QUESTION)
    page.click("button[type=submit]")

    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(page.locator("[data-answer-text]")).to_have_text("Zebras live in grassland [1] and savanna [2].")
    # The stylesheet applied: the page is styled, not bare.
    assert page.evaluate("document.styleSheets.length") >= 1
    page.goto(page.locator("[data-answer-permalink]").get_attribute("href") or "")
    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    assert watched.violations() == []


def test_the_admin_answer_pages_break_no_rule(
    watched: Watched, browser_server: LiveServer, browser_stub: StubOpenAIServer, qa_staff: str
) -> None:
    page = watched.page
    browser_stub.enqueue(Reply(pieces=["Zebras live in grassland [3]."]))
    asked = httpx.post(f"{browser_server.url}/api/answers/", json={"question": ZEBRA_QUESTION}, timeout=20)
    assert asked.status_code == 201, asked.text
    answer_id = asked.json()["id"]

    sign_in(page, qa_staff)
    page.goto("/admin/answers/answer/")
    expect(page.locator("#result_list")).to_be_visible()
    page.goto(f"/admin/answers/answer/{answer_id}/change/")
    expect(page.locator("body")).to_contain_text("dropped")
    expect(page.locator("body")).to_contain_text("3 → 1")
    # admin_answer.css applied: raw and final text side by side in a grid.
    assert page.locator(".qa-sbs").first.evaluate("el => getComputedStyle(el).display") == "grid"
    page.goto("/admin/answers/answer/health/")
    expect(page.locator("table.qa-health")).to_be_visible()
    assert watched.violations() == []


def test_swagger_ui_renders_under_the_policy(watched: Watched) -> None:
    page = watched.page
    page.goto("/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Cited answers API")
    operations = page.locator(".swagger-ui .opblock")
    expect(operations.first).to_be_visible()
    assert operations.count() >= 5
    paths = operations.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/answers/" in p for p in paths), json.dumps(paths)
    assert watched.violations() == []


def test_a_violation_would_be_seen(watched: Watched) -> None:
    """The watch works: an inline script injected into one of our pages is blocked and reported."""
    page = watched.page
    page.goto("/")
    page.evaluate(
        """() => { const s = document.createElement("script"); s.textContent = "window.__ran = 1";
                   document.body.appendChild(s); }"""
    )
    page.wait_for_function("window.__cspViolations.length > 0")
    assert page.evaluate("window.__ran") is None
    assert any("script-src" in v for v in watched.violations())
