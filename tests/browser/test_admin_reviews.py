"""Append-only reviews and exports in admin at 1280 px (issue 45): a reviewer corrects a review with a
second one, the answer's page lists both in order (the latest counts), a saved review's page offers no
save or delete, and the answer list's Export downloads exactly the rows its filter selects."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.fixtures.browser_pages import report_source
from tests.fixtures.live_server import PASSWORD, ZEBRA_QUESTION
from tests.fixtures.page_checks import clipped, empty_links, scrolls_sideways
from tests.fixtures.providers import Reply, StubOpenAIServer


def ask(page: Page, stub: StubOpenAIServer, reply: str) -> str:
    """Ask on the reader page; the answer's id once it is done."""
    stub.enqueue(Reply(pieces=[reply]))
    page.goto("/")
    page.fill("textarea[name=question]", ZEBRA_QUESTION)
    page.click("button[type=submit]")
    expect(page.locator("[data-answer]")).to_have_attribute("data-answer-status", "done")
    permalink = page.locator("[data-answer-permalink]").get_attribute("href") or ""
    return permalink.strip("/").split("/")[-1]


def review(page: Page, answer_id: str, verdict: str, notes: str) -> None:
    page.goto(f"/admin/answers/review/add/?answer={answer_id}")
    expect(page.locator("input[name=_continue]")).to_have_count(0)  # one button: a saved review is final
    page.select_option("select[name=verdict]", label=verdict)
    page.fill("textarea[name=notes]", notes)
    page.click("input[name=_save]")


def test_a_correction_is_a_second_review_and_an_export_honours_the_filter(
    wide_page: Page, browser_stub: StubOpenAIServer, tmp_path: Path
) -> None:
    page = wide_page
    reviewed = ask(page, browser_stub, "Zebras live in grassland [1].")
    # A reader flags the answer's source: the first review resolves that.
    report_source(page, 1)
    other = ask(page, browser_stub, "Zebras live in savanna [1].")

    page.goto("/admin/login/")
    page.fill("input[name=username]", "reviewer")
    page.fill("input[name=password]", PASSWORD)
    page.click("input[type=submit]")

    review(page, reviewed, "OK", "Looks right at first sight.")
    message = page.locator("ul.messagelist li.success")
    expect(message).to_have_text(
        f"Review saved: “OK” on “{ZEBRA_QUESTION}”. It resolved 1 reader feedback item."
    )
    review(page, reviewed, "Does not fully answer the question", "Misses the savanna.")
    expect(message).to_have_text(
        f"Review saved: “Does not fully answer the question” on “{ZEBRA_QUESTION}”. "
        "It resolved no reader feedback."
    )

    # The answer's page (where saving lands): both reviews, oldest first, the latest counting.
    assert page.url.endswith(f"/admin/answers/answer/{reviewed}/change/")
    rows = page.locator("table.qa-reviews tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("OK")
    expect(rows.nth(0)).to_contain_text("reviewer")
    expect(rows.nth(0)).to_contain_text("Looks right at first sight.")
    expect(rows.nth(0)).to_contain_text("corrected later")
    expect(rows.nth(1)).to_contain_text("Does not fully answer the question")
    expect(rows.nth(1)).to_contain_text("Misses the savanna.")
    expect(rows.nth(1)).to_contain_text("latest: counts")
    rows.nth(1).scroll_into_view_if_needed()
    expect(rows.nth(1)).to_be_in_viewport()
    assert clipped(page, "#content") == []
    assert not scrolls_sideways(page)
    assert empty_links(page, "#content") == []

    # The first review's page shows it as a record: no save, no delete.
    rows.nth(0).get_by_role("link", name="OK").click()
    expect(page.locator("#content-main")).to_contain_text("Looks right at first sight.")
    expect(page.locator("input[name=_save]")).to_have_count(0)
    expect(page.locator("input[name=_continue]")).to_have_count(0)
    expect(page.locator("a.deletelink")).to_have_count(0)
    expect(page.locator("select[name=verdict]")).to_have_count(0)
    assert not scrolls_sideways(page)

    # The answer list filtered on the latest verdict; its Export carries the filter.
    page.goto("/admin/answers/answer/?verdict=incomplete")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    page.get_by_role("link", name="Export").click()
    expect(page.locator("select[name=format]")).to_be_visible()
    assert not scrolls_sideways(page)
    # "Select all" clears and ticks every field (under the site's Content Security Policy).
    fields = page.locator('.selectable-field-export-row input[type="checkbox"]:not(.select-toggle)')
    assert fields.count() > 20
    page.locator(".select-toggle").uncheck()
    expect(fields.and_(page.locator(":checked"))).to_have_count(0)
    page.locator(".select-toggle").check()
    expect(fields.and_(page.locator(":not(:checked)"))).to_have_count(0)
    page.select_option("select[name=format]", label="json")
    with page.expect_download() as download:
        page.click("input[type=submit]")
    saved = tmp_path / "answers.json"
    download.value.save_as(saved)
    rows_exported = json.loads(saved.read_text())
    assert [row["id"] for row in rows_exported] == [reviewed]
    assert rows_exported[0]["review_verdict"] == "incomplete"
    assert other not in saved.read_text()
