"""A conversation in a real browser: three turns, each with its own Sources list and anchors; the address
is the conversation's permalink, and a reload shows every turn with the same numbers."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.fixtures.browser_pages import fresh_page
from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer
from tests.fixtures.page_checks import IN_BOTH_SCHEMES, assert_aa_contrast, show
from tests.fixtures.providers import HoldAfterFirstPiece, Reply, StubOpenAIServer

CONVERSATION_URL = re.compile(r"/conversations/[0-9a-f-]{36}/$")

# Every turn as the page shows it: each source's number, anchor and title, and each citation link's
# text, target and whether that target is a source of the same turn with the same number.
READ_THREAD = """() => [...document.querySelectorAll("[data-thread] > [data-turn]")].map(turn => ({
  turn: turn.dataset.turn,
  question: turn.querySelector("[data-turn-question]").textContent,
  status: turn.querySelector("[data-answer]").dataset.answerStatus,
  text: turn.querySelector("[data-answer-text]").innerText,
  sources: [...turn.querySelectorAll("[data-answer-sources] > li")].map(li => ({
    number: li.dataset.number, id: li.id, title: li.querySelector(".source-title").textContent,
  })),
  cites: [...turn.querySelectorAll("[data-answer-text] a.cite")].map(a => {
    const target = document.getElementById(a.getAttribute("href").slice(1));
    return {
      label: a.textContent,
      href: a.getAttribute("href"),
      own: target !== null && turn.contains(target) && `[${target.dataset.number}]` === a.textContent,
    };
  }),
}))"""


def _ask(page: Page, question: str) -> None:
    page.fill("textarea[name=question]", question)
    page.click("[data-ask-submit]")


def _done(page: Page, turn: int) -> None:
    expect(page.locator(f'[data-turn="{turn}"] [data-answer]')).to_have_attribute(
        "data-answer-status", "done"
    )


def test_three_turns_keep_their_own_numbers_and_links_through_a_reload(
    page: Page, browser_stub: StubOpenAIServer
) -> None:
    browser_stub.enqueue(
        Reply(pieces=["Zebras live in grassland [2]", " and savanna [4]."]),
        Reply(pieces=["Quokka facts?"]),  # turn 2's rewrite (not streamed)
        Reply(pieces=["Quokkas live on an island [2] in dense scrub [1]."]),
        Reply(pieces=[ZEBRA_QUESTION]),  # turn 3's rewrite
        Reply(pieces=["Savanna again [3]."]),
    )
    page.goto("/")
    _ask(page, ZEBRA_QUESTION)
    _done(page, 1)
    # The answer exists: the address is its conversation's permalink, and the follow-up box is ready.
    expect(page).to_have_url(CONVERSATION_URL)
    expect(page.locator("[data-ask-label]")).to_have_text("Ask a follow-up")
    expect(page.locator("[data-ask-another]")).to_be_visible()
    _ask(page, "And what about them?")
    _done(page, 2)
    _ask(page, "Where do zebras live again?")
    _done(page, 3)

    live: list[dict[str, Any]] = page.evaluate(READ_THREAD)
    assert [t["turn"] for t in live] == ["1", "2", "3"]
    assert [t["text"] for t in live] == [
        "Zebras live in grassland [1] and savanna [2].",
        "Quokkas live on an island [1] in dense scrub [2].",
        "Savanna again [1].",
    ]
    assert [[s["number"] for s in t["sources"]] for t in live] == [["1", "2"], ["1", "2"], ["1"]]
    assert [[s["id"] for s in t["sources"]] for t in live] == [
        ["source-1", "source-2"],
        ["turn-2-source-1", "turn-2-source-2"],
        ["turn-3-source-1"],
    ]
    assert all(cite["own"] for t in live for cite in t["cites"]), live
    assert [len(t["cites"]) for t in live] == [2, 2, 1]
    ids = page.evaluate("() => [...document.querySelectorAll('[id]')].map(e => e.id)")
    assert len(ids) == len(set(ids)), "ids must be unique on the page"
    # The answer requests carried the earlier answers, without one marker.
    answer_requests = [r for r in browser_stub.requests if r.get("stream")]
    history = [m["content"] for m in answer_requests[2]["messages"] if m["role"] == "assistant"]
    assert history == ["Zebras live in grassland and savanna.", "Quokkas live on an island in dense scrub."]

    page.reload()
    _done(page, 3)
    assert page.evaluate(READ_THREAD) == live
    # A citation goes to its own turn's source.
    page.locator('[data-turn="2"] [data-answer-text] a.cite').first.click()
    expect(page).to_have_url(re.compile(r"#turn-2-source-1$"))


def test_a_reload_while_the_answer_streams_joins_it_and_ends_with_the_same_numbers(
    page: Page, browser_stub: StubOpenAIServer
) -> None:
    # The stub holds the rest of the answer until the page has been reloaded and shows the turn again.
    reloaded = HoldAfterFirstPiece()

    browser_stub.enqueue(
        Reply(pieces=["Zebras live in grassland [2]", " and savanna [4]."], on_piece=reloaded)
    )
    page.goto("/")
    _ask(page, ZEBRA_QUESTION)
    # The answer exists (its POST answered): the address is its conversation's permalink already.
    expect(page).to_have_url(CONVERSATION_URL)
    turn = page.locator('[data-turn="1"] [data-answer]')
    expect(turn.locator("[data-answer-text]")).to_contain_text("Zebras live in grassland")
    expect(turn).to_have_attribute("data-answer-status", "streaming")

    page.reload()
    try:
        # The reloaded page shows the turn in flight and joins its stream (replayed from the start).
        expect(turn).to_have_attribute("data-answer-status", "streaming")
        expect(turn.locator("[data-answer-text]")).to_contain_text("Zebras live in grassland")
    finally:
        reloaded.release()
    _done(page, 1)
    thread: list[dict[str, Any]] = page.evaluate(READ_THREAD)
    assert [t["text"] for t in thread] == ["Zebras live in grassland [1] and savanna [2]."]
    assert [[s["number"] for s in t["sources"]] for t in thread] == [["1", "2"]]
    assert all(cite["own"] for t in thread for cite in t["cites"]), thread
    # What the reload streamed is what the stored page shows.
    page.reload()
    _done(page, 1)
    assert page.evaluate(READ_THREAD) == thread


def test_back_leaves_the_conversation_and_ask_another_offers_the_examples(
    page: Page, browser_stub: StubOpenAIServer
) -> None:
    browser_stub.enqueue(Reply(pieces=["Zebras live in grassland [1]."]))
    page.goto("/")
    _ask(page, ZEBRA_QUESTION)
    _done(page, 1)
    expect(page).to_have_url(CONVERSATION_URL)
    conversation = page.url
    page.go_back()
    expect(page).to_have_url(re.compile(r"/$"))
    # The first screen again (reloaded from its address): no turn shown, the examples offered.
    expect(page.locator('[data-turn="1"]')).to_be_hidden()
    expect(page.locator("[data-example-question]").first).to_be_visible()
    page.go_forward()
    expect(page).to_have_url(conversation)
    _done(page, 1)
    page.click("[data-ask-another]")
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.locator("[data-example-question]").first).to_be_visible()


def test_without_javascript_a_follow_up_is_a_form_post_that_adds_a_turn(
    browser: Browser, browser_server: LiveServer, browser_stub: StubOpenAIServer
) -> None:
    browser_stub.reset()
    browser_stub.enqueue(
        Reply(pieces=["Zebras live in grassland [2]."]),
        Reply(pieces=["Quokka facts?"]),
        Reply(pieces=["Quokkas live on an island [1]."]),
    )
    context = browser.new_context(base_url=browser_server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto("/")
        _ask(page, ZEBRA_QUESTION)
        page.wait_for_url(re.compile(r"/conversations/[0-9a-f-]{36}/#turn-1$"))
        _ask(page, "And the quokkas?")
        page.wait_for_url(re.compile(r"/conversations/[0-9a-f-]{36}/#turn-2$"))
        expect(page.locator("[data-thread] > [data-turn]")).to_have_count(2)
        expect(page.locator('[data-turn="2"] [data-answer-text]')).to_have_text(
            "Quokkas live on an island [1]."
        )
        expect(page.locator('[data-turn="2"] [data-answer-text] a.cite')).to_have_attribute(
            "href", "#turn-2-source-1"
        )
    finally:
        context.close()


TURN_2_TEXT = "Quokkas live on an island [2] in dense scrub [1]."
FOLLOW_UP = "And what about them?"


def _two_turns(page: Page, browser_stub: StubOpenAIServer) -> tuple[str, str]:
    """Ask a question and a follow-up (each turn's source 1 a different document); the answers' ids."""
    browser_stub.enqueue(
        Reply(pieces=["Zebras live in grassland [2] and savanna [4]."]),
        Reply(pieces=["Quokka facts?"]),  # turn 2's rewrite (not streamed)
        Reply(pieces=[TURN_2_TEXT]),
    )
    page.goto("/")
    _ask(page, ZEBRA_QUESTION)
    _done(page, 1)
    _ask(page, FOLLOW_UP)
    _done(page, 2)
    ids = [
        page.locator(f'[data-turn="{turn}"] [data-answer]').get_attribute("data-answer-id") or ""
        for turn in (1, 2)
    ]
    assert all(ids), ids
    return ids[0], ids[1]


@pytest.mark.parametrize("width", [1280, 390])
def test_copy_preview_and_feedback_on_a_later_turn_are_that_turns_own(
    page: Page, browser_server: LiveServer, browser_stub: StubOpenAIServer, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=browser_server.url)
    first_id, second_id = _two_turns(page, browser_stub)
    one, two = page.locator('[data-turn="1"]'), page.locator('[data-turn="2"]')
    api = {
        answer_id: page.request.get(f"/api/answers/{answer_id}/").json()
        for answer_id in (first_id, second_id)
    }
    titles = {
        answer_id: {str(ref["number"]): ref["title"] for ref in api[answer_id]["references"]}
        for answer_id in (first_id, second_id)
    }
    assert titles[first_id]["1"] != titles[second_id]["1"], "each turn's source 1 is another document"

    # Copy answer: turn 2's Markdown, its own Sources list, numbered as turn 2 shows them.
    two.locator("[data-copy-answer]").click()
    expect(two.locator("[data-share-status]")).to_have_text("Answer copied, with its sources.")
    expect(one.locator("[data-share-status]")).to_have_text("")
    copied = page.evaluate("navigator.clipboard.readText()")
    download = page.request.get(f"/answers/{second_id}/answer.md")
    assert download.status == 200
    assert copied == download.text(), "the copy is turn 2's Markdown download"
    assert "Quokkas live on an island [1] in dense scrub [2]." in copied
    shown = [
        (li.get_attribute("data-number"), li.locator(".source-title").inner_text())
        for li in two.locator("[data-answer-sources] > li").all()
    ]
    assert shown == sorted(titles[second_id].items()), "the page lists turn 2's sources, numbered as stored"
    sources = copied.split("Sources:", 1)[1]
    listed = re.findall(r"^(\d+)\. ", sources, re.MULTILINE)
    assert listed == [number for number, _ in shown], sources
    # These titles' URLs are no links: the title alone (docs/reference/http.md, answer.md),
    for number, title in shown:
        as_text = re.sub(r"([\\\[\]<>&])", r"\\\1", title)  # its markup characters escaped: text
        assert f"\n{number}. {as_text}\n" in sources, sources
    # Turn 1's question above turn 2's (docs/reference/http.md, answer.md), and nothing else of turn 1.
    earlier, _, own = copied.partition(f"# {FOLLOW_UP}\n")
    assert earlier == f"Earlier in this conversation:\n\n1. {ZEBRA_QUESTION}\n\n"
    assert "Zebra habitat guide" not in own, "nothing of turn 1's answer"
    assert copied.rstrip().endswith(f"Answer: {browser_server.url}/answers/{second_id}/")

    # Copy link: turn 2's permalink.
    two.locator("[data-copy-link]").click()
    expect(two.locator("[data-share-status]")).to_have_text("Link copied.")
    assert page.evaluate("navigator.clipboard.readText()") == f"{browser_server.url}/answers/{second_id}/"

    # A preview on turn 2's [1] shows turn 2's source 1, not turn 1's source with the same number.
    cite = two.locator("[data-answer-text] a.cite").first
    expect(cite).to_have_text("[1]")
    cite.focus()
    preview = two.locator("[data-source-preview]")
    expect(preview).to_be_visible()
    expect(preview.locator(".source-preview-title")).to_have_text(f"[1] {titles[second_id]['1']}")
    expect(one.locator("[data-source-preview]")).to_be_hidden()
    page.keyboard.press("Escape")
    expect(preview).to_be_hidden()
    expect(cite).to_be_focused()
    two.locator("[data-answer-text] a.cite").nth(1).hover()  # by mouse: turn 2's [2]
    expect(preview.locator(".source-preview-title")).to_have_text(f"[2] {titles[second_id]['2']}")
    page.mouse.move(1, 1)
    expect(preview).to_be_hidden()
    one.locator("[data-answer-text] a.cite").first.focus()
    expect(one.locator(".source-preview-title")).to_have_text(f"[1] {titles[first_id]['1']}")
    page.keyboard.press("Escape")

    # Feedback on turn 2 goes to turn 2's answer; the page shows it on turn 2 only.
    two.locator("[data-feedback-comment]").fill("Only about quokkas")
    two.locator('[data-verdict="unhelpful"]').click()
    expect(two.locator("[data-feedback-status]")).to_contain_text("You said: not helpful.")
    expect(two.locator('[data-verdict="unhelpful"]')).to_have_attribute("aria-pressed", "true")
    expect(one.locator("[data-feedback-status]")).to_have_text("")
    expect(one.locator("[data-verdict][aria-pressed=true]")).to_have_count(0)
    sent = page.request.get(f"/api/answers/{second_id}/feedback/").json()
    assert sent["verdict"]["verdict"] == "unhelpful"
    assert sent["verdict"]["comment"] == "Only about quokkas"
    assert page.request.get(f"/api/answers/{first_id}/feedback/").json() == {"verdict": None, "flags": []}

    # A reload after turn 2's `done`: the same on the stored thread.
    page.reload()
    _done(page, 2)
    expect(two.locator('[data-verdict="unhelpful"]')).to_have_attribute("aria-pressed", "true")
    expect(two.locator("[data-feedback-comment]")).to_have_value("Only about quokkas")
    expect(one.locator("[data-verdict][aria-pressed=true]")).to_have_count(0)
    expect(one.locator("[data-feedback-status]")).to_have_text("")
    two.locator("[data-answer-text] a.cite").first.focus()
    expect(two.locator(".source-preview-title")).to_have_text(f"[1] {titles[second_id]['1']}")
    page.keyboard.press("Escape")
    two.locator("[data-copy-answer]").click()
    expect(two.locator("[data-share-status]")).to_have_text("Answer copied, with its sources.")
    assert page.evaluate("navigator.clipboard.readText()") == download.text()


def test_a_reload_while_a_later_turn_streams_joins_it_and_its_preview_and_numbers_hold(
    page: Page, browser_stub: StubOpenAIServer
) -> None:
    # The stub holds the rest of turn 2 until the page has been reloaded and shows the turn again.
    reloaded = HoldAfterFirstPiece()

    browser_stub.enqueue(
        Reply(pieces=["Zebras live in grassland [2] and savanna [4]."]),
        Reply(pieces=["Quokka facts?"]),  # turn 2's rewrite (not streamed)
        Reply(
            pieces=["Quokkas live on an island [2] and", " in dense scrub [1]."],
            on_piece=reloaded,
        ),
    )
    page.goto("/")
    _ask(page, ZEBRA_QUESTION)
    _done(page, 1)
    _ask(page, "And what about them?")
    two = page.locator('[data-turn="2"]')
    expect(two.locator("[data-answer-text]")).to_contain_text("Quokkas live on an island [1]")
    expect(two.locator("[data-answer]")).to_have_attribute("data-answer-status", "streaming")

    page.reload()
    try:
        # The reloaded thread: turn 1 done as stored, turn 2 in flight, joined to its stream.
        _done(page, 1)
        expect(two.locator("[data-answer]")).to_have_attribute("data-answer-status", "streaming")
        expect(two.locator("[data-answer-text] a.cite").first).to_have_attribute("href", "#turn-2-source-1")
    finally:
        reloaded.release()
    _done(page, 2)
    thread: list[dict[str, Any]] = page.evaluate(READ_THREAD)
    assert [t["text"] for t in thread] == [
        "Zebras live in grassland [1] and savanna [2].",
        "Quokkas live on an island [1] and in dense scrub [2].",
    ]
    assert [[s["id"] for s in t["sources"]] for t in thread] == [
        ["source-1", "source-2"],
        ["turn-2-source-1", "turn-2-source-2"],
    ]
    assert all(cite["own"] for t in thread for cite in t["cites"]), thread
    # Turn 2's citation previews turn 2's source; the stored thread reads the same after another reload.
    two.locator("[data-answer-text] a.cite").first.focus()
    expect(two.locator(".source-preview-title")).to_have_text(f"[1] {thread[1]['sources'][0]['title']}")
    page.keyboard.press("Escape")
    page.reload()
    _done(page, 2)
    assert page.evaluate(READ_THREAD) == thread


# What a conversation adds to the page's text, and the preview's, each measured where it shows.
THREAD_TEXT_SELECTORS = [
    ".question-label",
    ".turn-question",
    "[data-answer-text] a.cite",
    ".source-preview-title",
    ".source-preview-passage",
    ".source-preview mark",
    ".source-preview-link",
    ".feedback-status",
    ".share-status",
    "[data-ask-label]",
    "a[data-ask-another]",
]


@IN_BOTH_SCHEMES
def test_a_thread_and_an_open_preview_meet_wcag_aa_contrast_in_both_schemes(
    page: Page, browser_stub: StubOpenAIServer, scheme: str, width: int
) -> None:
    show(page, width=width, scheme=scheme)
    _two_turns(page, browser_stub)
    two = page.locator('[data-turn="2"]')
    two.locator('[data-verdict="helpful"]').click()
    expect(two.locator("[data-feedback-status]")).to_contain_text("You said: helpful.")
    two.locator("[data-copy-link]").click()
    expect(two.locator("[data-share-status]")).not_to_have_text("")
    # Turn 1's sources have links: its preview shows every part (title, marked passage, link).
    page.locator('[data-turn="1"] [data-answer-text] a.cite').first.focus()
    expect(page.locator(".source-preview-link")).to_be_visible()
    assert_aa_contrast(page, THREAD_TEXT_SELECTORS, f"in {scheme} at {width} px")


def test_a_tap_on_a_later_turns_citation_previews_its_source_and_a_second_follows_it(
    browser: Browser, browser_server: LiveServer, browser_stub: StubOpenAIServer
) -> None:
    browser_stub.reset()
    with fresh_page(browser, browser_server.url, touch=True) as page:
        _, second_id = _two_turns(page, browser_stub)
        title = page.request.get(f"/api/answers/{second_id}/").json()["references"][0]["title"]
        two = page.locator('[data-turn="2"]')
        cite = two.locator("[data-answer-text] a.cite").first
        cite.tap()
        expect(two.locator(".source-preview-title")).to_have_text(f"[1] {title}")
        assert "#turn-2-source-1" not in page.url, "the first tap previews"
        cite.tap()
        expect(page).to_have_url(re.compile("#turn-2-source-1$"))
