"""The server's answer rendering (answers/rendering.py) against the table both renderers share.

tests/fixtures/markdown_cases.json holds Markdown inputs and the sanitized HTML they must give;
tests/browser/test_markdown_parity.py runs the same table through the page's own code.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import markdown_it
import pytest

from answers.citations import Marker, scan_markers
from answers.rendering import (
    ALLOWED_ATTRIBUTES,
    ALLOWED_TAGS,
    clean_html,
    markdown_without_html,
    render_answer_html,
)
from tests.fixtures.markdown import MARKDOWN_CASES, PARITY_ANSWERS


@pytest.mark.parametrize("case", MARKDOWN_CASES, ids=[case["name"] for case in MARKDOWN_CASES])
def test_server_rendering_gives_the_shared_tables_html(case: dict[str, Any]) -> None:
    assert render_answer_html(case["markdown"], reference_count=case["references"]) == case["html"]


def test_the_shared_table_covers_markers_in_code_links_and_hostile_markup() -> None:
    html = "".join(case["html"] for case in MARKDOWN_CASES)
    for needle in (
        'class="cite"',
        "<pre><code",
        "<code>",
        "<table>",
        "<ul>",
        "<ol",
        "<blockquote>",
        "image-link",
    ):
        assert needle in html
    assert "<img" not in html
    assert "<script" not in html
    assert 'href="javascript' not in html


@pytest.mark.parametrize("answer", PARITY_ANSWERS, ids=[a.name for a in PARITY_ANSWERS])
def test_every_marker_in_running_text_links_and_nothing_else_does(answer: Any) -> None:
    """Only cited numbers link, the scanner and the trail agree, and only allowed markup comes out."""
    rendered = render_answer_html(answer.text, reference_count=answer.reference_count, markers=answer.markers)
    links = re.findall(r'<a class="cite" href="#source-(\d+)">', rendered)
    assert all(1 <= int(n) <= answer.reference_count for n in links)
    # Without the record the scanner finds the same markers, so the same HTML comes out.
    assert [(m.start, m.end, m.members) for m in scan_markers(answer.text)] == [
        (m.start, m.end, m.members) for m in answer.markers
    ]
    assert render_answer_html(answer.text, reference_count=answer.reference_count) == rendered
    tags = set(re.findall(r"<([a-z0-9]+)", rendered))
    assert tags <= ALLOWED_TAGS
    for tag, attributes in re.findall(r"<([a-z0-9]+)((?: [a-z-]+=\"[^\"]*\")*)>", rendered):
        assert set(re.findall(r" ([a-z-]+)=", attributes)) <= ALLOWED_ATTRIBUTES.get(tag, frozenset())


def test_the_record_decides_which_markers_link() -> None:
    assert render_answer_html("A [1] and [1].", reference_count=1, markers=[]) == "<p>A [1] and [1].</p>\n"
    # ... unless it does not fit the text (a record of another text): the scanner decides then.
    assert render_answer_html("A [1].", reference_count=1, markers=[Marker(0, 3, (1,))]) == (
        '<p>A <a class="cite" href="#source-1">[1]</a>.</p>\n'
    )


def test_a_python_answer_renders_its_list_table_and_code() -> None:
    text = (
        "Steps [1]:\n\n- open\n- read [2]\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "```python\nprint(xs[1])  # [1]\n```\n"
    )
    rendered = render_answer_html(text, reference_count=2)
    assert '<li>read <a class="cite" href="#source-2">[2]</a></li>' in rendered
    assert "<td>1</td>" in rendered
    assert '<pre><code class="language-python">print(xs[1])  # [1]\n</code></pre>' in rendered


def test_the_demo_answers_emphasis_is_emphasis() -> None:
    assert render_answer_html("A *context manager* [1].", reference_count=1) == (
        '<p>A <em>context manager</em> <a class="cite" href="#source-1">[1]</a>.</p>\n'
    )


def test_the_page_vendors_the_markdown_it_that_markdown_it_py_ports() -> None:
    """Parity rests on one parser in two languages: the vendored files are the Makefile's pins, and
    the markdown-it pin is the version markdown-it-py ports (its port.yaml)."""
    root = Path(__file__).resolve().parents[2]
    pins = dict(
        re.findall(
            r"^(MARKDOWN_IT_VERSION|DOMPURIFY_VERSION) := (\S+)$", (root / "Makefile").read_text(), re.M
        )
    )
    vendored_md = (root / "answers/static/vendor/markdown-it/markdown-it.min.js").read_text()[:200]
    vendored_purify = (root / "answers/static/vendor/dompurify/purify.min.js").read_text()[:200]
    assert f"markdown-it {pins['MARKDOWN_IT_VERSION']} " in vendored_md
    assert f"DOMPurify {pins['DOMPURIFY_VERSION']} " in vendored_purify
    port = (Path(markdown_it.__file__).parent / "port.yaml").read_text()
    ported = re.search(r"package: markdown-it/markdown-it\n\s+version: (\S+)", port)
    assert ported is not None
    assert ported[1] == pins["MARKDOWN_IT_VERSION"]
    for folder in ("markdown-it", "dompurify"):
        assert (root / "answers/static/vendor" / folder / "LICENSE").exists()
    # The Makefile's two patches: markdown-it-py's is_code_block (every 4-space guard goes through
    # it), and its backtick runs read from the whole text once (no scan records them any more).
    whole = (root / "answers/static/vendor/markdown-it/markdown-it.min.js").read_text()
    assert ".prototype.isCodeBlock=function" in whole
    assert "t.backticks[n]=u" not in whole
    assert "(t.backticks=function(s){" in whole
    assert (
        re.search(r"sCount\[\w\]-\w\.blkIndent>=4", whole.replace("this.sCount[t]-this.blkIndent>=4", ""))
        is None
    )


@pytest.mark.parametrize(
    "text",
    [
        '[ok](https://example.org/ "t\\" onmouseover=alert(1) x=\\"")',
        "[ok](https://example.org/ 'a title')",
        '[ok](/docs "title")',
    ],
)
def test_a_links_title_is_not_kept_as_the_pages_sanitizer_drops_it(text: str) -> None:
    html = render_answer_html(text, reference_count=0)

    assert "title=" not in html
    assert "onmouseover" not in html.split(">", 2)[1]  # not an attribute (the text may say it)
    assert re.search(r'<a href="[^"]+">ok</a>', html), html


def test_no_tag_keeps_an_attribute_outside_the_allow_list() -> None:
    html = clean_html('<p title="t" lang="en"><em lang="fr" title="x">e</em><code lang="py">c</code></p>')

    assert html == "<p><em>e</em><code>c</code></p>"


def _raw_html(text: str) -> list[str]:
    """The raw HTML a CommonMark renderer that lets it through finds in `text`."""
    md = markdown_it.MarkdownIt("commonmark", {"html": True})
    found = []
    for token in md.parse(text):
        if token.type == "html_block":
            found.append(token.content)
        for child in token.children or ():
            if child.type == "html_inline":
                found.append(child.content)
    return found


@pytest.mark.parametrize("case", MARKDOWN_CASES, ids=[case["name"] for case in MARKDOWN_CASES])
def test_markdown_without_html_leaves_no_raw_html_for_any_renderer(case: dict[str, Any]) -> None:
    assert _raw_html(markdown_without_html(case["markdown"])) == []


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("a <b>c</b>", "a \\<b>c\\</b>"),
        ("<!-- x --> <?php ?> <!DOCTYPE html>", "\\<!-- x --> \\<?php ?> \\<!DOCTYPE html>"),
        ("`<b>` and\n```\n<i>\n```", "`<b>` and\n```\n<i>\n```"),  # code as written
        ("\\<b> \\\\<i>", "\\<b> \\\\\\<i>"),  # escaped once already: kept; an escaped backslash: not
        ("<https://x.org/> <a@b.org> 1 < 2 <3", "<https://x.org/> <a@b.org> 1 < 2 <3"),
    ],
)
def test_markdown_without_html_escapes_only_what_would_open_raw_html(text: str, written: str) -> None:
    assert markdown_without_html(text) == written
