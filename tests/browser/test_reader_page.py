"""The ask page as a reader uses it (issue 33), in Chromium at 1280 and 390 px, light and dark:
copy and share (clipboard contents checked), source previews (mouse, keyboard, Escape, a tap on a
phone), excerpts a reader can read (Markdown reduced, table rules gone, cut at words, the backing
passage marked on the live page as on the permalink, one passage under two titles listed once), and
contrast at WCAG AA in both colour schemes."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from answers.excerpts import readable
from tests.fixtures.browser_pages import fresh_page
from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer, SeedDocument, corpus, running_server
from tests.fixtures.page_checks import IN_BOTH_SCHEMES, assert_aa_contrast, clipped, scrolls_sideways, show
from tests.fixtures.providers import HoldAfterFirstPiece, Reply, StubOpenAIServer

ANSWER = "[data-answer]"
SOURCES = "[data-answer-sources] > li"
PREVIEW = "[data-source-preview]"

# The same passage under two titles, in Markdown with a table, long enough to be cut.
FILLER = "Scopes nest inside one another in the usual way for blocks and functions. " * 3
PASSAGE = (
    FILLER + "A *global* statement binds a name at module level, **excluding** globals of other modules.\n\n"
    "| scope | rule |\n| +-----+ |\n|---|---|\n| block | `local` |\n\n"
    + "Nested functions see enclosing names. "
    * 4
)
# The second copy marks its emphasis up the other way: the same passage to a reader, not
# the same text (a copy word for word is one source already, kept from one document:
# answers/retrieval/pipeline.py, "cut_as_copy").
PASSAGE_RETYPED = PASSAGE.replace("*global*", "_global_").replace("**excluding**", "__excluding__")
GLOBAL_DOCS = [
    SeedDocument(
        key="https://example.org/exec", title="Execution model", url="https://example.org/exec", body=PASSAGE
    ),
    SeedDocument(
        key="https://example.org/naming", title="Naming and binding", url="/docs/naming", body=PASSAGE_RETYPED
    ),
]
GLOBAL_QUESTION = "What does a global statement bind at module level?"


@pytest.fixture(scope="module")
def browser_server(chromium_path: object, browser_stub: StubOpenAIServer) -> Iterator[LiveServer]:
    with running_server(openai_base_url=browser_stub.base_url, documents=[*corpus(), *GLOBAL_DOCS]) as live:
        yield live


def ask(page: Page, question: str = ZEBRA_QUESTION) -> str:
    """Ask on the page, wait for `done`; the answer's id."""
    page.goto("/")
    page.fill("textarea[name=question]", question)
    page.click("button[type=submit]")
    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    return (page.locator("[data-answer-permalink]").get_attribute("href") or "").strip("/").split("/")[-1]


def test_copy_answer_and_link_and_the_markdown_download(
    wide_page: Page, browser_server: LiveServer, browser_stub: StubOpenAIServer
) -> None:
    page = wide_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=browser_server.url)
    browser_stub.enqueue(Reply(pieces=["Zebras live in *grassland* [3] and savanna [1]."]))
    answer_id = ask(page)
    share = page.locator("[data-answer-share]")
    expect(share).to_be_visible()

    page.click("[data-copy-answer]")
    expect(share.locator("[data-share-status]")).to_have_text("Answer copied, with its sources.")
    copied = page.evaluate("navigator.clipboard.readText()")
    download = httpx.get(f"{browser_server.url}/answers/{answer_id}/answer.md")
    assert download.status_code == 200
    assert download.headers["content-type"].startswith("text/markdown")
    assert copied == download.text, "the copy is the permalink's Markdown download"
    assert f"# {ZEBRA_QUESTION}\n" in copied
    assert "Zebras live in *grassland* [1] and savanna [2]." in copied, "the final text, numbers as shown"
    # Each source's number in the copy is the one the page shows, with its title and absolute URL.
    for item in page.locator(SOURCES).all():
        number = item.get_attribute("data-number")
        title = item.locator(".source-title").inner_text()
        href = item.locator("a.source-title").get_attribute("href") or ""
        url = href if href.startswith("http") else browser_server.url + href
        assert f"\n{number}. [{title}]({url})\n" in copied
    assert copied.rstrip().endswith(f"Answer: {browser_server.url}/answers/{answer_id}/")

    page.click("[data-copy-link]")
    expect(share.locator("[data-share-status]")).to_have_text("Link copied.")
    assert page.evaluate("navigator.clipboard.readText()") == f"{browser_server.url}/answers/{answer_id}/"

    with page.expect_download() as downloaded:
        page.click("[data-answer-markdown]")
    path = downloaded.value.path()
    with open(path, encoding="utf-8") as saved:
        assert saved.read() == download.text
    assert downloaded.value.suggested_filename == f"answer-{answer_id}.md"

    # The permalink offers the same.
    page.goto(f"/answers/{answer_id}/")
    expect(page.locator("[data-answer-markdown]")).to_have_attribute(
        "href", f"/answers/{answer_id}/answer.md"
    )
    page.click("[data-copy-answer]")
    expect(page.locator("[data-share-status]")).to_have_text("Answer copied, with its sources.")
    assert page.evaluate("navigator.clipboard.readText()") == download.text


def test_a_preview_opens_by_mouse_and_by_keyboard_and_closes_on_escape(
    wide_page: Page, browser_stub: StubOpenAIServer
) -> None:
    page = wide_page
    browser_stub.enqueue(Reply(pieces=["Zebras live in grassland habitat and savanna [2]. They graze [1]."]))
    ask(page)
    first = page.locator("[data-answer-text] a.cite").first
    preview = page.locator(PREVIEW)
    expect(preview).to_be_hidden()
    source = page.locator(f'{SOURCES}[data-number="1"]')
    title = source.locator(".source-title").inner_text()

    # Mouse: hovering shows the title, the backing passage marked, the link; moving away hides it.
    first.hover()
    expect(preview).to_be_visible()
    expect(preview).to_contain_text(f"[1] {title}")
    expect(preview.locator("mark")).to_have_count(1)
    expect(preview.locator("mark")).to_have_text(source.locator(".source-excerpt mark").inner_text())
    expect(preview.locator("a")).to_have_attribute(
        "href", source.locator("a.source-title").get_attribute("href") or ""
    )
    page.mouse.move(5, 5)
    expect(preview).to_be_hidden()

    # Keyboard: focus opens it, the citation is described by it, Tab reaches its link, Escape closes it
    # and gives the focus back to the citation.
    first.focus()
    expect(preview).to_be_visible()
    expect(first).to_have_attribute("aria-describedby", preview.get_attribute("id") or "")
    expect(first).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('[data-source-preview]') !== null")
    page.keyboard.press("Escape")
    expect(preview).to_be_hidden()
    assert page.evaluate("document.activeElement.classList.contains('cite')")
    expect(first).to_have_attribute("aria-expanded", "false")
    # The second citation shows its own source.
    second = page.locator("[data-answer-text] a.cite").nth(1)
    second.focus()
    expect(preview).to_contain_text("[2] ")


# The open preview's citation, as the page has it: in the document, the first citation of the text,
# described by the popover, expanded, focused; and where the popover sits against it.
OPEN_CITATION = """preview => {
  const links = [...document.querySelectorAll(`[aria-describedby="${preview.id}"]`)];
  const first = document.querySelector("[data-answer-text] a.cite");
  const link = links[0], box = link.getBoundingClientRect(), own = preview.getBoundingClientRect();
  return {
    count: links.length, connected: link.isConnected, first: link === first,
    expanded: link.getAttribute("aria-expanded"), focused: document.activeElement === link,
    below: Math.abs(own.top - (box.bottom + 6)) < 1, above: Math.abs(own.bottom - (box.top - 6)) < 1,
  };
}"""


def test_a_preview_opened_mid_stream_follows_the_final_answer_swapped_in_at_done(
    wide_page: Page, browser_stub: StubOpenAIServer
) -> None:
    # The stub holds the rest of the answer until the preview is open (the first piece's citation shown).
    release = HoldAfterFirstPiece()

    browser_stub.enqueue(
        Reply(
            pieces=["Zebras live in grassland habitat and savanna [2] and", " graze all day [1]."],
            on_piece=release,
        )
    )
    page = wide_page
    page.goto("/")
    page.fill("textarea[name=question]", ZEBRA_QUESTION)
    page.click("button[type=submit]")
    answer = page.locator(ANSWER)
    cite = page.locator("[data-answer-text] a.cite").first
    preview = page.locator(PREVIEW)
    try:
        expect(cite).to_have_text("[1]")
        expect(answer).to_have_attribute("data-answer-status", "streaming")
        title = page.locator(f'{SOURCES}[data-number="1"] .source-title').inner_text()
        cite.focus()  # by keyboard: focus opens it
        expect(preview).to_be_visible()
        expect(preview).to_contain_text(f"[1] {title}")
        expect(preview.locator("mark")).to_have_count(0)  # the backing passage is known at `done`
    finally:
        release.release()
    expect(answer).to_have_attribute("data-answer-status", "done")

    # Still open, on the same source, now with its backing passage marked as the Sources list shows it.
    source = page.locator(f'{SOURCES}[data-number="1"]')
    expect(preview).to_be_visible()
    expect(preview.locator(".source-preview-title")).to_have_text(f"[1] {title}")
    expect(preview.locator("mark")).to_have_text(source.locator(".source-excerpt mark").inner_text())
    # Anchored to the final answer's citation, which has the focus (the one the reader opened, swapped in).
    state = preview.evaluate(OPEN_CITATION)
    assert state["count"] == 1, state
    assert state["connected"], state
    assert state["first"], state
    assert state["expanded"] == "true", state
    assert state["focused"], state
    assert state["below"] or state["above"], state
    page.keyboard.press("Escape")
    expect(preview).to_be_hidden()
    expect(cite).to_be_focused()
    expect(cite).to_have_attribute("aria-expanded", "false")


def test_a_tap_on_a_phone_opens_the_preview_and_a_second_follows_the_link(
    browser: Browser, browser_server: LiveServer, browser_stub: StubOpenAIServer
) -> None:
    browser_stub.reset()
    with fresh_page(browser, browser_server.url, touch=True) as page:
        browser_stub.enqueue(Reply(pieces=["Zebras live in grassland habitat and savanna [2]."]))
        ask(page)
        cite = page.locator("[data-answer-text] a.cite").first
        cite.tap()
        preview = page.locator(PREVIEW)
        expect(preview).to_be_visible()
        assert "#source-1" not in page.url, "the first tap previews"
        box = preview.bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= 390, "inside the phone's screen"
        cite.tap()
        expect(page).to_have_url(re.compile("#source-1$"))


def test_excerpts_read_as_text_cut_at_words_marked_live_and_one_passage_listed_once(
    wide_page: Page, browser_stub: StubOpenAIServer
) -> None:
    page = wide_page
    browser_stub.enqueue(
        Reply(pieces=["A global statement binds a name at module level [1]. ", "It skips other modules [2]."])
    )
    ask(page, GLOBAL_QUESTION)
    items = page.locator(SOURCES)
    expect(items).to_have_count(2)
    titles = items.locator(".source-title").all_inner_texts()
    assert sorted(titles) == ["Execution model", "Naming and binding"]

    # One passage under two titles: shown once, under the first, naming the second.
    expect(items.nth(0).locator(".source-excerpt")).to_have_count(1)
    expect(items.nth(0).locator(".source-also")).to_have_text(f"Also in [2] {titles[1]}.")
    expect(items.nth(1).locator(".source-excerpt")).to_have_count(0)
    expect(items.nth(1).locator(".source-same")).to_have_text("Same passage as [1].")

    # Read as text, centered on the backing sentence (marked at `done`, before the support record).
    excerpt = items.nth(0).locator(".source-excerpt")
    text = excerpt.inner_text()
    for raw in ("*", "`", "+-----+", "|", "---"):
        assert raw not in text
    expect(excerpt.locator("mark")).to_contain_text("A global statement binds a name at module level")
    assert text.startswith("…"), "the window starts near the backing passage, not at the top of the chunk"
    # Cut at words: every word shown is a whole word of the passage.
    words = set(readable(PASSAGE)[0].split())
    for word in text.strip("…").split():
        assert word in words, f"{word!r} is cut"
    live = excerpt.evaluate("p => Array.from(p.childNodes).map(n => [n.textContent, n.nodeName === 'MARK'])")

    page.goto(page.locator("[data-answer-permalink]").get_attribute("href") or "")
    permalink = page.locator(f"{SOURCES} .source-excerpt").first
    assert (
        permalink.evaluate("p => Array.from(p.childNodes).map(n => [n.textContent, n.nodeName === 'MARK'])")
        == live
    )
    expect(page.locator(f"{SOURCES} .source-same")).to_have_text(["Same passage as [1]."])


TEXT_SELECTORS = [
    "h1",
    ".intro",
    "label",
    ".form-hint",
    "[data-answer-text] p",
    "[data-answer-text] a.cite",
    ".source-number",
    "a.source-title",
    ".source-excerpt",
    ".source-excerpt mark",
    ".feedback-button",
    ".feedback-button[aria-pressed=true]",
    ".flag-source",
    ".share-button",
    ".share-download",
    "button[type=submit]",
]


@IN_BOTH_SCHEMES
def test_text_meets_wcag_aa_contrast_in_both_schemes(
    browser: Browser, browser_server: LiveServer, browser_stub: StubOpenAIServer, scheme: str, width: int
) -> None:
    browser_stub.reset()
    with fresh_page(browser, browser_server.url) as page:
        show(page, width=width, scheme=scheme)
        browser_stub.enqueue(Reply(pieces=["Zebras live in grassland habitat and savanna [2]."]))
        ask(page)
        page.locator('[data-verdict="helpful"]').click()
        expect(page.locator('[data-verdict="helpful"]')).to_have_attribute("aria-pressed", "true")
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert (background == "rgb(255, 255, 255)") == (scheme == "light"), "the page follows the scheme"
        assert_aa_contrast(page, TEXT_SELECTORS, f"in {scheme} at {width} px")


FIRST_SCREEN_TEXT = ["h1", ".intro", ".examples-heading", "[data-example-question]", "label", ".form-hint"]
PERMALINK_TEXT = [
    "h1",
    "[data-answer-text] p",
    "[data-answer-text] code",
    "[data-answer-text] th",
    "[data-answer-text] td",
    "[data-answer-text] a.cite",
    "a.source-title",
    ".source-excerpt mark",
    ".feedback-button",
    ".share-button",
    "[data-answer-permalink]",
]


@IN_BOTH_SCHEMES
def test_the_first_screen_and_the_permalink_read_in_both_schemes(
    browser: Browser, browser_server: LiveServer, browser_stub: StubOpenAIServer, scheme: str, width: int
) -> None:
    browser_stub.reset()
    with fresh_page(browser, browser_server.url) as page:
        show(page, width=width, scheme=scheme)
        page.goto("/")
        expect(page.locator("[data-example-question]").first).to_be_visible()
        assert_aa_contrast(page, FIRST_SCREEN_TEXT, f"on the first screen in {scheme} at {width} px")
        assert clipped(page) == []
        assert not scrolls_sideways(page)
        # An answer with inline code and a table, on its permalink.
        browser_stub.enqueue(
            Reply(
                pieces=[
                    "Zebras live in `grassland` [2] and savanna [1].\n\n| a | b |\n|---|---|\n| x [1] | y |"
                ]
            )
        )
        answer_id = ask(page)
        page.goto(f"/answers/{answer_id}/")
        expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
        assert_aa_contrast(page, PERMALINK_TEXT, f"on the permalink in {scheme} at {width} px")
        assert clipped(page) == []
        assert not scrolls_sideways(page)
