"""One rendering, two places: the page's own Markdown code in Chromium gives the server's DOM.

The page's vendored markdown-it and DOMPurify with its citation plugin
(static/answers/markdown.js), loaded from the live server as the ask page loads them, must
render (1) every case of the shared table tests/fixtures/markdown_cases.json to the HTML the
table gives (pytest runs the same table against the server), and (2) every answer of the parity
corpus (tests/fixtures/markdown.py: models' answers finalized by the real trail) to the same
sanitized DOM as the server's `html` (answers/rendering.py, with the trail's recorded markers).
DOMs are compared as the browser parses both strings.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

from answers.rendering import ALLOWED_ATTRIBUTES, ALLOWED_TAGS, clean_html, render_answer_html
from tests.fixtures.markdown import MARKDOWN_CASES, PARITY_ANSWERS

# For each [markdown, reference count, expected HTML]: the page's rendering and the expected one,
# both as the browser parses them (a template's innerHTML), where they differ.
COMPARE = """(cases) => {
  const dom = (html) => {
    const t = document.createElement("template");
    t.innerHTML = html;
    return t.innerHTML;
  };
  const out = [];
  for (const [name, markdown, count, expected] of cases) {
    const rendered = window.AnswerMarkdown.render(markdown, count);
    if (dom(rendered) !== dom(expected)) {
      out.push({name: name, page: dom(rendered), server: dom(expected)});
    }
  }
  return out;
}"""


def _ready(page: Page) -> Page:
    page.goto("/")
    page.wait_for_function("() => window.AnswerMarkdown !== undefined")
    return page


def test_the_pages_renderer_gives_the_shared_tables_html(page: Page) -> None:
    _ready(page)
    cases = [[c["name"], c["markdown"], c["references"], c["html"]] for c in MARKDOWN_CASES]
    assert len(cases) >= 40
    differences: list[dict[str, Any]] = page.evaluate(COMPARE, cases)
    assert differences == []


def test_the_page_and_the_server_render_every_parity_answer_to_the_same_dom(page: Page) -> None:
    _ready(page)
    assert len(PARITY_ANSWERS) >= 30
    cases = [
        [
            answer.name,
            answer.text,
            answer.reference_count,
            render_answer_html(answer.text, reference_count=answer.reference_count, markers=answer.markers),
        ]
        for answer in PARITY_ANSWERS
    ]
    differences: list[dict[str, Any]] = page.evaluate(COMPARE, cases)
    assert differences == []
    # The corpus is no row of empty paragraphs: it exercises what it claims to.
    html = "".join(case[3] for case in cases)
    for needle in (
        "<table>",
        "<ol>",
        "<ul>",
        "<pre><code",
        "<code>",
        'class="cite"',
        "image-link",
        "<blockquote>",
    ):
        assert needle in html


def test_the_page_and_the_server_keep_the_same_allow_list(page: Page) -> None:
    _ready(page)
    allowed = page.evaluate(
        "() => [window.AnswerMarkdown.ALLOWED_TAGS, window.AnswerMarkdown.ALLOWED_ATTRIBUTES]"
    )
    assert set(allowed[0]) == ALLOWED_TAGS
    assert {tag: set(names) for tag, names in allowed[1].items()} == {
        tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()
    }


# HTML the plugin never makes, for the two second guards (nh3 on the server, DOMPurify on the page).
HOSTILE_HTML = [
    '<p><img src="https://example.org/p.png" onerror="x()">after</p>',
    '<p><a href="javascript:alert(1)" onclick="x()">x</a> <a href=" JaVaScRiPt:alert(1)">y</a></p>',
    '<table><tr><td style="color:red" class="align-right"><script>x()</script>a</td></tr></table>',
    '<p><svg onload="x()"><circle/></svg><iframe src="/"></iframe><b>bold</b><span title="t">s</span></p>',
    '<ol start="3" reversed><li data-x="1" id="source-9">i</li></ol><a href="/docs" target="_blank">d</a>',
    '<pre><code class="language-python" style="x">[1]</code></pre><form><input name="q"></form>',
    '<a class="cite" href="#source-1" rel="x">[1]</a><a href="data:text/html,x">data</a>',
    # Generic attributes (nh3 kept `title` and `lang` on any tag by default; DOMPurify never did).
    '<p title="t" lang="en" dir="rtl"><a href="https://example.org/" title="t" lang="fr">ok</a></p>',
]


def test_the_two_sanitizers_keep_the_same_of_html_the_plugin_never_makes(page: Page) -> None:
    _ready(page)
    server = [clean_html(html) for html in HOSTILE_HTML]
    differences = page.evaluate(
        """([hostile, server]) => {
          const dom = (html) => {
    const t = document.createElement("template");
    t.innerHTML = html;
    return t.innerHTML;
  };
          return hostile.map((html, i) => [dom(window.AnswerMarkdown.sanitize(html)), dom(server[i])])
            .filter(([a, b]) => a !== b);
        }""",
        [HOSTILE_HTML, server],
    )
    assert differences == []
    kept = "".join(server)
    for gone in (
        "<img",
        "<script",
        "<svg",
        "<iframe",
        "<form",
        "<input",
        "onclick",
        "onerror",
        "style=",
        "javascript",
    ):
        assert gone not in kept.lower()
    assert '<a class="cite" href="#source-1">[1]</a>' in kept
    assert '<ol start="3">' in kept
    assert "title=" not in kept
    assert "lang=" not in kept
