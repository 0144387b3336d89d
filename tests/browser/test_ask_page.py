"""The ask page in a real browser: streaming, the swap on `done`, fallback, errors, hostile content, no JS."""

from __future__ import annotations

import json
import re

from playwright.sync_api import Browser, Page, expect

from tests.fixtures.live_server import QUOKKA_QUESTION, ZEBRA_QUESTION, LiveServer
from tests.fixtures.providers import Reply, StubOpenAIServer

ANSWER = "[data-answer]"
TEXT = "[data-answer-text]"
SOURCES = "[data-answer-sources] > li"
RETRIEVED = "[data-answer-retrieved] > li"


def ask(page: Page, question: str) -> None:
    page.goto("/")
    page.fill("textarea[name=question]", question)
    page.click("button[type=submit]")


def test_sources_show_while_streaming_in_their_final_numbers_and_done_keeps_them(
    page: Page, browser_stub: StubOpenAIServer
) -> None:
    pieces = ["Zebras live ", "in grassland"] + [" and more"] * 12 + [" and savanna [3", "] [1", "]."]
    browser_stub.enqueue(Reply(pieces=pieces, delay_s=0.15))
    ask(page, ZEBRA_QUESTION)

    answer = page.locator(ANSWER)
    # Nothing cited yet: the four retrieved sources wait apart, unnumbered (read at one moment).
    early = page.wait_for_function(
        """() => {
          const answer = document.querySelector("[data-answer]");
          const waiting = [...answer.querySelectorAll("[data-answer-retrieved] > li")];
          return answer.dataset.answerStatus === "streaming" && waiting.length === 4
            && answer.querySelector("[data-answer-text]").textContent.startsWith("Zebras live in grassland")
            && {
              cited: answer.querySelectorAll("[data-answer-sources] > li").length,
              titles: waiting.map(li => li.querySelector(".source-title").textContent),
              numbered: waiting.filter(li => li.id || li.querySelector(".source-number")).length,
              links: waiting.map(li => li.querySelector("a.source-title")?.getAttribute("href") ?? null),
            };
        }"""
    ).json_value()
    assert early["cited"] == 0
    assert early["numbered"] == 0
    retrieved = early["titles"]
    # A site-relative URL is a link too.
    assert "/docs/zebra-4" in early["links"]

    expect(answer).to_have_attribute("data-answer-status", "done")
    expect(page.locator(SOURCES)).to_have_count(2)
    expect(page.locator(RETRIEVED)).to_have_count(0)
    expect(page.locator("[data-answer-retrieved-block]")).to_be_hidden()
    assert page.locator(f"{SOURCES} .source-title").all_inner_texts() == [retrieved[2], retrieved[0]]
    assert page.locator(SOURCES).evaluate_all("items => items.map(li => li.id)") == ["source-1", "source-2"]
    assert page.locator(SOURCES).evaluate_all("items => items.map(li => li.dataset.number)") == ["1", "2"]
    text = page.locator(TEXT).inner_text()
    assert text == "Zebras live in grassland" + " and more" * 12 + " and savanna [1] [2]."
    citations = page.locator(f"{TEXT} a.cite")
    expect(citations).to_have_count(2)
    assert citations.evaluate_all("links => links.map(a => [a.textContent, a.getAttribute('href')])") == [
        ["[1]", "#source-1"],
        ["[2]", "#source-2"],
    ]
    expect(page.locator("[data-answer-permalink]")).to_have_attribute(
        "href", re.compile(r"^/answers/[0-9a-f-]{36}/$")
    )


def test_fallback_answer_keeps_every_source_and_the_form_works_by_keyboard(
    page: Page, browser_stub: StubOpenAIServer
) -> None:
    browser_stub.enqueue(Reply(pieces=["Zebras live in grassland", " and savanna."], delay_s=0.05))
    page.goto("/")
    field = page.locator("textarea[name=question]")
    field.focus()
    page.keyboard.type(ZEBRA_QUESTION)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.type") == "submit"
    page.keyboard.press("Enter")

    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(page.locator(SOURCES)).to_have_count(4)
    expect(page.locator(TEXT)).to_have_text("Zebras live in grassland and savanna.")
    expect(page.locator("[data-answer-fallback]")).to_be_visible()
    expect(page.locator(f"{TEXT} a")).to_have_count(0)


def test_enter_in_the_question_asks_and_shift_enter_starts_a_new_line(
    page: Page, browser_stub: StubOpenAIServer
) -> None:
    browser_stub.enqueue(Reply(pieces=["Zebras graze [2]."]))
    page.goto("/")
    field = page.locator("textarea[name=question]")
    field.focus()
    page.keyboard.type("Where do zebras")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("live?")
    assert field.input_value() == "Where do zebras\nlive?"
    page.keyboard.press("Enter")

    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(page.locator(TEXT)).to_have_text("Zebras graze [1].")
    assert browser_stub.requests[-1]["messages"][-1]["content"].count("Where do zebras\nlive?") == 1


def test_provider_error_is_shown_to_the_user(page: Page, browser_stub: StubOpenAIServer) -> None:
    browser_stub.enqueue(Reply(status=400))
    ask(page, ZEBRA_QUESTION)

    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "failed")
    error = page.locator("[data-answer-error]")
    expect(error).to_be_visible()
    expect(error).to_contain_text("rejected the request")
    # Nothing was cited: the retrieved sources stay listed, unnumbered.
    expect(page.locator(RETRIEVED)).to_have_count(4)
    expect(page.locator(SOURCES)).to_have_count(0)


def test_blank_question_is_refused_in_the_page(page: Page) -> None:
    page.goto("/")
    page.fill("textarea[name=question]", "   ")
    page.click("button[type=submit]")
    expect(page.locator("[data-ask-error]")).to_have_text("Please type a question.")
    expect(page.locator(ANSWER)).to_be_hidden()


def test_markup_in_the_answer_and_source_titles_never_runs(
    page: Page, browser_stub: StubOpenAIServer
) -> None:
    pieces = [
        "Quokkas <script>window.__pwned = 1</script> are ",
        'small [1] <img src=x onerror="window.__pwned = 1"> and',
        ' <svg onload="window.__pwned = 1"></svg> friendly [2].',
    ]
    browser_stub.enqueue(Reply(pieces=pieces, delay_s=0.2))
    ask(page, QUOKKA_QUESTION)

    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "streaming")
    expect(page.locator(TEXT)).to_contain_text("<script>window.__pwned = 1</script>")
    expect(page.locator(SOURCES)).to_have_count(2)
    assert page.locator(f"{ANSWER} img, {ANSWER} script, {ANSWER} svg").count() == 0

    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    assert page.evaluate("window.__pwned") is None
    assert page.locator(f"{ANSWER} img, {ANSWER} script, {ANSWER} svg").count() == 0
    assert page.locator(TEXT).inner_text() == "".join(pieces)
    titles = page.locator(f"{SOURCES} .source-title").all_inner_texts()
    assert sorted(titles) == [
        'Quokka <img src=x onerror="window.__pwned = 1"> facts',
        "Quokka <script>window.__pwned = 1</script> facts",
    ]
    # Neither `javascript:` nor a protocol-relative `//host` URL becomes a link.
    expect(page.locator(f"{SOURCES} a")).to_have_count(0)
    expect(page.locator(f"{TEXT} a.cite")).to_have_count(2)

    # The permalink renders the same answer on the server: just as inert.
    page.goto(page.locator("[data-answer-permalink]").get_attribute("href") or "")
    expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    assert page.evaluate("window.__pwned") is None
    assert page.locator(f"{ANSWER} img, {ANSWER} script, {ANSWER} svg").count() == 0
    assert page.locator(TEXT).inner_text() == "".join(pieces)


def test_a_shared_link_opened_mid_stream_joins_the_stream(page: Page, browser_stub: StubOpenAIServer) -> None:
    pieces = ["Zebras [2]"] + [" graze"] * 15 + [" in grassland [1]."]
    browser_stub.enqueue(Reply(pieces=pieces, delay_s=0.12))
    ask(page, ZEBRA_QUESTION)
    # The model's [2] is the first source cited: it shows as [1] from the start.
    expect(page.locator(TEXT)).to_contain_text("Zebras [1]")
    permalink = page.locator("[data-answer-permalink]").get_attribute("href") or ""

    shared = page.context.new_page()
    shared.goto(permalink)
    expect(shared.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    assert shared.locator(TEXT).inner_text() == "Zebras [1]" + " graze" * 15 + " in grassland [2]."
    expect(shared.locator(SOURCES)).to_have_count(2)
    assert shared.locator(SOURCES).evaluate_all("items => items.map(li => li.dataset.number)") == ["1", "2"]


def test_without_javascript_the_form_lands_on_the_permalink(
    browser: Browser, browser_server: LiveServer, browser_stub: StubOpenAIServer
) -> None:
    browser_stub.reset()
    browser_stub.enqueue(Reply(pieces=["Zebras live in grassland [2]", " and savanna [4]."]))
    context = browser.new_context(base_url=browser_server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto("/")
        page.fill("textarea[name=question]", ZEBRA_QUESTION)
        page.click("button[type=submit]")
        # The permalink of the conversation the answer starts (docs/reference/page-hooks.md), at its turn.
        page.wait_for_url(re.compile(r"/conversations/[0-9a-f-]{36}/#turn-1$"))
        expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
        expect(page.locator(TEXT)).to_have_text("Zebras live in grassland [1] and savanna [2].")
        expect(page.locator(SOURCES)).to_have_count(2)
        expect(page.locator(f"{TEXT} a.cite")).to_have_count(2)
    finally:
        context.close()


def _sse(events: list[tuple[str, dict[str, object]]]) -> str:
    """A stream of Server-Sent Events as a server writes it: ids in order, no reconnection for an hour."""
    out = ["retry: 3600000\n\n"]
    for n, (name, data) in enumerate(events, start=1):
        out.append(f"event: {name}\nid: {n}\ndata: {json.dumps(data)}\n\n")
    return "".join(out)


def test_a_cite_event_out_of_order_is_dropped_and_said_on_the_console(
    page: Page, browser_stub: StubOpenAIServer
) -> None:
    # The page takes the k-th cited source only as number k (docs/reference/events.md). A stream that
    # breaks the rule, as a change to the numbering might: its number 2 comes first.
    refs = [{"number": n, "title": f"Source {n}", "url": f"/docs/s-{n}", "excerpt": ""} for n in (1, 2)]
    stream = _sse(
        [
            ("references", {"references": refs}),
            ("cite", {"number": 2, "original": 1, "reference": {**refs[0], "number": 2}}),
            ("cite", {"number": 1, "original": 2, "reference": {**refs[1], "number": 1}}),
            ("delta", {"text": "Zebras [2].", "display": "Zebras [1]."}),
        ]
    )
    page.route(
        re.compile(r".*/answers/[0-9a-f-]+/events/.*"),
        lambda route: route.fulfill(status=200, headers={"Content-Type": "text/event-stream"}, body=stream),
    )
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    browser_stub.enqueue(Reply(pieces=["Zebras [2]."]))
    ask(page, ZEBRA_QUESTION)

    expect(page.locator(TEXT)).to_have_text("Zebras [1].")
    expect(page.locator(SOURCES)).to_have_count(1)
    # The one in order is shown in its number; the other, dropped, is said on the console.
    assert page.locator(f"{SOURCES} .source-number").all_inner_texts() == ["[1]"]
    assert page.locator(f"{SOURCES} .source-title").all_inner_texts() == ["Source 2"]
    assert [e for e in errors if "cite event dropped" in e] == [
        "answer.js: a cite event dropped: expected number 1 with its reference, got "
        '{"number":2,"original":1,"reference":true}'
    ]
