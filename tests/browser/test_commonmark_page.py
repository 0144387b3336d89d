"""The citation core held against CommonMark in Chromium (issue 30): the page's own renderer.

The replies are the server-side property test's (tests/unit/citations/test_commonmark.py: the
strategy tests/fixtures/citation_texts.py markdown_replies, drawn with a fixed seed). Each goes
through the server's live display (answers.citations.LiveDisplay), cut into pieces, and the page
renders it as it does while the answer streams (AnswerMarkdown.render of the display so far, with
the number of sources cited so far, static/answers/answer.js) and the final text at `done`, with
the page's vendored markdown-it, its citation plugin and DOMPurify (static/answers/markdown.js).
On every rendering the three properties hold (tests/fixtures/commonmark.py): no marker shown as
plain text outside code and links; every line of code is a line of the raw reply; every source
cited so far (at `done`: every final reference, unless fallback) is linked from the text.

Thousands of renderings go to the page in a few batches, one page.evaluate each.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st
from playwright.sync_api import Page

from answers.citations import LiveDisplay, normalize_markers, strip_out_of_range_markers
from answers.citations.trail import compute_trail
from tests.fixtures.citation_texts import drawn, markdown_replies, split_at, stream_cuts
from tests.fixtures.commonmark import foreign_code_lines, linked_numbers, plain_marker

REPLIES = 2000
BATCH = 1500  # renderings per page.evaluate

RENDER = """(cases) => cases.map(([text, count]) => window.AnswerMarkdown.render(text, count))"""


@dataclass(frozen=True)
class Rendering:
    reply: str
    stage: str  # "done", or "stream" (the display so far after a piece)
    text: str  # what the page renders
    cited: int  # the reference count the page renders it with
    linked: frozenset[int]  # the numbers its citation links must point at
    sources: tuple[str, ...]  # the texts code may come from


def _renderings(reply: str, count: int, cuts: list[int]) -> list[Rendering]:
    trail = compute_trail(reply, count)
    references = count if trail.fallback else sum(1 for s in trail.sources if s.final_number is not None)
    stripped = strip_out_of_range_markers(normalize_markers(reply).text, count).text
    sources = (reply, stripped)
    out = [
        Rendering(
            reply,
            "done",
            trail.final_text,
            references,
            frozenset() if trail.fallback else frozenset(range(1, references + 1)),
            sources,
        )
    ]
    live = LiveDisplay(count)
    display = ""
    cited = 0
    for piece in [*split_at(reply, cuts), None]:
        step = live.feed(piece) if piece is not None else live.close()
        if not step.display:
            continue
        display += step.display
        cited += len(step.cited)  # each `cite` event comes before its number shows
        out.append(Rendering(reply, "stream", display, cited, frozenset(range(1, cited + 1)), sources))
    assert display == trail.final_text  # (the server's own property test holds this too)
    return out


def _failures(rendering: Rendering, html: str) -> list[str]:
    found = []
    marker = plain_marker(html)
    if marker is not None:
        found.append(f"{marker} shown as plain text")
    foreign = foreign_code_lines(html, rendering.sources)
    if foreign:
        found.append(f"code not in the reply: {foreign}")
    if linked_numbers(html) != rendering.linked:
        found.append(f"links to {sorted(linked_numbers(html))}, expected {sorted(rendering.linked)}")
    return found


def test_the_pages_renderer_holds_the_properties_streamed_and_at_done(page: Page) -> None:
    page.goto("/")
    page.wait_for_function("() => window.AnswerMarkdown !== undefined")
    cases = drawn(st.tuples(markdown_replies, st.integers(min_value=0, max_value=4), stream_cuts), REPLIES)
    renderings = [r for reply, count, cuts in cases for r in _renderings(reply, count, cuts)]
    assert len({r.reply for r in renderings}) >= REPLIES * 3 // 4  # thousands of distinct replies
    assert sum(r.stage == "stream" for r in renderings) >= REPLIES  # and their streams
    failures = []
    for at in range(0, len(renderings), BATCH):
        batch = renderings[at : at + BATCH]
        htmls: list[str] = page.evaluate(RENDER, [[r.text, r.cited] for r in batch])
        for rendering, html in zip(batch, htmls, strict=True):
            for failure in _failures(rendering, html):
                failures.append((rendering.stage, failure, rendering.reply, rendering.text, html))
    assert failures == [], f"{len(failures)} failures; the first: {failures[:3]}"
