"""The QA pages at 1280 px (issue 33): the answer page's Sources table, the health page and the feedback
list show every column (wrapped, or scrolled inside their panel; never clipped, the page never scrolls
sideways), no link is empty, and the review form names sources by the final number readers saw."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.fixtures.browser_pages import fresh_page
from tests.fixtures.live_server import PASSWORD, ZEBRA_QUESTION, LiveServer
from tests.fixtures.page_checks import clipped, empty_links, scrolls_sideways
from tests.fixtures.providers import Reply, StubOpenAIServer

LONG_COMMENT = "This source talks about horses rather than zebras, " * 6


@pytest.fixture
def wide_page(browser: Browser, browser_server: LiveServer, browser_stub: StubOpenAIServer) -> Iterator[Page]:
    browser_stub.reset()
    with fresh_page(browser, browser_server.url) as page:
        page.set_viewport_size({"width": 1280, "height": 900})
        yield page


def test_the_qa_pages_fit_at_1280_px(wide_page: Page, browser_stub: StubOpenAIServer) -> None:
    page = wide_page
    # An answer citing sources 3 and 1 (final 1 and 2; 2 and 4 dropped), flagged by a reader.
    browser_stub.enqueue(Reply(pieces=["Zebras live in grassland [3] and savanna [1]."]))
    page.goto("/")
    page.fill("textarea[name=question]", ZEBRA_QUESTION)
    page.click("button[type=submit]")
    expect(page.locator("[data-answer]")).to_have_attribute("data-answer-status", "done")
    page.locator('[data-flag-source="2"]').locator("xpath=..").locator("[data-flag-note]").fill(LONG_COMMENT)
    page.click('[data-flag-source="2"]')
    expect(page.locator('[data-flag-source="2"]')).to_have_attribute("aria-pressed", "true")
    titles = page.locator("[data-answer-sources] > li .source-title").all_inner_texts()
    answer_id = (
        (page.locator("[data-answer-permalink]").get_attribute("href") or "").strip("/").split("/")[-1]
    )

    page.goto("/admin/login/")
    page.fill("input[name=username]", "reviewer")
    page.fill("input[name=password]", PASSWORD)
    page.click("input[type=submit]")

    for url in (
        f"/admin/answers/answer/{answer_id}/change/",
        "/admin/answers/answer/health/",
        "/admin/answers/feedback/",
        "/admin/answers/review/",
        f"/admin/answers/review/add/?answer={answer_id}",
    ):
        page.goto(url)
        expect(page.locator("#content-main")).to_be_visible()
        assert clipped(page, "#content") == [], url
        assert not scrolls_sideways(page), url
        assert empty_links(page, "#content") == [], url

    # Every column of the Sources table is there to read.
    page.goto(f"/admin/answers/answer/{answer_id}/change/")
    headers = page.locator("table.qa-table").filter(has_text="first cited at").first.locator("thead th")
    for name in ("excerpt", "first cited at (raw offset)", "markers", "reader flags"):
        header = headers.filter(has_text=name)
        header.scroll_into_view_if_needed()
        expect(header).to_be_in_viewport()

    # The review form: sources by the number readers saw, the retrieval number beside.
    page.goto(f"/admin/answers/review/add/?answer={answer_id}")
    options = page.locator("select[name$='-source'] option").all_inner_texts()
    assert f"[1] {titles[0]} (retrieved as [3])" in options
    assert f"[2] {titles[1]} (retrieved as [1])" in options
    assert [o for o in options if o.startswith("dropped: ") and o.endswith("(retrieved as [2])")]
