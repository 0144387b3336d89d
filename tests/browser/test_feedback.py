"""Reader feedback from the page, in a real browser, and what QA reviewers then see in admin.

A streamed answer gets "Helpful" by keyboard, then "Not helpful" (which replaces it: one verdict per
reader per answer), and a flagged source with a hostile note of its own (an anonymous reader); the
permalink then shows what was sent, and offers to change it. A signed-in reader's permalink page,
rendered by the server, gets "Not helpful" (a session user: the CSRF token goes with it). Nothing
runs (CSP violations and a `window.__pwned` trap are watched); the admin answer pages show each
reader's one verdict, the flag on its source's row.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.fixtures.browser_pages import report_source
from tests.fixtures.live_server import PASSWORD, ZEBRA_QUESTION, LiveServer, manage, served
from tests.fixtures.providers import Reply, StubOpenAIServer

ANSWER = "[data-answer]"
SOURCES = "[data-answer-sources] > li"
FEEDBACK = "[data-answer-feedback]"
HOSTILE = '<img src=x onerror="window.__pwned = 1"> wrong source </td>'

TRAPS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI || "inline"}`);
});
"""
MAKE_STAFF_A_QA_REVIEWER = r"""
from django.contrib.auth.models import Group, User
User.objects.get(username="staff").groups.add(Group.objects.get(name="QA reviewers"))
"""


@pytest.fixture(scope="module")
def browser_server(chromium_path: object, browser_stub: StubOpenAIServer) -> Iterator[LiveServer]:
    with served(browser_stub) as live:
        manage(["shell", "-c", MAKE_STAFF_A_QA_REVIEWER], live.env)
        yield live


def assert_nothing_ran(page: Page) -> None:
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("window.__cspViolations") == []


def ask_and_wait(page: Page, text: str) -> str:
    """Ask on the page, wait for `done`; the answer's id."""
    page.goto("/")
    page.fill("textarea[name=question]", ZEBRA_QUESTION)
    page.click("button[type=submit]")
    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(page.locator("[data-answer-text]")).to_have_text(text)
    permalink = page.locator("[data-answer-permalink]").get_attribute("href") or ""
    return permalink.strip("/").split("/")[-1]


def test_readers_send_feedback_from_the_page_and_reviewers_find_it_in_admin(
    page: Page, browser_stub: StubOpenAIServer
) -> None:
    page.add_init_script(TRAPS)

    # 1. An anonymous reader, on a streamed answer: no controls until it is done.
    browser_stub.enqueue(Reply(pieces=["Zebras live in grassland [3]", " and savanna [1]."], delay_s=0.2))
    page.goto("/")
    page.fill("textarea[name=question]", ZEBRA_QUESTION)
    page.click("button[type=submit]")
    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "streaming")
    expect(page.locator(FEEDBACK)).to_have_count(0)
    expect(page.locator("[data-flag-source]")).to_have_count(0)
    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(page.locator("[data-answer-text]")).to_have_text("Zebras live in grassland [1] and savanna [2].")
    streamed_id = (
        (page.locator("[data-answer-permalink]").get_attribute("href") or "").strip("/").split("/")[-1]
    )
    flagged_title = page.locator(f"{SOURCES} .source-title").nth(1).inner_text()

    feedback = page.locator(FEEDBACK)
    helpful = feedback.locator('button[data-verdict="helpful"]')
    unhelpful = feedback.locator('button[data-verdict="unhelpful"]')
    comment = feedback.locator("[data-feedback-comment]")
    status = feedback.locator("[data-feedback-status]")
    expect(helpful).to_be_visible()
    expect(unhelpful).to_be_visible()
    expect(page.locator(f"{SOURCES} button[data-flag-source]")).to_have_count(2)

    # The comment comes before the buttons it is sent with (tab order).
    comment.focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.verdict") == "helpful"

    # "Helpful", by keyboard: thanked, shown as the choice sent; the other stays, to change it.
    page.keyboard.press("Enter")
    expect(status).to_contain_text("Thanks, your feedback was sent.")
    expect(status).to_contain_text("You said: helpful.")
    expect(helpful).to_have_attribute("aria-pressed", "true")
    expect(unhelpful).to_have_attribute("aria-pressed", "false")
    expect(unhelpful).to_be_visible()
    assert page.evaluate("document.activeElement.hasAttribute('data-feedback-status')"), (
        "focus kept in the control"
    )
    # A change of mind replaces it: one verdict per reader per answer.
    comment.fill("On reflection, too short.")
    unhelpful.click()
    expect(status).to_contain_text("You said: not helpful.")
    expect(unhelpful).to_have_attribute("aria-pressed", "true")
    expect(helpful).to_have_attribute("aria-pressed", "false")
    current = page.evaluate("id => fetch(`/api/answers/${id}/feedback/`).then(r => r.json())", streamed_id)
    assert current["verdict"]["verdict"] == "unhelpful"
    assert current["verdict"]["comment"] == "On reflection, too short."

    # Source [2] does not back the answer, with its own note, full of markup.
    flag = page.locator(f"{SOURCES}").nth(1).locator("[data-flag]")
    report_source(page, 2, HOSTILE)
    expect(flag.locator('[data-flag-source="2"]')).to_have_text("Flagged: does not back the answer")
    assert page.evaluate("document.activeElement.dataset.flagSource") == "2"
    expect(page.locator('[data-flag-source="1"]')).to_have_attribute("aria-pressed", "false")
    expect(status).to_contain_text("Source 2 flagged")
    expect(comment).to_have_value("On reflection, too short."), "the verdict's comment is not the flag's note"
    assert_nothing_ran(page)

    # The permalink remembers what this reader sent, and offers to change it.
    page.goto(f"/answers/{streamed_id}/")
    feedback = page.locator(FEEDBACK)
    expect(feedback.locator('button[data-verdict="unhelpful"]')).to_have_attribute("aria-pressed", "true")
    expect(feedback.locator('button[data-verdict="helpful"]')).to_be_visible()
    expect(feedback.locator("[data-feedback-status]")).to_have_text(
        "You said: not helpful. Choose again to change it."
    )
    expect(feedback.locator("[data-feedback-comment]")).to_have_value("On reflection, too short.")
    expect(page.locator('[data-flag-source="2"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator(f"{SOURCES}").nth(1).locator("[data-flag-note]")).to_have_value(HOSTILE)
    assert_nothing_ran(page)

    # 2. A signed-in reader (the staff user) on a permalink page the server rendered.
    page.goto("/admin/login/")
    page.fill("input[name=username]", "staff")
    page.fill("input[name=password]", PASSWORD)
    page.click("input[type=submit]")
    browser_stub.enqueue(Reply(pieces=["Zebras graze in grassland [2]."]))
    own_id = ask_and_wait(page, "Zebras graze in grassland [1].")
    page.goto(f"/answers/{own_id}/")
    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    feedback = page.locator(FEEDBACK)
    feedback.locator('button[data-verdict="unhelpful"]').click()
    expect(feedback.locator("[data-feedback-status]")).to_contain_text("Thanks, your feedback was sent.")
    expect(feedback.locator('button[data-verdict="unhelpful"]')).to_have_attribute("aria-pressed", "true")
    expect(feedback.locator('button[data-verdict="helpful"]')).to_be_visible()
    assert_nothing_ran(page)

    # 3. The reviewer's answer pages.
    page.goto(f"/admin/answers/answer/{streamed_id}/change/")
    panel = page.locator("table.qa-feedback")
    # One reader: their one verdict (the later "Unhelpful" replaced "Helpful") and their flag.
    expect(panel.locator("tbody tr")).to_have_count(2)
    expect(panel).not_to_contain_text("Helpful")
    expect(panel).to_contain_text("Unhelpful")
    expect(panel).to_contain_text("On reflection, too short.")
    expect(panel).to_contain_text(HOSTILE)
    expect(panel).to_contain_text(flagged_title)
    expect(panel.locator("strong", has_text="unresolved")).to_have_count(2)
    flagged_row = page.locator("tr", has=page.locator(".qa-reader-flags", has_text="flagged by readers"))
    expect(flagged_row).to_have_count(1)
    expect(flagged_row).to_contain_text(flagged_title)
    expect(flagged_row).to_contain_text(HOSTILE)
    assert page.locator("#content-main img[src=x], #content-main [onerror]").count() == 0
    assert_nothing_ran(page)

    page.goto(f"/admin/answers/answer/{own_id}/change/")
    panel = page.locator("table.qa-feedback")
    expect(panel).to_contain_text("Unhelpful")
    expect(panel).to_contain_text("staff")
    expect(page.locator(".qa-reader-flags", has_text="flagged by readers")).to_have_count(0)

    # Both are among the answers a reader called unhelpful (a flagged source says so too).
    page.goto("/admin/answers/answer/?reader_unhelpful=yes")
    expect(page.locator("#result_list tbody tr")).to_have_count(2)
