"""A declined answer in a real browser: asked on the page (SSE) and opened from its permalink, it shows the
decline text, no Sources list and no retrieved list, carries `data-answer-declined`, and offers the example
questions again; the stub provider receives no request. Asking again from there clears the declined state."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from answers.conf import DECLINE_TEXT
from tests.fixtures.live_server import ZEBRA_QUESTION
from tests.fixtures.providers import Reply, StubOpenAIServer

ANSWER = "[data-answer]"
TEXT = "[data-answer-text]"
SOURCES = "[data-answer-sources] > li"
EXAMPLES = "[data-example-question]"
# No word of it is in the live server's corpus (zebras and quokkas).
OFF_TOPIC = "How do zeppelins moor in Patagonia?"


def expect_declined(page: Page) -> None:
    answer = page.locator(ANSWER)
    expect(answer).to_have_attribute("data-answer-status", "done")
    expect(answer).to_have_attribute("data-answer-declined", "")
    expect(page.locator(TEXT)).to_have_text(DECLINE_TEXT)
    expect(page.locator(SOURCES)).to_have_count(0)
    expect(page.locator("[data-answer-sources]")).to_be_hidden()
    expect(page.locator("[data-answer-sources-heading]")).to_be_hidden()
    expect(page.locator("[data-answer-retrieved-block]")).to_be_hidden()
    expect(page.locator("[data-answer-fallback]")).to_be_hidden()
    expect(page.locator("[data-examples]")).to_be_visible()
    expect(page.locator(EXAMPLES).first).to_be_visible()


def test_a_declined_answer_reads_the_same_live_and_from_its_permalink(
    page: Page, browser_stub: StubOpenAIServer
) -> None:
    page.goto("/")
    expect(page.locator(EXAMPLES).first).to_be_visible()
    page.fill("textarea[name=question]", OFF_TOPIC)
    page.click("button[type=submit]")
    expect_declined(page)  # the examples, hidden when the question went, are offered again
    permalink = page.locator("[data-answer-permalink]").get_attribute("href")
    assert permalink

    page.goto(permalink)
    expect_declined(page)
    expect(page.locator("[data-question]")).to_have_text(OFF_TOPIC)
    assert browser_stub.requests == []

    # An example chosen there fills the box; asked, it is answered, and the declined state goes.
    example = page.locator(EXAMPLES).first
    example.click()
    field = page.locator("textarea[name=question]")
    expect(field).to_have_value(example.get_attribute("data-example-question") or "")
    browser_stub.enqueue(Reply(pieces=["Zebras live in grassland [1]."]))
    field.fill(ZEBRA_QUESTION)
    page.click("button[type=submit]")
    answer = page.locator(ANSWER)
    expect(answer).to_have_attribute("data-answer-status", "done")
    expect(answer).not_to_have_attribute("data-answer-declined", "")
    expect(page.locator(SOURCES)).to_have_count(1)
    expect(page.locator("[data-answer-sources]")).to_be_visible()
    assert len(browser_stub.requests) == 1
