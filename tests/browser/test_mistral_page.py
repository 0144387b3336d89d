"""The ask page in a real browser with ANSWERS_PROVIDER=mistral: the model's reference chunks become
the cited answer, shown in final numbers from the first marker while it streams, and an answer
stopped at the length limit says it was cut short."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.fixtures.browser_pages import fresh_page
from tests.fixtures.live_display import RECORDER, retrieved_titles
from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer
from tests.fixtures.mistral_stub import Completion, Ref, StubMistralServer, served_mistral

ANSWER = "[data-answer]"
TEXT = "[data-answer-text]"
SOURCES = "[data-answer-sources] > li"
TRUNCATED = "[data-answer-truncated]"

# Four zebra documents are retrieved; the model cites its sources 3 and 4 (ids 2 and 3), which the
# reader sees as 1 and 2, and the last sentence cites both with two reference chunks in a row.
ITEMS = ["Zebras graze", Ref(2), " in grassland", " and savanna.", Ref("3"), " Near water", Ref(2), Ref(3)]
ITEMS += ["."]
FINAL = "Zebras graze [1] in grassland and savanna [2]. Near water [1, 2]."


@pytest.fixture(scope="module")
def browser_stub() -> Iterator[StubMistralServer]:
    """This module's provider stub: Mistral's, in place of the OpenAI one (tests/browser/conftest.py)."""
    with StubMistralServer() as server:
        yield server


@pytest.fixture(scope="module")
def browser_server(chromium_path: Path, browser_stub: StubMistralServer) -> Iterator[LiveServer]:
    with served_mistral(browser_stub) as live:
        yield live


@pytest.fixture
def watched(browser: Browser, browser_server: LiveServer, browser_stub: StubMistralServer) -> Iterator[Page]:
    """A fresh page recording itself after every change (test_live_numbers.RECORDER)."""
    browser_stub.reset()
    with fresh_page(browser, browser_server.url, init_script=RECORDER) as page:
        yield page


def ask(page: Page, question: str) -> None:
    page.goto("/")
    page.fill("textarea[name=question]", question)
    page.click("button[type=submit]")


def test_references_show_in_final_numbers_while_the_answer_streams(
    watched: Page, browser_stub: StubMistralServer, browser_server: LiveServer
) -> None:
    browser_stub.enqueue(Completion(items=ITEMS, delay_s=0.3))
    ask(watched, ZEBRA_QUESTION)

    expect(watched.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(watched.locator(TEXT)).to_have_text(FINAL)
    retrieved = retrieved_titles(watched, browser_server)
    titles = watched.locator(f"{SOURCES} .source-title").all_inner_texts()
    assert titles == [retrieved[2], retrieved[3]], "the model's 3 and 4, numbered 1 and 2"
    links = watched.locator(f"{TEXT} a.cite")
    hrefs = links.evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert hrefs == ["#source-1", "#source-2", "#source-1", "#source-2"]

    snapshots: list[dict[str, Any]] = watched.evaluate("window.__snapshots")
    streaming = [s for s in snapshots if s["status"] == "streaming"]
    # While it streamed, the page never showed a model's number, and what it showed stayed.
    for snapshot in streaming:
        assert not re.search(r"\[[^\]]*[34]", snapshot["text"]), snapshot["text"]
        assert FINAL.startswith(snapshot["text"].rstrip("\n")), snapshot["text"]
        assert all(href in ("#source-1", "#source-2") for _, href in snapshot["links"])
    assert any(s["text"].startswith("Zebras graze [1]") and "[2]" not in s["text"] for s in streaming)
    # Each cited source was listed under its final number from the moment it appeared.
    shown = {(source["title"], source["number"]) for s in snapshots for source in s["sources"]}
    assert shown == {(retrieved[2], "1"), (retrieved[3], "2")}


def test_an_answer_stopped_at_the_length_limit_says_it_was_cut_short(
    watched: Page, browser_stub: StubMistralServer
) -> None:
    browser_stub.enqueue(Completion(items=["Zebras live in grassland", Ref(0)], finish_reason="length"))
    ask(watched, ZEBRA_QUESTION)

    expect(watched.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(watched.locator(TEXT)).to_have_text("Zebras live in grassland [1]")
    expect(watched.locator(TRUNCATED)).to_be_visible()
    expect(watched.locator(TRUNCATED)).to_contain_text("cut short")
