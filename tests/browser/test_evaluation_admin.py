"""Evaluation in admin at 1280 px, in a real browser: a run's page (every column readable, failing items
first, each linking its trail), a comparison chosen with *Compare with…*, and the result list's export
downloading only what its filter shows."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.fixtures.browser_pages import fresh_page
from tests.fixtures.evaluation import cite_second_first, write_items
from tests.fixtures.live_server import PASSWORD, QUOKKA_QUESTION, ZEBRA_QUESTION, LiveServer, manage
from tests.fixtures.page_checks import clipped, contrast, empty_links, scrolls_sideways, squeezed
from tests.fixtures.providers import StubOpenAIServer, cite_first_source

ITEMS = [
    {"question": ZEBRA_QUESTION, "expected_documents": ["https://example.org/zebra-1"]},
    {"question": QUOKKA_QUESTION, "expected_documents": ["https://example.org/quokka-1"]},
    {"question": "Where do penguins nest in winter?", "expect_decline": True},
]


@pytest.fixture(scope="module")
def runs(
    browser_server: LiveServer, browser_stub: StubOpenAIServer, tmp_path_factory: Any
) -> tuple[int, int]:
    """The set `zoo` evaluated twice in the server's database: run 1 citing source 1 first, run 2
    citing source 2 first (the zebra question's first source is then not an expected one)."""
    env = browser_server.env
    path = write_items(Path(tmp_path_factory.mktemp("zoo")) / "zoo.jsonl", ITEMS)
    manage(["evaluation", "import", "zoo", str(path)], env)
    browser_stub.reset()
    browser_stub.set_default(cite_first_source)
    manage(["evaluate", "zoo", "--label", "cites source 1"], env)
    browser_stub.set_default(cite_second_first)
    manage(["evaluate", "zoo", "--label", "cites source 2"], env)
    browser_stub.reset()
    return 1, 2


@pytest.fixture
def reviewer_page(browser: Browser, browser_server: LiveServer, runs: tuple[int, int]) -> Iterator[Page]:
    with fresh_page(browser, browser_server.url) as page:
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto("/admin/login/")
        page.fill("input[name=username]", "reviewer")
        page.fill("input[name=password]", PASSWORD)
        page.click("input[type=submit]")
        yield page


def fits(page: Page) -> None:
    expect(page.locator("#content-main")).to_be_visible()
    assert clipped(page, "#content") == []
    assert not scrolls_sideways(page)
    assert empty_links(page, "#content") == []
    assert squeezed(page, "#content") == []
    low = [
        (s, r)
        for s, r in contrast(page, ["#content th", "#content td", "#content p", "#content a"])
        if r < 4.5
    ]
    assert low == []


def test_a_runs_page_and_a_comparison(reviewer_page: Page, runs: tuple[int, int]) -> None:
    page = reviewer_page
    page.goto("/admin/answers/evaluationrun/")
    expect(page.locator("#result_list")).to_contain_text("cites source 2")
    fits(page)

    page.goto(f"/admin/answers/evaluationrun/{runs[1]}/change/")
    fits(page)
    rows = page.locator("table.qa-evaluation-results tbody tr")
    expect(rows).to_have_count(3)
    # The zebra answer no longer opens with the expected page: failing, listed first.
    expect(rows.first).to_have_attribute("data-failing", "true")
    expect(rows.first).to_contain_text(ZEBRA_QUESTION)
    expect(page.locator('[data-metric="right_first"]')).to_be_visible()
    rows.first.get_by_role("link", name="trail").click()
    expect(page.locator("#content")).to_contain_text(ZEBRA_QUESTION)
    assert "/admin/answers/answer/" in page.url

    page.goto(f"/admin/answers/evaluationrun/{runs[1]}/change/")
    page.select_option("select[name=with]", str(runs[0]))
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("h1")).to_contain_text(f"with run {runs[0]}")
    fits(page)
    metrics = page.locator("table.qa-evaluation-metrics thead th")
    expect(metrics).to_have_text(["metric", f"run {runs[1]}", f"run {runs[0]}"])
    regressions = page.locator('table[data-changes="regressions"]')
    expect(regressions).to_contain_text(ZEBRA_QUESTION)
    expect(regressions).to_contain_text("right_first: true → false")
    # Run 2 copies its source's words where run 1 wrote a generic sentence: better supported.
    expect(page.locator('table[data-changes="improvements"]')).to_contain_text("citation_recall: 0.00 → 1.00")


def test_the_result_export_downloads_what_the_filter_shows(
    reviewer_page: Page, runs: tuple[int, int]
) -> None:
    page = reviewer_page
    page.goto(f"/admin/answers/evaluationresult/?run__id__exact={runs[1]}")
    expect(page.locator("#result_list tbody tr")).to_have_count(3)
    filters = page.locator("#changelist-filter details", has_text="right first")
    filters.get_by_role("link", name="No", exact=True).click()
    # Both answers to a question: neither opens with the expected page (the decline's is not measured).
    expect(page.locator("#result_list tbody tr")).to_have_count(2)
    fits(page)
    page.get_by_role("link", name="Export").click()
    page.select_option("select[name=format]", label="csv")
    with page.expect_download() as download:
        page.get_by_role("button", name="Submit").click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert sorted((row["run"], row["question"], row["right_first"]) for row in rows) == sorted(
        [(str(runs[1]), ZEBRA_QUESTION, "False"), (str(runs[1]), QUOKKA_QUESTION, "False")]
    )
