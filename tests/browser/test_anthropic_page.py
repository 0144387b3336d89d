"""The ask page in a real browser with ANSWERS_PROVIDER=anthropic: native citations become the
cited answer, and an answer stopped at the length limit says it was cut short."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.fixtures.anthropic_stub import Block, Cite, Message, StubAnthropicServer
from tests.fixtures.live_server import ZEBRA_QUESTION

ANSWER = "[data-answer]"
TEXT = "[data-answer-text]"
SOURCES = "[data-answer-sources] > li"
TRUNCATED = "[data-answer-truncated]"


# This module's provider stub (tests/browser/conftest.py): Anthropic's, in place of the OpenAI one.
PROVIDER = "anthropic"


def ask(page: Page, question: str) -> None:
    page.goto("/")
    page.fill("textarea[name=question]", question)
    page.click("button[type=submit]")


def test_the_models_citations_become_the_cited_answer(page: Page, browser_stub: StubAnthropicServer) -> None:
    browser_stub.enqueue(
        Message(
            blocks=[
                Block("Zebras live ", "in grassland", Cite(2)),
                Block(" and savanna", Cite(0)),
                Block("."),
            ],
            delay_s=0.05,
        )
    )
    ask(page, ZEBRA_QUESTION)

    answer = page.locator(ANSWER)
    expect(answer).to_have_attribute("data-answer-status", "done")
    expect(page.locator(TEXT)).to_have_text("Zebras live in grassland [1] and savanna [2].")
    expect(page.locator(SOURCES)).to_have_count(2)
    titles = page.locator(f"{SOURCES} .source-title").all_inner_texts()
    assert len(set(titles)) == 2
    assert all(title.startswith("Zebra habitat guide") for title in titles)
    citations = page.locator(f"{TEXT} a.cite")
    assert citations.evaluate_all("links => links.map(a => [a.textContent, a.getAttribute('href')])") == [
        ["[1]", "#source-1"],
        ["[2]", "#source-2"],
    ]
    expect(page.locator(TRUNCATED)).to_be_hidden()


def test_an_answer_stopped_at_max_tokens_says_it_was_cut_short(
    page: Page, browser_stub: StubAnthropicServer
) -> None:
    browser_stub.enqueue(
        Message(blocks=[Block("Zebras live in grassland", Cite(0))], stop_reason="max_tokens")
    )
    ask(page, ZEBRA_QUESTION)

    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(page.locator(TEXT)).to_have_text("Zebras live in grassland [1]")
    expect(page.locator(TRUNCATED)).to_be_visible()
    expect(page.locator(TRUNCATED)).to_contain_text("cut short")

    # The permalink page, rendered by the server, says so too.
    page.goto(page.locator("[data-answer-permalink]").get_attribute("href") or "/")
    expect(page.locator(TRUNCATED)).to_be_visible()
    expect(page.locator(TEXT)).to_have_text("Zebras live in grassland [1]")

    # A next, complete answer on the same page hides the notice again.
    browser_stub.enqueue(Message(blocks=[Block("Zebras live in savanna", Cite(1))]))
    ask(page, ZEBRA_QUESTION)
    expect(page.locator(TEXT)).to_have_text("Zebras live in savanna [1]")
    expect(page.locator(TRUNCATED)).to_be_hidden()
