"""The QA admin as a reviewer meets it (issue 47), in Chromium at 1280 and 390 px: every list fits a 1280 px
window with its key columns, the citation health page opens with one line (its definitions folded away),
fits its table and names each bar, with the reviewers' verdict shares, and the admin index links it; the
conversation list names first questions and anonymous sessions by a tag, a conversation's page shows each
turn as read with a link to its trail; and the review form shows the answer above it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.fixtures.browser_pages import report_source, sign_in
from tests.fixtures.live_server import LiveServer, manage, served
from tests.fixtures.page_checks import clipped, empty_links, scrolls_sideways, squeezed
from tests.fixtures.providers import Reply, StubOpenAIServer

LONG_QUESTION = "Zebra habitat guide: where do zebras live, and how far do their herds walk in a dry season?"
LONG_NOTE = "This source talks about horses rather than zebras, " * 6
OFF_TOPIC = "How do zeppelins moor in Patagonia?"
# The staff user sees every list (documents too): a superuser in this module's server.
MAKE_STAFF_A_SUPERUSER = r"""
from django.contrib.auth.models import User
User.objects.filter(username="staff").update(is_superuser=True)
"""
LISTS = {
    "/admin/answers/answer/": [
        "question",
        "status",
        "provider / model",
        "final sources",
        "support",
        "coverage",
        "review verdict",
        "unresolved feedback",
        "created at",
    ],
    "/admin/answers/feedback/": [
        "answer",
        "verdict",
        "flagged source",
        "comment",
        "from",
        "created at",
        "resolved",
    ],
    "/admin/answers/review/": [
        "answer",
        "verdict",
        "reviewer",
        "created at",
        "counts (latest of its answer)",
    ],
    "/admin/answers/document/": ["title", "type", "access", "url", "chunks", "updated at"],
    "/admin/answers/conversation/": ["first question", "turns", "asker", "created at"],
}
# A table wider than the box it scrolls in (the list's own, the health page's): columns off the screen.
OVERFLOW = """el => ({table: el.scrollWidth, box: el.parentElement.clientWidth})"""
# Each bar label of the health chart inside the drawing (not cut at either edge), and how many bars.
CHART = """svg => {
  const width = svg.viewBox.baseVal.width;
  const labels = [...svg.querySelectorAll("text.qa-chart-label")].map(t => t.getBBox());
  return {bars: svg.querySelectorAll("rect").length, labels: labels.length,
          cut: labels.filter(b => b.x < 0 || b.x + b.width > width).length};
}"""


@pytest.fixture(scope="module")
def browser_server(chromium_path: object, browser_stub: StubOpenAIServer) -> Iterator[LiveServer]:
    with served(browser_stub) as live:
        manage(["shell", "-c", MAKE_STAFF_A_SUPERUSER], live.env)
        yield live


def ask(page: Page, question: str) -> None:
    page.fill("[data-ask-form] textarea[name=question]", question)
    page.click("[data-ask-submit]")


def a_reviewers_day(page: Page, stub: StubOpenAIServer) -> tuple[str, str]:
    """A conversation of two turns (a long question, a flagged source with a long note), and a declined
    answer, asked by an anonymous reader; the first answer's id and the conversation's."""
    stub.enqueue(
        Reply(pieces=["Zebras live in grassland [3] and savanna [1]."]),
        Reply(pieces=["Zebra herds?"]),  # the follow-up's rewrite
        Reply(pieces=["The herds walk far [1]."]),
    )
    page.goto("/")
    ask(page, LONG_QUESTION)
    first = page.locator('[data-turn="1"] [data-answer]')
    expect(first).to_have_attribute("data-answer-status", "done")
    report_source(page.locator('[data-turn="1"]'), 2, LONG_NOTE)
    ask(page, "And how far do the herds walk?")
    expect(page.locator('[data-turn="2"] [data-answer]')).to_have_attribute("data-answer-status", "done")
    conversation = page.url.rstrip("/").split("/")[-1]
    answer_id = first.get_attribute("data-answer-id") or ""
    page.goto("/")
    ask(page, OFF_TOPIC)
    expect(page.locator("[data-answer]").first).to_have_attribute("data-answer-declined", "")
    return answer_id, conversation


def fits(page: Page, url: str) -> None:
    expect(page.locator("#content-main")).to_be_visible()
    assert not scrolls_sideways(page), url
    assert clipped(page, "#content") == [], url
    assert squeezed(page, "#content") == [], url
    assert empty_links(page, "#content") == [], url


def test_a_reviewers_pages_fit_and_show_what_a_review_needs(
    wide_page: Page, browser_stub: StubOpenAIServer
) -> None:
    page = wide_page
    answer_id, conversation = a_reviewers_day(page, browser_stub)
    sign_in(page, "staff")

    # The review form: the answer under review above it (one tab), then a review saved from it.
    page.goto(f"/admin/answers/review/add/?answer={answer_id}")
    shown = page.locator("[data-reviewed-answer]")
    expect(shown.locator(".qa-summary-question")).to_have_text(LONG_QUESTION)
    expect(shown.locator("[data-summary-text]")).to_have_text("Zebras live in grassland [1] and savanna [2].")
    expect(shown.locator("[data-summary-sources] > li")).to_have_count(2)
    expect(shown.locator("[data-summary-sources] > li").first).to_contain_text("[1] Zebra habitat guide 3")
    expect(shown.locator(".qa-support-text .qa-support").first).to_be_visible()  # each sentence's verdict
    follows = shown.evaluate("el => el.compareDocumentPosition(document.querySelector('[name=verdict]'))")
    assert follows & 4, "the answer comes before the form's verdict"
    fits(page, "review form")
    page.select_option("select[name=verdict]", label="Missing citation")
    page.click("input[name=_save]")
    expect(page.locator("ul.messagelist li.success")).to_contain_text("Review saved")

    # Every list at 1280 px: its key columns on the screen, its table no wider than its box.
    for url, columns in LISTS.items():
        page.goto(url)
        fits(page, url)
        table = page.locator("#result_list")
        size = table.evaluate(OVERFLOW)
        assert size["table"] <= size["box"] + 1, f"{url}: {size['table']} px in {size['box']} px"
        headers = [h.strip().lower() for h in table.locator("thead th").all_inner_texts()]
        assert [h for h in headers if h] == columns, url
        for header in table.locator("thead th").all()[1:]:
            expect(header).to_be_in_viewport()

    # The conversation list: its first question, turns, and the anonymous asker by a tag of the session.
    page.goto("/admin/answers/conversation/")
    row = page.locator("#result_list tbody tr").filter(has_text=LONG_QUESTION)
    expect(row.locator("td.field-turn_count")).to_have_text("2")
    expect(row.locator("td.field-asker_shown")).to_have_text(re.compile(r"^anonymous session [0-9a-f]{8}$"))
    row.get_by_role("link", name=LONG_QUESTION).click()
    expect(page).to_have_url(re.compile(f"/admin/answers/conversation/{conversation}/change/$"))
    turns = page.locator("[data-answer-summary]")
    expect(turns).to_have_count(2)
    expect(turns.nth(1).locator("[data-summary-text]")).to_have_text("The herds walk far [1].")
    expect(turns.nth(1).locator("[data-summary-sources] > li")).to_have_count(1)
    fits(page, "conversation")
    turns.nth(0).get_by_role("link", name=LONG_QUESTION).click()
    expect(page).to_have_url(re.compile(f"/admin/answers/answer/{answer_id}/change/$"))

    # Citation health, from the admin index: one line, then the definitions folded, a table that fits,
    # bars named beside them, and the reviewers' verdicts.
    page.goto("/admin/")
    page.get_by_role("link", name="Citation health", exact=True).first.click()
    expect(page).to_have_url(re.compile(r"/admin/answers/answer/health/$"))
    lead = page.locator(".qa-health-lead")
    box = lead.bounding_box()
    assert box is not None
    assert box["height"] < 2 * 22, "a one-line opening, not a paragraph"
    definitions = page.locator("details.qa-definitions")
    expect(definitions).not_to_have_attribute("open", "")
    expect(definitions.locator("dl")).to_be_hidden()
    definitions.locator("summary").click()
    expect(definitions.locator("dl")).to_be_visible()
    table = page.locator("table.qa-health")
    size = table.evaluate(OVERFLOW)
    assert size["table"] <= size["box"] + 1, f"health: {size['table']} px in {size['box']} px"
    for name in ("declined", "may not address the question", "failed", "verdict: Missing citation"):
        row = table.locator("tr").filter(has=page.get_by_role("rowheader", name=name, exact=True))
        cell = row.locator("td")
        cell.last.scroll_into_view_if_needed()
        expect(cell.last).to_be_in_viewport()
    expect(table.locator("tr.qa-health-verdict_missing_citation td").first).to_have_text("100%")
    chart = page.locator("svg.qa-chart").evaluate(CHART)
    assert chart["bars"] == chart["labels"] == 12, chart
    assert chart["cut"] == 0, chart
    fits(page, "health")

    # At 390 px the same pages still never scroll sideways nor clip text.
    page.set_viewport_size({"width": 390, "height": 844})
    for url in (
        f"/admin/answers/review/add/?answer={answer_id}",
        "/admin/answers/answer/health/",
        f"/admin/answers/conversation/{conversation}/change/",
        *LISTS,
    ):
        page.goto(url)
        expect(page.locator("#content-main")).to_be_visible()
        assert not scrolls_sideways(page), url
        assert clipped(page, "#content") == [], url
    chart = page.locator("svg.qa-chart")
    page.goto("/admin/answers/answer/health/")
    assert chart.evaluate(CHART)["cut"] == 0
    chart_box = chart.bounding_box()
    assert chart_box is not None
    assert chart_box["x"] + chart_box["width"] <= 390
