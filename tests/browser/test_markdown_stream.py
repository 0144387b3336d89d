"""A model's Markdown answer on the ask page: rendered as Markdown while it streams and after `done`.

The stub model (tests/fixtures/providers.py) answers with a list, a table and a fenced Python
block holding a `[1]` of its own. A MutationObserver, installed before the page's script runs,
records the answer's HTML after every change, so what the page showed while streaming is read
afterwards however fast the pieces came.
"""

from __future__ import annotations

from typing import Any

from bs4 import BeautifulSoup
from playwright.sync_api import Browser, expect

from tests.fixtures.browser_pages import fresh_page
from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer
from tests.fixtures.providers import Reply, StubOpenAIServer

ANSWER = "[data-answer]"
TEXT = "[data-answer-text]"

PIECES = [
    "Zebras live in **grassland** [3].\n\n",
    "Where they graze:\n\n- savanna [3]\n",
    "- open woodland [1]\n  - near water\n\n",
    "| habitat | share |\n|:--|--:|\n",
    "| grassland | 60% [1] |\n| woodland | 40% |\n\n",
    "```python\nhabitats = ['grassland', 'savanna']\n",
    "print(habitats[1])  # [1]\n",
    "```\n\nThat is all [1].",
]
CODE = "habitats = ['grassland', 'savanna']\nprint(habitats[1])  # [1]\n"

RECORDER = """
(() => {
  window.__snapshots = [];
  const take = () => {
    const answer = document.querySelector("[data-answer]");
    const text = answer && answer.querySelector("[data-answer-text]");
    if (text) {
      window.__snapshots.push({status: answer.dataset.answerStatus, html: text.innerHTML});
    }
  };
  new MutationObserver(take).observe(document, {subtree: true, childList: true, attributes: true,
                                                characterData: true});
})();
"""


def _cites(node: Any) -> list[tuple[str, str]]:
    return [(a.get_text(), a["href"]) for a in node.select("a.cite")]


def test_a_markdown_answer_renders_as_such_while_streaming_and_after_done(
    browser: Browser, browser_server: LiveServer, browser_stub: StubOpenAIServer
) -> None:
    browser_stub.reset()
    browser_stub.enqueue(Reply(pieces=PIECES, delay_s=0.4))
    with fresh_page(browser, browser_server.url, init_script=RECORDER) as page:
        page.goto("/")
        page.fill("textarea[name=question]", ZEBRA_QUESTION)
        page.click("button[type=submit]")
        # The reader selects the first sentence while the answer is still being written.
        page.wait_for_function(
            """() => {
              const p = document.querySelector("[data-answer-text] > p");
              if (!p || !p.querySelector("a.cite")) { return false; }
              const range = document.createRange();
              range.selectNodeContents(p);
              getSelection().removeAllRanges();
              getSelection().addRange(range);
              return true;
            }"""
        )
        expect(page.locator(ANSWER)).to_have_attribute("data-answer-status", "done")
        snapshots: list[dict[str, str]] = page.evaluate("window.__snapshots")
        done_html = page.locator(TEXT).inner_html()
        selected = page.evaluate("() => getSelection().toString()")
        final_text = page.evaluate(
            """async () => {
              const id = document.querySelector("[data-answer]").dataset.answerId;
              return (await (await fetch(`/api/answers/${id}/`)).json()).text;
            }"""
        )
        # The page's own rendering of the final text is the DOM the server's `html` gave.
        page_rendering = page.evaluate(
            """(text) => {
              const t = document.createElement("template");
              t.innerHTML = window.AnswerMarkdown.render(text, 2);
              return t.innerHTML;
            }""",
            final_text,
        )
        permalink = page.locator("[data-answer-permalink]").get_attribute("href") or ""
        page.goto(permalink)
        permalink_html = page.locator(TEXT).inner_html()

    streaming = [BeautifulSoup(s["html"], "html.parser") for s in snapshots if s["status"] == "streaming"]
    # While streaming: the list, with its citation linked from the moment it showed ...
    assert any(
        [li.get_text() for li in dom.select("ul > li")][:1] == ["savanna [1]"]
        and _cites(dom.select_one("ul > li")) == [("[1]", "#source-1")]
        for dom in streaming
    )
    assert any(dom.select_one("ul > li > ul > li") is not None for dom in streaming), "the nested list"
    # ... the table, its cells' alignment as classes ...
    assert any(
        [td.get_text() for td in dom.select("table td")][:2] == ["grassland", "60% [2]"]
        and _cites(dom.select_one("table")) == [("[2]", "#source-2")]
        and dom.select_one("td.align-right") is not None
        for dom in streaming
    )
    # ... and the fenced block as code while still open (the last thing shown, not yet closed).
    open_fences = [
        dom
        for dom in streaming
        if dom.select_one("pre > code.language-python") and "That is all" not in dom.get_text()
    ]
    assert open_fences, "an unfinished fence showed as code"
    assert any(
        dom.select_one("pre > code").get_text() == "habitats = ['grassland', 'savanna']\n"
        for dom in open_fences
    )
    for dom in streaming:
        for code in dom.select("pre, code"):
            assert code.select("a") == [], "nothing inside code is linked"
        assert "**" not in dom.get_text(), "Markdown is never shown raw"
        assert "```" not in dom.get_text()

    # After done: the same, the server's html, and the page's rendering of the final text agree.
    done = BeautifulSoup(done_html, "html.parser")
    assert done.select_one("strong").get_text() == "grassland"
    assert [li.get_text(" ", strip=True) for li in done.select("ul > li")][:1] == ["savanna [1]"]
    assert done.select_one("pre > code.language-python").get_text() == CODE
    assert _cites(done) == [
        ("[1]", "#source-1"),
        ("[1]", "#source-1"),
        ("[2]", "#source-2"),
        ("[2]", "#source-2"),
        ("[2]", "#source-2"),
    ]
    assert done_html == page_rendering
    assert permalink_html.strip() == done_html.strip()
    # The reader's selection outlived every render and the swap at done.
    assert selected.strip() == "Zebras live in grassland [1]."
