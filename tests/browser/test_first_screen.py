"""The demo's first screen in a real browser: example questions fill the box, and one asked gets a
cited answer (the demo corpus and the offline extractive provider, as `make run` serves them)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.fixtures.live_server import LiveServer, served_demo
from tests.fixtures.providers import StubOpenAIServer

EXAMPLES = "[data-example-question]"
FIELD = "textarea[name=question]"
ANSWER = "[data-answer]"
SOURCES = "[data-answer-sources] > li"


@pytest.fixture(scope="module")
def browser_server(chromium_path: Path, browser_stub: StubOpenAIServer) -> Iterator[LiveServer]:
    with served_demo(browser_stub) as live:
        yield live


def test_an_example_question_fills_the_box_and_gets_a_cited_answer(page: Page) -> None:
    page.goto("/")
    expect(page.locator("[data-corpus-summary]")).to_contain_text(re.compile(r"this site's \d+ documents"))
    examples = page.locator(EXAMPLES)
    expect(examples.first).to_be_visible()
    assert examples.count() >= 2
    chosen = examples.nth(1)
    question = chosen.get_attribute("data-example-question")
    assert question

    # Chosen with the keyboard, as anyone who cannot use a mouse would.
    first_screen = page.url
    chosen.focus()
    page.keyboard.press("Enter")
    field = page.locator(FIELD)
    expect(field).to_have_value(question)
    expect(field).to_be_focused()
    assert page.url == first_screen  # filled in place, no reload

    page.keyboard.press("Enter")  # Enter asks
    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(page.locator("[data-examples]")).to_be_hidden()
    expect(page.locator(SOURCES).first).to_be_visible()
    cites = page.locator("[data-answer-text] a.cite")
    expect(cites.first).to_be_visible()
    numbers = {int(n) for n in page.locator(SOURCES).evaluate_all("lis => lis.map(li => li.dataset.number)")}
    hrefs = set(cites.evaluate_all("links => links.map(a => a.getAttribute('href'))"))
    assert hrefs == {f"#source-{n}" for n in numbers}


def test_without_javascript_an_example_loads_the_page_with_it_in_the_box(
    browser: object, browser_server: LiveServer
) -> None:
    context = browser.new_context(base_url=browser_server.url, java_script_enabled=False)  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.goto("/")
        chosen = page.locator(EXAMPLES).first
        question = chosen.get_attribute("data-example-question")
        chosen.click()
        page.wait_for_url(re.compile(r"\?q="))
        expect(page.locator(FIELD)).to_have_value(question or "")
    finally:
        context.close()


def test_favicon_loads_without_a_404(page: Page) -> None:
    failures: list[str] = []
    page.on("response", lambda r: failures.append(r.url) if r.status >= 400 else None)
    page.goto("/")
    response = page.request.get("/favicon.ico")
    assert response.ok
    assert response.headers["content-type"] in {"image/x-icon", "image/vnd.microsoft.icon"}
    expect(page.locator("link[rel=icon][type='image/svg+xml']")).to_have_count(1)
    assert failures == []
