"""Live renumbering in a real browser: a number once shown beside a source or in the text never changes.

A MutationObserver, installed before the page's own script runs, records the
page after every change: each cited source's number, the answer text, its
citation links and the retrieved sources not cited yet. The scripted reply
cites [3] and [5] of five retrieved sources, so the model's numbers differ
from the final ones ([1] and [2]): the page must never show the model's.

The tests are parametrized by provider stub (PROVIDERS): each entry starts a
live server whose provider is a stub and scripts a reply as text pieces.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.fixtures.anthropic_stub import Block, Cite, Message, StubAnthropicServer, anthropic_env
from tests.fixtures.browser_pages import fresh_page
from tests.fixtures.live_display import RECORDER, retrieved_titles
from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer, SeedDocument, corpus, running_server
from tests.fixtures.providers import Reply, StubOpenAIServer

ANSWER = "[data-answer]"
TEXT = "[data-answer-text]"
SOURCES = "[data-answer-sources] > li"
RETRIEVED = "[data-answer-retrieved] > li"

# A fifth zebra document, so that the zebra question retrieves five sources.
DOCUMENTS = [
    *corpus(),
    SeedDocument(
        key="https://example.org/zebra-5",
        title="Zebra habitat guide 5",
        url="https://example.org/zebra-5",
        body="Zebra habitat guide part 5. Zebras live in grassland habitat and savanna; note 5.",
    ),
]
FIVE_SOURCES = {"ANSWERS_MAX_SOURCES": "5"}


@dataclass(frozen=True)
class Scripted:
    """A live server whose provider is a stub, and how to script that stub's next reply."""

    server: LiveServer
    reply: Callable[[list[str], float], None]
    reset: Callable[[], None]
    # The final text this provider gives for a script's final text in `[n]` form: Anthropic
    # writes one marker per cited block, so adjacent markers come apart (`[1][2]` -> `[1] [2]`).
    final: Callable[[str], str] = str


def _openai(request: pytest.FixtureRequest) -> Iterator[Scripted]:
    stub = request.getfixturevalue("stub")
    assert isinstance(stub, StubOpenAIServer)

    def reply(pieces: list[str], delay: float) -> None:
        stub.enqueue(Reply(pieces=pieces, delay_s=delay))

    with running_server(openai_base_url=stub.base_url, documents=DOCUMENTS, extra_env=FIVE_SOURCES) as live:
        yield Scripted(live, reply, stub.reset)


_MARKERS = re.compile(r"((?:\[\d+\])+)")


def anthropic_blocks(pieces: list[str]) -> list[Block]:
    """The same reply as native citations: the text before each marker run is a block citing
    its first number; each further number of the run is an empty block citing it."""
    parts = _MARKERS.split("".join(pieces))
    blocks: list[Block] = []
    for text, run in zip(parts[0::2], [*parts[1::2], ""], strict=True):
        numbers = [int(n) for n in re.findall(r"\d+", run)]
        if not numbers:
            if text:
                blocks.append(Block(text))
            continue
        blocks.append(Block(text.rstrip(" "), Cite(numbers[0] - 1)))
        blocks.extend(Block(Cite(n - 1)) for n in numbers[1:])
    return blocks


def _anthropic(request: pytest.FixtureRequest) -> Iterator[Scripted]:
    with StubAnthropicServer() as stub:

        def reply(pieces: list[str], delay: float) -> None:
            stub.enqueue(Message(blocks=anthropic_blocks(pieces), delay_s=delay))

        env = {**anthropic_env(stub), **FIVE_SOURCES}
        with running_server(openai_base_url=stub.base_url, documents=DOCUMENTS, extra_env=env) as live:
            yield Scripted(live, reply, stub.reset, final=lambda text: text.replace("][", "] ["))


# Each provider stub the page is checked against.
PROVIDERS: dict[str, Callable[[pytest.FixtureRequest], Iterator[Scripted]]] = {
    "openai": _openai,
    "anthropic": _anthropic,
}


@pytest.fixture(scope="module", params=sorted(PROVIDERS))
def scripted(request: pytest.FixtureRequest, chromium_path: Any) -> Iterator[Scripted]:
    yield from PROVIDERS[request.param](request)


@pytest.fixture
def watched(browser: Browser, scripted: Scripted) -> Iterator[Page]:
    """A fresh page on the provider's server with the recorder installed; console errors fail the test."""
    scripted.reset()
    with fresh_page(browser, scripted.server.url, init_script=RECORDER) as page:
        yield page


def _ask(page: Page) -> None:
    page.goto("/")
    page.fill("textarea[name=question]", ZEBRA_QUESTION)
    page.click("button[type=submit]")


def test_no_number_shown_beside_a_source_or_in_the_text_ever_changes(
    watched: Page, scripted: Scripted
) -> None:
    pieces = ["Zebras graze [3", "] in grassland", " and savanna [5]", " near water [3][5]", "."]
    scripted.reply(pieces, 0.3)
    _ask(watched)

    answer = watched.locator(ANSWER)
    # What the page showed while streaming is read from the recorder's snapshots below (each
    # event is handled in a task of its own, so each state is recorded however fast they come).
    expect(answer).to_have_attribute("data-answer-status", "done")
    final_text = scripted.final("Zebras graze [1] in grassland and savanna [2] near water [1][2].")
    expect(watched.locator(TEXT)).to_have_text(final_text)
    expect(watched.locator(RETRIEVED)).to_have_count(0)
    snapshots: list[dict[str, Any]] = watched.evaluate("window.__snapshots")
    streaming = [s for s in snapshots if s["status"] == "streaming"]
    titles = [s["title"] for s in snapshots[-1]["sources"]]
    retrieved = retrieved_titles(watched, scripted.server)
    assert len(retrieved) == 5
    assert titles == [retrieved[2], retrieved[4]], "the model's [3] and [5], numbered 1 and 2"

    # Every number ever shown beside a source is the one it ends with, from the first moment.
    shown: dict[str, set[tuple[str | None, str | None, str]]] = {}
    for snapshot in snapshots:
        for source in snapshot["sources"]:
            shown.setdefault(source["title"], set()).add((source["number"], source["label"], source["id"]))
    assert shown == {retrieved[2]: {("1", "[1]", "source-1")}, retrieved[4]: {("2", "[2]", "source-2")}}
    # While streaming, the cited ones were listed in their final numbers and the rest apart, unnumbered.
    assert any(len(s["sources"]) == 1 and len(s["retrieved"]) == 4 for s in streaming)
    assert any(len(s["sources"]) == 2 and len(s["retrieved"]) == 3 for s in streaming)
    for snapshot in streaming:
        assert not any(r["numbered"] for r in snapshot["retrieved"])
        cited = {s["title"] for s in snapshot["sources"]}
        assert cited.isdisjoint(r["title"] for r in snapshot["retrieved"])
        assert len(cited) + len(snapshot["retrieved"]) in (0, 5)

    # The text never showed a raw model number, and every marker was a link from the moment it appeared.
    for snapshot in snapshots:
        assert not re.search(r"\[\s*[345]", snapshot["text"]), snapshot["text"]
        # (The text is rendered as Markdown: a paragraph is followed by a line break node.)
        assert final_text.startswith(snapshot["text"].rstrip("\n")) or snapshot["status"] != "streaming"
        markers = re.findall(r"\[\d+\]", snapshot["text"])
        assert [text for text, _ in snapshot["links"]] == markers, snapshot
        assert all(href == f"#source-{text[1:-1]}" for text, href in snapshot["links"])
    assert any(s["text"].startswith("Zebras graze [1]") for s in streaming), "[1] showed while streaming"


def test_a_fallback_answer_lists_every_source_untouched_at_done(watched: Page, scripted: Scripted) -> None:
    scripted.reply(["Zebras graze ", "in grassland [9]."], 0.2)
    _ask(watched)

    expect(watched.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
    expect(watched.locator(TEXT)).to_have_text("Zebras graze in grassland.")
    expect(watched.locator(SOURCES)).to_have_count(5)
    expect(watched.locator(RETRIEVED)).to_have_count(0)
    assert watched.locator(SOURCES).evaluate_all("items => items.map(li => li.dataset.number)") == [
        "1",
        "2",
        "3",
        "4",
        "5",
    ]
    titles = watched.locator(f"{SOURCES} .source-title").all_inner_texts()
    assert titles == retrieved_titles(watched, scripted.server)
    snapshots: list[dict[str, Any]] = watched.evaluate("window.__snapshots")
    # Nothing was cited while it streamed: no number was shown before `done`.
    assert all(not s["sources"] for s in snapshots if s["status"] == "streaming")
    assert any(len(s["retrieved"]) == 5 for s in snapshots if s["status"] == "streaming")
