"""Quotes in the Sources list, in a real browser: the live page marks a native-citation quote at
`done` exactly as the permalink page (server-rendered) does, and the page's excerpt code
(static/answers/excerpts.js) builds the same window and marks as answers/excerpts.py."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.fixtures.anthropic_stub import Block, Cite, Message, StubAnthropicServer
from tests.fixtures.excerpts import EXCERPT_CASES
from tests.fixtures.live_server import ZEBRA_QUESTION

ANSWER = "[data-answer]"
EXCERPTS = "[data-answer-sources] > li .source-excerpt"
# Each excerpt as its pieces: [text, marked].
PIECES = "ps => ps.map(p => Array.from(p.childNodes).map(n => [n.textContent, n.nodeName === 'MARK']))"

# This module's provider stub (tests/browser/conftest.py): Anthropic's, in place of the OpenAI one.
PROVIDER = "anthropic"


def test_the_live_page_marks_the_quote_at_done_as_the_permalink_does(
    page: Page, browser_stub: StubAnthropicServer
) -> None:
    quote = "Zebras live in grassland habitat and savanna"
    browser_stub.enqueue(Message(blocks=[Block("Zebras live in grassland", Cite(2, quote)), Block(".")]))
    page.goto("/")
    page.fill("textarea[name=question]", ZEBRA_QUESTION)
    page.click("button[type=submit]")

    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(page.locator(f"{EXCERPTS} mark")).to_have_text([quote])
    live = page.locator(EXCERPTS).evaluate_all(PIECES)

    page.goto(page.locator("[data-answer-permalink]").get_attribute("href") or "")
    expect(page.locator(f"{EXCERPTS} mark")).to_have_text([quote])
    assert page.locator(EXCERPTS).evaluate_all(PIECES) == live


def test_the_pages_excerpt_code_passes_the_shared_table(page: Page) -> None:
    # The server's builder passes the same table (tests/unit/test_excerpts.py).
    page.goto("/")
    page.wait_for_function("typeof window.sourceExcerpt === 'function'")

    in_page = page.evaluate(
        "cases => cases.map(c => Array.from(window.sourceExcerpt(c.excerpt, c.quotes, c.passages)"
        ".childNodes).map(n => [n.textContent, n.nodeName === 'MARK']))",
        EXCERPT_CASES,
    )

    assert in_page == [case["pieces"] for case in EXCERPT_CASES]
    assert page.evaluate("window.__pwned") is None
