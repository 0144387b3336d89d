"""ANSWERS_PROVIDER=cohere in a real browser: the model's citations become the cited answer on the ask
page, the trail's `native` record lists each citation with where its marker went, and the answer's
admin page marks each cited span and marker in the raw text."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.fixtures.browser_pages import sign_in
from tests.fixtures.cohere_stub import Chat, Cite, StubCohereServer, served_cohere
from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer

ANSWER = "[data-answer]"
TEXT = "[data-answer-text]"
SOURCES = "[data-answer-sources] > li"
REPLY = "Zebras live in grassland and savanna."


@pytest.fixture(scope="module")
def browser_stub() -> Iterator[StubCohereServer]:
    """This module's provider stub: Cohere's, in place of the OpenAI one (tests/browser/conftest.py)."""
    with StubCohereServer() as server:
        yield server


@pytest.fixture(scope="module")
def browser_server(chromium_path: object, browser_stub: StubCohereServer) -> Iterator[LiveServer]:
    with served_cohere(browser_stub) as live:
        yield live


def _cite(span: str, ids: str) -> Cite:
    start = REPLY.index(span)
    return Cite(start, start + len(span), ids)


def test_cohere_citations_reach_the_page_the_trail_and_the_admin_marks(
    page: Page, browser_stub: StubCohereServer
) -> None:
    browser_stub.enqueue(
        Chat(
            (
                "Zebras live ",
                "in grassland",
                " and savanna.",
                _cite("in grassland", "3"),
                _cite("savanna.", "1"),
            ),
            delay_s=0.05,
        )
    )
    page.goto("/")
    page.fill("textarea[name=question]", ZEBRA_QUESTION)
    page.click("button[type=submit]")

    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(page.locator(TEXT)).to_have_text("Zebras live in grassland [1] and savanna [2].")
    expect(page.locator(SOURCES)).to_have_count(2)
    answer_id = (
        (page.locator("[data-answer-permalink]").get_attribute("href") or "").strip("/").split("/")[-1]
    )

    sign_in(page, "reviewer")

    trail = page.request.get(f"/api/answers/{answer_id}/trail/").json()
    assert trail["raw_text"] == "Zebras live in grassland [3] and savanna [1]."
    assert [(r["text"], r["sources"], r["marker_at"], r["repaired"]) for r in trail["native"]] == [
        ("in grassland", ["3"], 25, False),
        ("savanna.", ["1"], 41, False),
    ]

    page.goto(f"/admin/answers/answer/{answer_id}/change/")
    native = page.locator("[data-native-text]")
    expect(native).to_have_text(trail["raw_text"])
    expect(native.locator("[data-native-span='1']")).to_have_text(["in grassland"])
    expect(native.locator("[data-native-span='2']")).to_have_text(["savanna ", "[1]", "."])
    expect(native.locator("[data-native-marker]")).to_have_text(["[3]", "[1]"])
    # Marked: a highlight the reader can see, not only an attribute.
    colours = native.locator("mark.qa-cited").evaluate_all(
        "marks => marks.map(m => getComputedStyle(m).backgroundColor)"
    )
    assert len(colours) == 4  # "in grassland", then "savanna ", "[1]" and "."
    assert all(c not in ("rgba(0, 0, 0, 0)", "transparent") for c in colours)
    expect(page.locator("[data-native-row]")).to_have_count(2)
