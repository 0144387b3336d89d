"""The answer's states as a reader meets them (issue 33): a failure says so once, with no heading over
an empty Sources list; a done answer leaves no empty status line; a rate limit is told in the page's
own words, its status code kept. A server of its own, asking allowed twice a minute."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer, served
from tests.fixtures.providers import Reply, StubOpenAIServer

ANSWER = "[data-answer]"


@pytest.fixture(scope="module")
def browser_server(chromium_path: object, browser_stub: StubOpenAIServer) -> Iterator[LiveServer]:
    with served(browser_stub, extra_env={"ANSWERS_ANON_RATE": "2/min"}) as live:
        yield live


def ask(page: Page) -> None:
    page.fill("textarea[name=question]", ZEBRA_QUESTION)
    page.click("button[type=submit]")


def visible_messages(page: Page) -> list[str]:
    """The status and error lines a reader sees under the answer heading."""
    return [
        text.strip()
        for text in page.locator("[data-answer-state], [data-answer-error]").all_inner_texts()
        if text.strip()
    ]


def test_failure_done_and_rate_limit_as_the_reader_sees_them(
    page: Page, browser_stub: StubOpenAIServer
) -> None:
    page.goto("/")

    # 1. The provider's stream is cut: one message, no "Sources" heading over nothing.
    browser_stub.enqueue(Reply(pieces=["Zebras live in", " grassland [1]."], cut_after=1))
    ask(page)
    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "failed")
    expect(page.locator("[data-answer-error]")).to_be_visible()
    assert len(visible_messages(page)) == 1, visible_messages(page)
    expect(page.get_by_role("heading", name="Sources", exact=True)).to_be_hidden()

    # 2. A done answer: its Sources heading is back, and the empty status line takes no room.
    browser_stub.enqueue(Reply(pieces=["Zebras live in grassland [1]."]))
    ask(page)
    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(page.get_by_role("heading", name="Sources", exact=True)).to_be_visible()
    assert visible_messages(page) == []
    state = page.locator("[data-answer-state]").bounding_box()
    assert state is not None
    assert state["height"] == 0, "no empty status line under the heading"

    # 3. Over the rate: the page's words (not the framework's), the wait, and the status code.
    ask(page)
    error = page.locator("[data-answer-error]")
    expect(error).to_be_visible()
    expect(error).to_have_text(
        re.compile(r"^Too many questions in a short time\. You can ask again in \d+ seconds?\. \(429\)$")
    )
    expect(error).not_to_contain_text("throttled")
    assert len(visible_messages(page)) == 1
    expect(page.get_by_role("heading", name="Sources", exact=True)).to_be_hidden()
