"""Quotes in the Sources list, in a real browser: the live page marks a native-citation quote at
`done` exactly as the permalink page (server-rendered) does, and the page's excerpt code
(static/answers/excerpts.js) builds the same window and marks as answers/excerpts.py."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from answers.excerpts import excerpt_pieces, quote_spans
from tests.fixtures.anthropic_stub import Block, Cite, Message, StubAnthropicServer
from tests.fixtures.live_server import ZEBRA_QUESTION

ANSWER = "[data-answer]"
EXCERPTS = "[data-answer-sources] > li .source-excerpt"
# Each excerpt as its pieces: [text, marked].
PIECES = "ps => ps.map(p => Array.from(p.childNodes).map(n => [n.textContent, n.nodeName === 'MARK']))"

LONG = " ".join(f"word{i:03d}" for i in range(100))
HOSTILE = 'Zebras <img src=x onerror="window.__pwned = 1"> live in <b>grass</b> & "savanna".'
# (excerpt, quotes): the page's code and the server's must give the same pieces for each.
CASES = [
    ("", []),
    ("Short text.", []),
    ("x" * 201, []),
    (LONG, []),
    ("Alpha beta gamma.", ["beta"]),
    ("Alpha beta gamma.", ["beta", "beta gamma"]),
    ("Alpha beta\n  gamma.", ["beta gamma"]),
    ("Alpha beta gamma.", ["delta"]),
    ("a.b a b (c)", ["a b", "(c)"]),
    (LONG, ["word050"]),
    (LONG, ["word001", "word075"]),
    (LONG, [LONG[100:700]]),
    (HOSTILE, ['<img src=x onerror="window.__pwned = 1">', '& "savanna"']),
]


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


def test_the_pages_excerpt_code_builds_the_servers_pieces(page: Page) -> None:
    page.goto("/")
    page.wait_for_function("typeof window.sourceExcerpt === 'function'")

    in_page = page.evaluate(
        "cases => cases.map(([excerpt, quotes]) => Array.from("
        "window.sourceExcerpt(excerpt, quotes).childNodes).map(n => [n.textContent, n.nodeName === 'MARK']))",
        CASES,
    )

    on_server = [
        [[p.text, p.marked] for p in excerpt_pieces(excerpt, quote_spans(excerpt, quotes))]
        for excerpt, quotes in CASES
    ]
    assert in_page == on_server
    assert any(marked for pieces in on_server for _, marked in pieces)
    assert page.evaluate("window.__pwned") is None
