"""The QA pages at 1280 px (issue 33): the answer page's Sources table, the health page and the feedback
list show every column (wrapped, or scrolled inside their panel; never clipped nor squeezed to a column
of letters, the page never scrolls sideways), no link is empty, text reads at WCAG AA in admin's light
and dark schemes, and the review form names sources by the final number readers saw."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.fixtures.browser_pages import report_source, sign_in
from tests.fixtures.live_server import ZEBRA_QUESTION
from tests.fixtures.page_checks import clipped, contrast, empty_links, scrolls_sideways, squeezed
from tests.fixtures.providers import Reply, StubOpenAIServer

LONG_COMMENT = "This source talks about horses rather than zebras, " * 6
# Admin's text and the QA pages' own (markers, the support check's tinted sentences and scores, flags).
ADMIN_TEXT = [
    "#content h2",
    "#content th",
    "#content td",
    "#content p",
    "#content li",
    "#content a",
    "#content span",
    "#content sup",
    "#content mark",
    "#content del",
    "#content strong",
    "#content label",
]


def test_the_qa_pages_fit_at_1280_px(wide_page: Page, browser_stub: StubOpenAIServer) -> None:
    page = wide_page
    # An answer citing sources 3 and 1 (final 1 and 2; 2 and 4 dropped), flagged by a reader.
    browser_stub.enqueue(Reply(pieces=["Zebras live in grassland [3] and savanna [1]."]))
    page.goto("/")
    page.fill("textarea[name=question]", ZEBRA_QUESTION)
    page.click("button[type=submit]")
    expect(page.locator("[data-answer]")).to_have_attribute("data-answer-status", "done")
    report_source(page, 2, LONG_COMMENT)
    titles = page.locator("[data-answer-sources] > li .source-title").all_inner_texts()
    answer_id = (
        (page.locator("[data-answer-permalink]").get_attribute("href") or "").strip("/").split("/")[-1]
    )

    sign_in(page, "reviewer")

    # The answer page once its support record is stored (a task after `done`): its tinted sentences shown.
    answer_page = f"/admin/answers/answer/{answer_id}/change/"
    for _ in range(100):
        page.goto(answer_page)
        if page.locator(".qa-support-text .qa-support").count():
            break
    expect(page.locator(".qa-support-text .qa-support").first).to_be_visible()

    for scheme in ("light", "dark"):
        # Loaded in the scheme (admin's links fade between colours: switching on a shown page is not it).
        page.emulate_media(color_scheme=scheme)
        for url in (
            answer_page,
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
            assert squeezed(page, "#content") == [], url
            low = [(selector, ratio) for selector, ratio in contrast(page, ADMIN_TEXT) if ratio < 4.5]
            assert low == [], f"under 4.5:1 in {scheme}: {url} {low}"
            # The health chart's bars and legend keys: an edge of 3:1 against the page (WCAG 1.4.11).
            edges = contrast(page, [".qa-chart rect"], "stroke")
            assert all(ratio >= 3 for _, ratio in edges), f"chart edges in {scheme}: {url} {edges}"
            if url.endswith("/health/"):
                assert edges, "the health page draws its chart, every bar and key with an edge (a stroke)"
    page.emulate_media(color_scheme="light")

    # Every column of the Sources table is there to read.
    page.goto(f"/admin/answers/answer/{answer_id}/change/")
    headers = page.locator("table.qa-table").filter(has_text="first cited at").first.locator("thead th")
    for name in ("excerpt", "first cited at (raw offset)", "markers", "reader flags"):
        header = headers.filter(has_text=name)
        header.scroll_into_view_if_needed()
        expect(header).to_be_in_viewport()
    # An opened excerpt reads as lines, not a column of letters.
    page.locator("table.qa-table details summary").first.click()
    expect(page.locator("table.qa-table details[open] .qa-text").first).to_be_visible()
    assert squeezed(page, "#content") == []

    # The review form: sources by the number readers saw, the retrieval number beside.
    page.goto(f"/admin/answers/review/add/?answer={answer_id}")
    options = page.locator("select[name$='-source'] option").all_inner_texts()
    assert f"[1] {titles[0]} (retrieved as [3])" in options
    assert f"[2] {titles[1]} (retrieved as [1])" in options
    assert [o for o in options if o.startswith("dropped: ") and o.endswith("(retrieved as [2])")]
