"""Where an answer's Markdown is code: CommonMark as markdown-it-py parses it with the renderer's options.

The two questions the rest of the citation core asks, each one function here:
`code_regions(text)` (where a whole text is code) and `code_tail(text)` (what a
text that may still grow says about its end, for the live display). How they
are answered is in two modules below this one, each named for what it works
on (this one imports them; they never import it):
answers/citations/markdown.py, the parse (the renderer's parser, block tokens
located in the text, code spans paired by markdown-it's rules); and
answers/citations/blocks.py, the chunks between blank lines (parsing only those
that may hold blocks, and whether strip's removals keep code where it was).

Why markdown-it-py's own block parser, and a hand rule only for the inline part
(docs/citations.md, "What is code"):

- Exact where it matters most. Block structure (fences inside block quotes and
  list items, lazy lines, tables interrupting paragraphs, a fence ending with
  its container, closing fences at least as long as the opening one) is what
  the renderer's parser says, because it *is* the renderer's parser, configured
  by `markdown_parser()` (markdown.py) with the options answers/rendering.py
  gives its own. A hand copy of those rules drifted from CommonMark on 38 of 72 generated replies.
- Fast enough, and only when needed. A text without a backtick and without
  "~~~" has no code at all and is never parsed (unless it may hold a table:
  cells past a table's columns are dropped unseen, so they are treated as code). Parsing costs about 0.1 s per
  MB of Markdown (bench/RESULTS_citations.md), so only the stretches between
  blank lines that may hold a block other than a paragraph are parsed, all in
  one call (see blocks.chunked_layout; plain paragraphs need no parse, and
  removals strip makes in them are checked in place: blocks.removals_keep_code); a
  one-paragraph text's tail needs none either. Inline parsing, which costs
  twice that, is not run: code spans are paired (markdown.pair_block), on each inline block's
  own text (a paragraph, a heading, a table cell), by markdown-it's rules
  (backslash escapes, a run of N backticks closed by the next run of exactly N
  in the same block, no partner: plain text). Two inline constructs that can
  hide a backtick from those rules are not modelled: a link's destination or
  title (`[a](x`y)`) and an autolink (`<http://x`y>`); models hardly write
  them, and the page renders both the same way the server does.
- Streaming. `code_tail()` also says how much of a text nothing still to come
  can change, and where the last top-level block starts: everything before it
  is settled for good, so the live display (answers.citations.live) keeps only
  that block as context (see there for why that stays cheap).

Positions are those of the text as given (see answers/citations/markdown.py for
"\\r\\n" and NUL).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it.token import Token

from answers.citations.blocks import Layout, chunked_layout, one_paragraph
from answers.citations.markdown import Parsed, code_and_blocks

# A line that may be a table's delimiter row: only then can a table hide cells.
_DELIMITER_ROW = re.compile(r"^[ \t>]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$", re.M)
# A line whose beginning may still make it a block of another kind (a list item,
# quote, fence, heading, break, table row, setext underline) until more of it arrives.
_UNSETTLED_LINE = re.compile(r"[ \t>]*(?:[-+*#|`~=_:0-9][^\n]*)?")


def code_regions(text: str) -> list[tuple[int, int]]:
    """Where `text` is code (fenced blocks and code spans), as (start, end) pairs in order."""
    if "`" not in text and "~~~" not in text and ("|" not in text or _DELIMITER_ROW.search(text) is None):
        return []  # (no Markdown code syntax at all: nothing to parse)
    if "\r" in text or "\0" in text:
        return code_and_blocks(Parsed(text))[0]
    return chunked_layout(text).regions


def code_layout(text: str) -> Layout | None:
    """What code_regions(text) reads (its regions: `.regions`), for a caller that then asks
    blocks.removals_keep_code about removals from `text`: for a text that holds code or may come
    to by a removal (a backtick, a tilde or a "|" in it); None for any other, and for one with
    "\r" or NUL (code_regions(text) is then what to call; removals are not checked)."""
    if ("`" not in text and "~" not in text and "|" not in text) or "\r" in text or "\0" in text:
        return None
    return chunked_layout(text)


@dataclass(frozen=True)
class Tail:
    """What a text that may still grow says about its end (for the live display).

    `undecided`: code before this index is code whatever follows; from it on,
    more text may change where code is (len(text) when nothing is undecided).
    `block`: where the last top-level block starts; what precedes it cannot
    change where code is after it. `key`: the blocks still open at the end (a
    text ending in the same key leaves what follows in the same state).
    """

    undecided: int
    block: int
    key: tuple[object, ...]
    fence: str | None  # the opening run of a top-level fenced block the text ends inside


def code_tail(text: str) -> Tail:
    """See Tail. Cost: one block parse of `text`."""
    size = len(text)
    line = text.rfind("\n") + 1
    if one_paragraph(text):
        # (What the parse below finds for it: one paragraph, open at the end, nothing undecided.)
        return Tail(size, 0, ((("paragraph_open", "", 0),), _last_kind(text), line == size, True), None)
    last = text[line:]
    parsed = Parsed(text)
    _, blocks = code_and_blocks(parsed)
    lines = len(parsed.lines)
    # The lines markdown-it counts (a final line break opens no line): a block whose map reaches
    # this many is still open at the end.
    ends = lines - 1 if text.endswith("\n") else lines
    undecided = size
    # The last line while it is not finished may still become a fence, a closing fence, a
    # list item or a table row (its first characters decide), or a fence's opening line
    # whose info string gets a backtick.
    if ("`" in last or "~" in last) and not line_settled(last):
        undecided = line
    # A last line of blanks only reads as a blank line, which closes a paragraph; once more comes,
    # it may be that paragraph's continuation line (where a fence indented four spaces or more
    # opens nothing) or, after a blank line, such a fence's opening line: it is not decided yet.
    if last and not last.strip(" \t"):
        undecided = min(undecided, line)
    top = [t for t in parsed.tokens if t.level == 0 and (t.nesting == 1 or t.type == "fence") and t.map]
    block_line = top[-1].map[0] if top else 0  # type: ignore[index]
    block = parsed.starts[block_line] if top else 0
    open_tokens = [
        t
        for t in parsed.tokens
        if (t.nesting == 1 or (t.type == "fence" and not _closed(parsed, t))) and t.map and t.map[1] >= ends
    ]
    # A paragraph whose last complete line holds a "|" may yet turn out to be a table.
    for token, unpaired, spans in blocks:
        if token.map and token.map[1] >= ends:
            undecided = min(undecided, unpaired)
            # A span reaching into the unfinished last line: that line may yet turn out to be a
            # table's header, which ends the paragraph before it.
            if line < size:
                undecided = min([undecided, *(s for s, e in spans if s < line < e)])
            guard = _pipe_line(parsed, token)
            if guard is not None:
                undecided = min([undecided, guard, *(s for s, e in spans if e > guard)])
    fence: str | None = None
    for token in open_tokens:
        if token.type == "fence" and token.level == 0 and token.map is not None:
            # Its opening line is decided once finished; its last line may become its closing one.
            if token.map[0] == lines - 1:
                undecided = min(undecided, parsed.starts[token.map[0]])
            fence = token.markup
    # Inside a list, a quote or a table, later lines can still change this block: code in it waits.
    in_container = any(
        t.level > 0 or t.type not in ("fence", "paragraph_open", "heading_open") for t in open_tokens
    )
    if in_container and ("`" in text[block:] or "~" in text[block:]):
        undecided = min(undecided, block)
    key = (
        tuple((t.type, t.markup, t.level) for t in open_tokens),
        _last_kind(text),
        line == size,
        undecided == size,
    )
    return Tail(undecided, block, key, fence)


def _closed(parsed: Parsed, fence: Token) -> bool:
    """Whether a fenced block ends with its closing line (else it runs on into what follows)."""
    assert fence.map is not None
    first, last = fence.map[0], fence.map[1] - 1
    if last <= first:
        return False
    # The closing line is in the fence's container: as many quote markers as its opening line has
    # before the fence (a ">" past those is the fence's own text: "> ````" does not close a fence
    # that is not in a quote).
    opening = parsed.lines[first]
    line = parsed.lines[last]
    for _ in range(opening[: opening.find(fence.markup)].count(">")):
        line = line.lstrip(" \t")
        if not line.startswith(">"):
            return False
        line = line[1:]
    line = line.lstrip(" \t")
    run = len(line) - len(line.lstrip(fence.markup[0]))
    return run >= len(fence.markup) and not line[run:].strip(" \t")


def _pipe_line(parsed: Parsed, token: Token) -> int | None:
    """The start of a paragraph's last complete line when it holds a "|" (a table may interrupt there)."""
    if token.map is None:
        return None
    lines = parsed.lines
    for line in (len(lines) - 2, len(lines) - 1):
        if token.map[0] <= line < token.map[1] and "|" in lines[line]:
            return parsed.starts[line]
    return None


def line_settled(line: str) -> bool:
    """Whether the first characters of an unfinished line already decide what kind of block it is."""
    return bool(line) and _UNSETTLED_LINE.fullmatch(line) is None


def _last_kind(text: str) -> str:
    if not text:
        return ""
    return text[-1] if text[-1] in "\n\\" else "x"
