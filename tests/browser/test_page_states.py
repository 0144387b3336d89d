"""The answer's states as a reader meets them (issue 33): a failure says so once, with no heading over
an empty Sources list; a done answer leaves no empty status line; a rate limit is told in the page's
own words, its status code kept; the server's log has no line per stream. A server of its own, asking
allowed twice a minute, logging at INFO."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer, served
from tests.fixtures.page_checks import assert_aa_contrast, clipped
from tests.fixtures.providers import Reply, StubOpenAIServer

ANSWER = "[data-answer]"
STATE_TEXT = ["[data-answer-error]", "[data-turn-question]", "h1"]


@pytest.fixture(scope="module")
def browser_server(chromium_path: object, browser_stub: StubOpenAIServer) -> Iterator[LiveServer]:
    # The default log level (INFO), as a deployment has it: the log test below reads the server's log.
    with served(browser_stub, extra_env={"ANSWERS_ANON_RATE": "2/min", "LOG_LEVEL": "INFO"}) as live:
        yield live


def ask(page: Page) -> None:
    """A new question from the first screen (after an answer, the page's form asks follow-ups)."""
    page.goto("/")
    page.fill("textarea[name=question]", ZEBRA_QUESTION)
    page.click("[data-ask-submit]")


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

    # 4. The message reads at WCAG AA in light and dark, at 1280 and 390 px, nothing of it clipped.
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            assert_aa_contrast(page, STATE_TEXT, f"in {scheme} at {width} px")
            assert clipped(page) == [], f"clipped in {scheme} at {width} px"


def test_streams_leave_no_per_listener_lines_in_the_server_log(browser_server: LiveServer) -> None:
    # The test above opened three streams on this server; django-eventstream logs each at INFO.
    log = browser_server.log_tail(1_000_000)
    assert '"POST /api/answers/" 202' in log, "this server's log, with the streamed answers in it"
    assert "added listener" not in log
