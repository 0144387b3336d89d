"""The answer renderer before the Markdown renderer (paragraphs, line breaks, citation links): a baseline.

A verbatim copy of answers/rendering.py render_answer_html as it was, kept only to be measured against.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import nh3

from answers.citations import Marker, scan_markers

ALLOWED_TAGS = frozenset({"p", "br", "a"})
ALLOWED_ATTRIBUTES = {"a": {"href", "class"}}
ALLOWED_URL_SCHEMES = frozenset({"http", "https"})

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n+")


def source_anchor(number: int) -> str:
    """The id of a source's item in the Sources list (the target of its citation links)."""
    return f"source-{number}"


# DEL, backslash, and the bidi embedding, override and isolate controls.
_REFUSED_IN_URLS = frozenset("\x7f\\\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def link_url(url: str) -> str | None:
    """`url` when it may become a link (http, https, or site-relative); else None.

    The one rule for links, used by ingest (what is stored), the pages and admin.
    Site-relative means one leading slash: `//host` and `/\\host` are
    protocol-relative to a browser, so they are refused; so is any backslash
    or control character, which browsers rewrite or drop, and any bidi control
    (U+202A-U+202E, U+2066-U+2069), which makes a link read otherwise than it goes.
    """
    if url != url.strip() or any(ord(c) < 0x20 or c in _REFUSED_IN_URLS for c in url):
        return None
    if url.lower().startswith(("http://", "https://")):
        try:
            host = urlsplit(url).netloc
        except ValueError:
            return None
        return url if host else None
    if url.startswith("/") and not url.startswith("//"):
        return url
    return None


def _link_marker(members: list[int], reference_count: int) -> str | None:
    if not members or any(not 1 <= m <= reference_count for m in members):
        return None
    if len(members) == 1:
        n = members[0]
        return f'<a class="cite" href="#{source_anchor(n)}">[{n}]</a>'
    links = ", ".join(f'<a class="cite" href="#{source_anchor(n)}">{n}</a>' for n in members)
    return f"[{links}]"


def render_answer_html(text: str, *, reference_count: int, markers: Sequence[Marker] | None = None) -> str:
    """The final text as HTML paragraphs; markers within 1..reference_count link to `#source-N`.

    `markers` are the final text's markers as the trail recorded them
    (answers.citations.trail.final_markers); without a record (a text that was
    never finalized, or an answer stored before the record) the scanner finds them.
    Nothing from the text survives as markup: it is escaped before any tag is
    added, and nh3 removes anything outside the allow-list regardless.
    """
    normalized, moved = _normalize_newlines(text, scan_markers(text) if markers is None else markers)
    if not normalized.strip():
        return ""
    rendered = _render_paragraphs(normalized, moved, reference_count)
    return nh3.clean(
        rendered,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(attrs) for tag, attrs in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(ALLOWED_URL_SCHEMES),
        link_rel=None,
        strip_comments=True,
    )


def _normalize_newlines(text: str, markers: Sequence[Marker]) -> tuple[str, list[Marker]]:
    """`text` with CR and CRLF as LF and no line breaks at either end; `markers` moved to match.

    A marker holds no line break, so only the text between markers changes.
    """
    parts: list[str] = []
    moved: list[Marker] = []
    position = offset = 0
    for marker in markers:
        gap = _lf(text[position : marker.start])
        offset += len(gap)
        parts += (gap, text[marker.start : marker.end])
        moved.append(Marker(offset, offset + marker.end - marker.start, marker.members))
        offset += marker.end - marker.start
        position = marker.end
    parts.append(_lf(text[position:]))
    joined = "".join(parts)
    lead = len(joined) - len(joined.lstrip("\n"))
    return joined.strip("\n"), [Marker(m.start - lead, m.end - lead, m.members) for m in moved]


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _render_paragraphs(text: str, found: Sequence[Marker], reference_count: int) -> str:
    """Escape `text` and wrap each paragraph (blank-line separated) in <p>, linking markers.

    `found` are the text's markers, as the finalizer judged them; a marker never
    holds a line break, so it never straddles a paragraph break. Single newlines become <br>.
    """
    out: list[str] = []
    paragraph: list[str] = []
    position = 0
    breaks = [(m.start(), m.end()) for m in _PARAGRAPH_BREAK.finditer(text)]
    markers: list[tuple[int, int, str]] = []
    for marker in found:
        link = _link_marker(list(marker.members), reference_count)
        if link is not None:
            markers.append((marker.start, marker.end, link))
    marker_index = 0

    def emit_plain(segment: str) -> None:
        if segment:
            paragraph.append(html.escape(segment, quote=True).replace("\n", "<br>"))

    def close_paragraph() -> None:
        if paragraph:
            out.append("<p>" + "".join(paragraph) + "</p>")
            paragraph.clear()

    for break_start, break_end in [*breaks, (len(text), len(text))]:
        while marker_index < len(markers) and markers[marker_index][0] < break_start:
            start, end, link = markers[marker_index]
            emit_plain(text[position:start])
            paragraph.append(link)
            position = end
            marker_index += 1
        emit_plain(text[position:break_start])
        position = break_end
        close_paragraph()
    return "".join(out)
