"""The reader's thread (issue 47), in Chromium at 1280 and 390 px: a citation followed stays on the page (the
draft in the question box and the thread survive; the source is scrolled to and highlighted, the address
names it), the question box is emptied after every turn and sits right under the last answer, each source's
report sits behind one "Report a source" disclosure, one "Copy link", a declined answer with nothing to copy
and its question first, and a conversation opened by another reader says why it has no question box."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, Page, expect

from answers.conf import DECLINE_TEXT
from tests.fixtures.browser_pages import fresh_page, report_source
from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer
from tests.fixtures.page_checks import clipped, scrolls_sideways
from tests.fixtures.providers import Reply, StubOpenAIServer

CONVERSATION_URL = re.compile(r"/conversations/[0-9a-f-]{36}/$")
BOX = "[data-ask-form] textarea[name=question]"
DRAFT = "A draft I am still writing"
# No word of it is in the live server's corpus (zebras and quokkas): declined.
OFF_TOPIC = "How do zeppelins moor in Patagonia?"

# Where an element is on the page (document coordinates) and whether it is inside the viewport.
BOX_OF = """el => { const b = el.getBoundingClientRect();
  return {top: b.top + scrollY, bottom: b.bottom + scrollY,
          inView: b.top >= 0 && b.bottom <= innerHeight && b.height > 0}; }"""


def ask(page: Page, question: str) -> None:
    page.fill(BOX, question)
    page.click("[data-ask-submit]")


def done(page: Page, turn: int) -> None:
    expect(page.locator(f'[data-turn="{turn}"] [data-answer]')).to_have_attribute(
        "data-answer-status", "done"
    )


# A question and a follow-up, each answer citing two sources.
TWO_TURNS = (
    Reply(pieces=["Zebras live in grassland [2] and savanna [1]."]),
    Reply(pieces=["Quokka facts?"]),  # the follow-up's rewrite (not streamed)
    Reply(pieces=["Quokkas live on an island [2] in dense scrub [1]."]),
)


def first_turn(page: Page, stub: StubOpenAIServer, *replies: Reply) -> None:
    """The stub's `replies` queued, the zebra question asked on the ask page, its answer done."""
    stub.enqueue(*replies)
    page.goto("/")
    ask(page, ZEBRA_QUESTION)
    done(page, 1)


def two_turns(page: Page, stub: StubOpenAIServer) -> None:
    """A question and a follow-up on the ask page, both done."""
    first_turn(page, stub, *TWO_TURNS)
    ask(page, "And what about quokkas?")
    done(page, 2)


def follow_citation(page: Page, turn: int, anchor: str) -> None:
    """Click the turn's first citation; the page stays (no load: the marker set on `window` survives),
    the draft too, and the citation's source is highlighted, focused, in view and named in the address."""
    history = page.evaluate("history.length")
    cite = page.locator(f'[data-turn="{turn}"] [data-answer-text] a.cite').first
    expect(cite).to_have_attribute("href", f"#{anchor}")  # the no-JavaScript way there
    cite.click()
    source = page.locator(f"#{anchor}")
    expect(source).to_have_attribute("data-source-shown", "")
    expect(source).to_be_focused()
    expect(page).to_have_url(re.compile(f"{CONVERSATION_URL.pattern[:-1]}#{anchor}$"))
    assert page.evaluate("window.__stillThisPage") == 1, "a citation click loaded a new page"
    expect(page.locator(BOX)).to_have_value(DRAFT)
    assert source.evaluate(BOX_OF)["inView"], "the source is scrolled into view"
    assert page.evaluate("history.length") == history, "replaced, not pushed: Back leaves the thread"
    assert page.locator("[data-source-shown]").count() == 1, "one source highlighted at a time"


def test_a_citation_click_stays_on_the_page_and_shows_its_source(
    sized_page: Page, browser_stub: StubOpenAIServer
) -> None:
    page = sized_page
    two_turns(page, browser_stub)
    expect(page).to_have_url(CONVERSATION_URL)
    expect(page.locator('[data-turn="2"] [data-answer-text] a.cite')).to_have_count(2)

    # On the ask page that became the thread, and on the conversation's page as the server renders it.
    for reload in (False, True):
        if reload:
            page.goto(page.url.split("#")[0])
            done(page, 2)
        page.evaluate("window.__stillThisPage = 1")
        page.fill(BOX, DRAFT)
        # Turn 1's source 1, already on the screen at 1280 px: followed without a jump of the thread.
        page.locator('[data-turn="1"] [data-answer-text]').scroll_into_view_if_needed()
        already_shown = page.locator("#source-1").evaluate(BOX_OF)["inView"]
        scrolled = page.evaluate("scrollY")
        follow_citation(page, 1, "source-1")
        if page.viewport_size and page.viewport_size["width"] >= 1000:
            assert already_shown, "at 1280 px turn 1's Sources list is on the screen with its answer"
        if already_shown:
            assert page.evaluate("scrollY") == scrolled, "the thread kept its scroll position"
        else:
            # Scrolled down to the source from where the reader was (a new page would open at its top).
            assert page.evaluate("scrollY") > scrolled, "the thread kept its place"
        follow_citation(page, 2, "turn-2-source-1")
        expect(page.locator("#source-1")).not_to_have_attribute("data-source-shown", "")
    assert not scrolls_sideways(page)


def test_the_box_is_emptied_after_every_turn_and_sits_right_under_the_last_answer(
    sized_page: Page, browser_stub: StubOpenAIServer
) -> None:
    page = sized_page
    first_turn(page, browser_stub, *TWO_TURNS)
    box = page.locator(BOX)
    expect(box).to_have_value("")  # the first turn included
    expect(page.locator("[data-ask-label]")).to_have_text("Ask a follow-up")
    # Enter in the emptied box asks nothing twice: the browser refuses an empty required box.
    box.press("Enter")
    assert box.evaluate("el => el.validity.valueMissing")
    expect(page.locator("[data-thread] > [data-turn]:visible")).to_have_count(1)

    for turn in (1, 2):
        if turn == 2:
            ask(page, "And what about quokkas?")
            done(page, 2)
            expect(box).to_have_value("")
        last = page.locator(f'[data-turn="{turn}"]')
        form = page.locator("[data-ask-form]")
        # Nothing between the last answer and the box: the examples and "Ask another" are elsewhere.
        assert last.evaluate("el => el.nextElementSibling === null"), "the last turn ends the thread"
        assert page.locator("[data-thread]").evaluate(
            "t => t.nextElementSibling.contains(document.querySelector('[data-ask-form]'))"
        )
        gap = form.evaluate(BOX_OF)["top"] - last.evaluate(BOX_OF)["bottom"]
        assert 0 <= gap <= 80, f"the box is {gap} px under the last answer"
        if page.viewport_size and page.viewport_size["width"] >= 1000:
            # On a desktop the last turn's question, its answer and the box fit on one screen.
            last.locator("[data-turn-question]").evaluate("el => el.scrollIntoView({block: 'start'})")
            assert box.evaluate(BOX_OF)["inView"], "the box is a screen or more below the answer"
    assert not scrolls_sideways(page)
    assert clipped(page) == []
    # The conversation's page as the server renders it: the same heading, an empty box.
    page.reload()
    done(page, 2)
    expect(page.locator("[data-ask-label]")).to_have_text("Ask a follow-up")
    expect(box).to_have_value("")


# An answer of sixty sentences citing all four zebra pages: taller than a desktop's screen.
LONG_ANSWER = " ".join(
    f"Zebras graze open grassland {i} and move with the seasons to water [{1 + i % 4}]." for i in range(60)
)


def test_after_a_long_answer_the_emptied_box_is_right_under_it(
    sized_page: Page, browser_stub: StubOpenAIServer
) -> None:
    """The first turn's answer taller than the screen: the box, emptied and headed "Ask a follow-up",
    comes right after its turn. On a desktop, from the answer's last line the box starts less than a
    screen further down (its Sources, feedback and sharing between them), not ~1,100 px."""
    page = sized_page
    first_turn(page, browser_stub, Reply(pieces=[LONG_ANSWER]))
    box = page.locator(BOX)
    expect(box).to_have_value("")
    expect(page.locator("[data-ask-label]")).to_have_text("Ask a follow-up")
    turn = page.locator('[data-turn="1"]')
    text = turn.locator("[data-answer-text]").evaluate(BOX_OF)
    height = page.evaluate("innerHeight")
    assert text["bottom"] - text["top"] > height, "the answer is taller than the screen"
    gap = page.locator("[data-ask-form]").evaluate(BOX_OF)["top"] - turn.evaluate(BOX_OF)["bottom"]
    assert 0 <= gap <= 80, f"the box is {gap} px under the answer's turn"
    if page.viewport_size and page.viewport_size["width"] >= 1000:
        below = box.evaluate(BOX_OF)["top"] - text["bottom"]
        assert below < height, f"the box is {below} px below the answer's last line"
        # Scrolled so the answer's last line is at the top: the box shows on the same screen.
        page.evaluate(f"scrollTo(0, {text['bottom']} - 40)")
        assert box.evaluate("el => el.getBoundingClientRect().top < innerHeight"), "the box is a screen below"
    # Enter in the emptied box asks nothing again.
    box.press("Enter")
    expect(page.locator("[data-thread] > [data-turn]:visible")).to_have_count(1)
    assert not scrolls_sideways(page)


def test_one_report_control_per_source_and_one_copy_link(
    sized_page: Page, browser_server: LiveServer, browser_stub: StubOpenAIServer
) -> None:
    page = sized_page
    first_turn(page, browser_stub, TWO_TURNS[0])
    answer_id = page.locator("[data-answer]").first.get_attribute("data-answer-id")
    sources = page.locator("[data-answer-sources] > li")
    expect(sources).to_have_count(2)
    for li in sources.all():
        # One quiet control per card; its note and button appear when it is opened.
        expect(li.locator("summary")).to_have_text("Report a source")
        expect(li.locator("[data-flag-note]")).to_be_hidden()
        expect(li.locator("[data-flag-source]")).to_be_hidden()
        expect(li.locator("input:visible, button:visible, textarea:visible")).to_have_count(0)
    report_source(page, 2, "Not about zebras")
    flagged = sources.nth(1)
    expect(flagged.locator("summary")).to_have_text("Reported: does not back the answer")
    expect(flagged.locator("[data-flag-source]")).to_have_text("Flagged: does not back the answer")
    # One way to the permalink: "Copy link", a link to it (without JavaScript it leads there).
    answer = page.locator("[data-answer]").first
    expect(answer.get_by_text("Link to this answer")).to_have_count(0)
    expect(answer.locator("[data-copy-link]")).to_have_count(1)
    expect(answer.locator("[data-copy-link]")).to_have_attribute("href", f"/answers/{answer_id}/")
    expect(answer.locator(f'a[href="/answers/{answer_id}/"]:visible')).to_have_count(1)

    # The permalink remembers the report with the disclosure closed.
    page.goto(f"/answers/{answer_id}/")
    flagged = page.locator("[data-answer-sources] > li").nth(1)
    expect(flagged.locator("summary")).to_have_text("Reported: does not back the answer")
    expect(flagged.locator("[data-flag-source]")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("[data-answer-sources] > li").nth(0).locator("summary")).to_have_text(
        "Report a source"
    )
    assert not scrolls_sideways(page)
    assert clipped(page) == []


def test_a_declined_answer_offers_nothing_to_copy_and_keeps_its_question_first(
    sized_page: Page, browser_stub: StubOpenAIServer
) -> None:
    page = sized_page
    page.goto("/")
    ask(page, OFF_TOPIC)
    answer = page.locator("[data-answer]").first
    expect(answer).to_have_attribute("data-answer-declined", "")
    expect(answer.locator("[data-answer-text]")).to_have_text(DECLINE_TEXT)
    question = page.locator('[data-turn="1"] [data-turn-question]')
    examples = page.locator("[data-examples]")
    expect(examples).to_be_visible()

    def question_first() -> None:
        expect(page.locator("[data-copy-answer]:visible, [data-copy-link]:visible")).to_have_count(0)
        expect(page.locator("[data-answer-markdown]:visible")).to_have_count(0)
        assert question.evaluate(BOX_OF)["bottom"] <= examples.evaluate(BOX_OF)["top"], (
            "the example questions jumped above the question"
        )

    question_first()
    # The declined answer's own page: the same.
    answer_id = answer.get_attribute("data-answer-id")
    page.goto(f"/answers/{answer_id}/")
    expect(page.locator("[data-answer]")).to_have_attribute("data-answer-declined", "")
    question = page.locator("[data-question]")
    question_first()
    assert browser_stub.requests == []
    assert not scrolls_sideways(page)


def test_a_conversation_opened_by_another_reader_says_why_it_has_no_box(
    sized_page: Page, browser: Browser, browser_server: LiveServer, browser_stub: StubOpenAIServer
) -> None:
    page = sized_page
    first_turn(page, browser_stub, Reply(pieces=["Zebras live in grassland [1]."]))
    expect(page).to_have_url(CONVERSATION_URL)
    conversation = page.url
    # Its asker, on a reload: the box, no word of another reader.
    page.reload()
    expect(page.locator(BOX)).to_be_visible()
    expect(page.locator("[data-conversation-not-yours]")).to_have_count(0)

    with fresh_page(browser, browser_server.url) as other:
        other.set_viewport_size(page.viewport_size or {"width": 390, "height": 844})
        other.goto(conversation)
        done(other, 1)
        expect(other.locator(BOX)).to_have_count(0)
        note = other.locator("[data-conversation-not-yours]")
        expect(note).to_be_visible()
        expect(note).to_contain_text("This conversation belongs to another reader")
        assert not scrolls_sideways(other)
        assert clipped(other) == []
        note.get_by_role("link", name="Ask a new question").click()
        expect(other).to_have_url(re.compile(r"/$"))
        expect(other.locator(BOX)).to_be_visible()
        expect(other.locator(BOX)).to_have_value("")
