"""Server-side rendering of an answer's final text: Markdown to sanitized HTML with citation links.

Used by the `done` event's `html`, the permalink page and admin. The text is
Markdown (CommonMark and GFM tables, parsed by markdown-it-py) with raw HTML
escaped, images shown as links (never loaded), links only where `link_url`
allows them, and no indented code blocks or link reference definitions (the
citation grammar knows neither). Citation markers are found where
docs/citations.md finds them (the trail's record, or the same scanner) and
become links to the Sources list (`#source-N`) unless Markdown puts them in
code, a link or an image. nh3 then cleans the result against the allow-list
below as a second guard.

The page renders the streaming text the same way with markdown-it (the
JavaScript original, answers/static/vendor/) and DOMPurify, in answers/static/answers/markdown.js:
its options, plugin and allow-list mirror this module's, and
tests/fixtures/markdown_cases.json pins both to the same output.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from urllib.parse import urlsplit

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from answers.citations import Marker, scan_markers
from answers.citations.code import code_regions
from answers.citations.markdown import markdown_parser
from answers.citations.scan import all_in_range

ALLOWED_TAGS = frozenset(
    {
        "p", "br", "a", "em", "strong", "code", "pre", "blockquote", "hr",
        "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
        "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": frozenset({"href", "class"}),
    "code": frozenset({"class"}),  # language-NAME of a fenced block
    "ol": frozenset({"start"}),
    "th": frozenset({"class"}),  # align-left / align-center / align-right
    "td": frozenset({"class"}),
}
ALLOWED_URL_SCHEMES = frozenset({"http", "https"})


def source_anchor(number: int, turn: int = 1) -> str:
    """The id of a source's item in the Sources list (the target of its citation links).

    Unique per turn of a conversation, whose turns share one page: turn 1 keeps `source-N` (as
    a single answer's page), a later turn T is `turn-T-source-N` (static/answers/markdown.js
    sourceAnchor makes the same).
    """
    return f"source-{number}" if turn <= 1 else f"turn-{turn}-source-{number}"


# DEL, backslash, and the bidi embedding, override and isolate controls.
_REFUSED_IN_URLS = frozenset("\x7f\\\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def link_url(url: str) -> str | None:
    """`url` when it may become a link (http, https, or site-relative); else None.

    The one rule for links, used by ingest (what is stored), the pages, admin and
    the links of an answer's Markdown (answers/static/answers/markdown.js applies the same).
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


# --- The citation plugin -----------------------------------------------------------
#
# Before parsing, each marker the grammar finds is replaced by a placeholder that
# Markdown reads as it reads the marker ("[" + sentinel + index + sentinel + "]": the
# same brackets, so emphasis and link syntax around it parse alike), the sentinel
# being a private-use character the text does not hold. After parsing, a
# placeholder in running text becomes the citation link; anywhere else (code, a
# link's text or address, an image) it is put back as the marker's text.


@dataclass(frozen=True, slots=True)
class _Placeholders:
    sentinel: str
    written: list[str]  # each marker's text, by index
    links: list[str | None]  # each marker's link HTML; None when it links nothing
    pattern: re.Pattern[str]

    def restore(self, text: str) -> str:
        if self.sentinel not in text:
            return text
        return self.pattern.sub(lambda m: self.written[int(m[1])], text)


_CURRENT: ContextVar[_Placeholders | None] = ContextVar("answers_rendering_placeholders", default=None)


def _sentinel(text: str) -> str:
    """The first private-use character (U+E000 on) that `text` does not hold."""
    code = 0xE000
    while chr(code) in text:
        code += 1
    return chr(code)


def _cite_html(members: Sequence[int], reference_count: int, turn: int = 1) -> str | None:
    """A marker's links: `[n]` one link, `[n, m]` "[" + a link per member + "]"; None unless all cite."""
    if not members or not all_in_range(members, reference_count):
        return None
    if len(members) == 1:
        return f'<a class="cite" href="#{source_anchor(members[0], turn)}">[{members[0]}]</a>'
    links = ", ".join(f'<a class="cite" href="#{source_anchor(n, turn)}">{n}</a>' for n in members)
    return f"[{links}]"


def _mark(state: StateCore) -> None:
    """Core rule, before `normalize`: markers to placeholders (env: reference_count, markers)."""
    src = state.src
    markers = state.env.get("markers")
    found: Sequence[Marker] = markers if markers is not None and _fits(src, markers) else scan_markers(src)
    if not found:
        _CURRENT.set(None)
        return
    sentinel = _sentinel(src)
    count = int(state.env.get("reference_count", 0))
    turn = int(state.env.get("turn", 1))
    parts: list[str] = []
    position = 0
    for index, marker in enumerate(found):
        parts += (src[position : marker.start], f"[{sentinel}{index}{sentinel}]")
        position = marker.end
    parts.append(src[position:])
    state.src = "".join(parts)
    _CURRENT.set(
        _Placeholders(
            sentinel,
            [src[m.start : m.end] for m in found],
            [_cite_html(m.members, count, turn) for m in found],
            re.compile(re.escape(f"[{sentinel}") + r"([0-9]+)" + re.escape(f"{sentinel}]")),
        )
    )


def _fits(text: str, markers: Sequence[Marker]) -> bool:
    """Whether a recorded list of markers spans brackets of `text`, in order (else the scanner decides)."""
    end = 0
    for marker in markers:
        if (
            marker.start < end
            or text[marker.start : marker.start + 1] != "["
            or text[marker.end - 1 : marker.end] != "]"
        ):
            return False
        end = marker.end
    return True


_ALIGN = re.compile(r"text-align:(left|center|right)")


def _link(state: StateCore) -> None:
    """Core rule, last: placeholders in running text to citation links, anywhere else back to text.

    Also turns a table cell's alignment (a style attribute, which the page's
    CSP would refuse) into a class, and a link with no address (`[x]()`) into its text.
    """
    current = _CURRENT.get()
    for token in state.tokens:
        if token.type == "inline":
            marked = current is not None and current.sentinel in token.content
            if token.children and (marked or "](" in token.content):
                token.children = _link_children(token.children, current)
            if marked:
                token.content = current.restore(token.content)  # type: ignore[union-attr]
            continue
        if token.type in ("th_open", "td_open") and "style" in token.attrs:
            align = _ALIGN.fullmatch(str(token.attrs.pop("style")))
            if align:
                token.attrs["class"] = f"align-{align[1]}"
        if current is not None and (current.sentinel in token.content or current.sentinel in token.info):
            _restore(token, current)


def _link_children(children: list[Token], current: _Placeholders | None) -> list[Token]:
    """An inline token's children with placeholders linked (or put back) and `[x]()` as its text."""
    out: list[Token] = []
    in_link = empty_link = False
    for child in children:
        if child.type == "link_open":
            in_link = True  # links do not nest in Markdown
            empty_link = not child.attrs.get("href")
            if empty_link:
                continue
        elif child.type == "link_close":
            in_link = False
            if empty_link:
                continue
        if current is None or (
            current.sentinel not in child.content and not child.children and not child.attrs
        ):
            out.append(child)
            continue
        if child.type != "text" or in_link:
            _restore(child, current)
            out.append(child)
            continue
        pieces = current.pattern.split(child.content)  # text, index, text, ..., text
        for i, piece in enumerate(pieces):
            if i % 2 == 0:
                if piece:
                    _append_text(out, piece)
                continue
            link = current.links[int(piece)]
            if link is None:
                _append_text(out, current.written[int(piece)])
            else:
                out.append(Token("cite", "", 0, content=link))
    return out


def _append_text(tokens: list[Token], text: str) -> None:
    """Add `text` to the text token at the end of `tokens`, or as a new one (as text_join leaves them)."""
    if tokens and tokens[-1].type == "text":
        tokens[-1].content += text
    else:
        tokens.append(Token("text", "", 0, content=text))


def _restore(token: Token, current: _Placeholders | None) -> None:
    """Every placeholder in `token` (content, info, attributes, children) back to its marker's text."""
    if current is None:
        return
    token.content = current.restore(token.content)
    token.info = current.restore(token.info)
    for name, value in token.attrs.items():
        if isinstance(value, str):
            token.attrs[name] = current.restore(value)
    for child in token.children or ():
        _restore(child, current)


def _cite(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """A citation's links, made by _cite_html from the marker's numbers alone."""
    return tokens[idx].content


def _normalize_link(md: MarkdownIt, url: str) -> str:
    """A link's address as written (placeholders put back); "" (no link) unless `link_url` allows it."""
    current = _CURRENT.get()
    written = url if current is None else current.restore(url)
    if link_url(written) is None:
        return ""
    return str(MarkdownIt.normalizeLink(md, written))


def _image_as_link(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """An image as a link to it, its alt text (or else its address) as the link's text: never loaded."""
    token = tokens[idx]
    src = str(token.attrs.get("src", ""))
    alt = self.renderInlineAsText(token.children or [], options, env)
    if not src:  # `![x]()`: its text
        return escapeHtml(alt)
    return f'<a class="image-link" href="{escapeHtml(src)}">{escapeHtml(alt or src)}</a>'


def _make_markdown() -> MarkdownIt:
    md = markdown_parser()  # the options the citation core parses with: one place says them
    md.core.ruler.before("normalize", "cite_mark", _mark)
    md.core.ruler.push("cite_link", _link)
    md.normalizeLink = lambda url: _normalize_link(md, url)  # type: ignore[method-assign]
    md.validateLink = lambda url: bool(url) and link_url(url) is not None  # type: ignore[method-assign]
    md.add_render_rule("image", _image_as_link)
    md.add_render_rule("cite", _cite)
    return md


_MARKDOWN = _make_markdown()


def clean_html(rendered: str) -> str:
    """`rendered` with anything outside the allow-list removed (the page's DOMPurify keeps the same)."""
    return nh3.clean(
        rendered,
        tags=set(ALLOWED_TAGS),
        # "*": nh3 otherwise keeps its generic attributes (`title`, `lang`) on every tag, which the
        # page's DOMPurify drops: the allow-list is ALLOWED_ATTRIBUTES and nothing besides.
        attributes={"*": set(), **{tag: set(attrs) for tag, attrs in ALLOWED_ATTRIBUTES.items()}},
        url_schemes=set(ALLOWED_URL_SCHEMES),
        link_rel=None,
        strip_comments=True,
    )


def render_answer_html(
    text: str, *, reference_count: int, markers: Sequence[Marker] | None = None, turn: int = 1
) -> str:
    """The final text as sanitized HTML; markers within 1..reference_count link to their source
    (`#source-N`; in a conversation's later turn T, `#turn-T-source-N`: source_anchor).

    `markers` are the final text's markers as the trail recorded them
    (answers.citations.trail.final_markers); without a record (a text that was
    never finalized, or an answer stored before the record) the scanner finds them.
    Nothing from the text survives as markup: Markdown escapes raw HTML, and nh3
    removes anything outside the allow-list regardless.
    """
    env: dict[str, object] = {"reference_count": reference_count, "markers": markers, "turn": turn}
    try:
        rendered = _MARKDOWN.render(text, env)
    finally:
        _CURRENT.set(None)
    return clean_html(rendered)


# Where CommonMark with raw HTML allowed would open raw HTML: a tag (open or closing), a comment, a
# declaration, CDATA or a processing instruction. Not an autolink (`<https:`, `<a@b>`): a scheme or
# an address is no tag name.
_RAW_HTML_START = re.compile(r"<(?=[A-Za-z][A-Za-z0-9-]*(?:[\s/>]|$)|[/!?])")


def markdown_without_html(text: str) -> str:
    """An answer's Markdown as written for other renderers (its `answer.md`), reading as the page
    renders it: every `<` that would open raw HTML outside code is backslash-escaped (the page's
    parser has raw HTML off, so it shows such markup as text; a renderer that allows raw HTML
    would run it). One already escaped (an odd run of backslashes before it) is left as it is.
    """
    regions = code_regions(text)
    starts = [low for low, _ in regions]
    parts: list[str] = []
    at = 0
    for match in _RAW_HTML_START.finditer(text):
        start = match.start()
        region = bisect_right(starts, start) - 1
        if region >= 0 and start < regions[region][1]:
            continue  # code shows its `<` as written, on the page and everywhere
        backslashes = 0
        while backslashes < start and text[start - backslashes - 1] == "\\":
            backslashes += 1
        if backslashes % 2:
            continue
        parts += (text[at:start], "\\")
        at = start
    parts.append(text[at:])
    return "".join(parts)
