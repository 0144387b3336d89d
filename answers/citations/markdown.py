"""An answer's Markdown as the renderer parses it: markdown-it-py's blocks, code spans paired by its rules.

The lowest of the three modules that say where an answer's Markdown is code
(answers/citations/code.py has the overview and the two entry points,
code_regions and code_tail; answers/citations/blocks.py parses only the parts of
a long text that may hold blocks). This one holds what both build on: the
parser with the renderer's options, one parse's block tokens located in the
text (Parsed), code spans paired on each inline block's own text by
markdown-it's rules (pair_block), and the code one parse finds
(code_and_blocks). Named after what it reads, so the others import it and it
imports none of them.

Positions are those of the text as given. markdown-it-py first rewrites "\\r\\n"
and "\\r" as "\\n" and NUL as U+FFFD; the parse here sees a copy of the same
length (" \\n" for "\\r\\n"), so every offset is one of the original text.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from itertools import accumulate

from markdown_it import MarkdownIt
from markdown_it.token import Token


def markdown_parser() -> MarkdownIt:
    """A parser with the renderer's options: CommonMark, GFM tables, no raw HTML, indented code or
    link reference definitions, hard line breaks (docs/reference/page-hooks.md, "Answer rendering")."""
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
    md.enable("table")
    md.disable(["code", "reference", "html_block", "html_inline"])
    return md


def _block_parser() -> MarkdownIt:
    md = markdown_parser()
    md.disable(["inline", "text_join"])  # blocks only: code spans are paired here
    return md


_BLOCKS = _block_parser()
# What markdown-it reads inside an inline block before a backtick can open a span:
# a backslash escape (an ASCII punctuation character or a line break after it), or a run.
_INLINE = re.compile(r"\\[!-/:-@\[-`{-~\n]|`++")
_TICKS = re.compile(r"`++")
_ROW_PREFIX = re.compile(r"(?:[ \t]*>)*[ \t]*")


def _parseable(text: str) -> str:
    """`text` as markdown-it-py's normalize leaves it, with every character where it was."""
    if "\r" in text:
        text = text.replace("\r\n", " \n").replace("\r", "\n")
    if "\0" in text:
        text = text.replace("\0", "\ufffd")
    return text


class Parsed:
    """A text's block tokens, with its line starts."""

    def __init__(self, text: str) -> None:
        self.text = text
        src = _parseable(text)
        self.tokens: list[Token] = _BLOCKS.parse(src)
        lines = src.split("\n")
        self.lines = lines
        self.starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))

    def line_end(self, line: int) -> int:
        return self.starts[line] + len(self.lines[line])

    def fences(self) -> list[tuple[int, int]]:
        return [
            (self.starts[token.map[0]], self.line_end(token.map[1] - 1))
            for token in self.tokens
            if token.type == "fence" and token.map
        ]

    def inlines(self) -> list[tuple[list[tuple[int, int]], Token, bool]]:
        """Every inline block with a backtick: its pieces, its token, whether its pieces are cells."""
        out: list[tuple[list[tuple[int, int]], Token, bool]] = []
        opener: Token | None = None
        cell_row = -1
        for token in self.tokens:
            if token.nesting == 1:
                opener = token
                continue
            if token.type != "inline" or "`" not in token.content or not token.map or opener is None:
                continue
            if opener.type in ("th_open", "td_open"):
                row = token.map[0]
                if row != cell_row:  # a row's cells are paired once, each on its own
                    cell_row = row
                    out.append((self._cells(row), token, True))
                continue
            out.append((self._inline(token), token, False))
        return out

    def hidden(self) -> list[tuple[int, int]]:
        """The cells of table rows past the header's columns: markdown-it drops them unseen."""
        hidden = []
        columns = 0
        for token in self.tokens:
            if token.type == "table_open":
                columns = 0
            elif token.type == "th_open":
                columns += 1
            elif token.type == "tr_open" and token.map and columns:
                cells = self._cells(token.map[0])
                if len(cells) > columns:
                    hidden.append((cells[columns][0], self.line_end(token.map[0])))
        return hidden

    def _inline(self, token: Token) -> list[tuple[int, int]]:
        """A paragraph's or heading's inline text, located line by line in the source."""
        assert token.map is not None
        first, last = token.map
        return located(token.content, self.lines[first:last], self.starts[first:last])

    def _cells(self, row: int) -> list[tuple[int, int]]:
        """The cells of a table row as markdown-it splits them: at each "|" not right after a
        backslash, an empty first or last cell (the row's outer pipes) left out."""
        source = self.lines[row]
        start = _ROW_PREFIX.match(source).end()  # type: ignore[union-attr]
        end = len(source.rstrip(" \t"))
        cells = []
        cell = start
        for i in range(start, end):
            if source[i] == "|" and (i == 0 or source[i - 1] != "\\"):
                cells.append((cell, i))
                cell = i + 1
        cells.append((cell, end))
        if cells and not source[cells[0][0] : cells[0][1]].strip(" \t"):
            cells.pop(0)
        if cells and not source[cells[-1][0] : cells[-1][1]].strip(" \t"):
            cells.pop()
        base = self.starts[row]
        return [(base + a, base + b) for a, b in cells]


def located(content: str, lines: list[str], starts: list[int]) -> list[tuple[int, int]]:
    """An inline block's text (`content`, as markdown-it gives it) located line by line in its source
    lines (`starts`: where each begins in the text)."""
    pieces = []
    contents = content.split("\n")
    for k, (part, source) in enumerate(zip(contents, lines, strict=False)):
        core = part.lstrip(" \t")
        stop = len(source.rstrip(" \t")) if k == len(contents) - 1 else len(source)
        found = source.rfind(core, 0, stop) if core else stop
        if found < 0:
            found = stop - len(core)
        pieces.append((starts[k] + found, starts[k] + found + len(core)))
    return pieces


def _pair(text: str, start: int, end: int) -> tuple[list[tuple[int, int]], int]:
    """The code spans of text[start:end] (one inline piece), and the first run left without a partner
    (`end` when none)."""
    runs: dict[int, list[int]] = {}
    for run in _TICKS.finditer(text, start, end):
        runs.setdefault(run.end() - run.start(), []).append(run.start())
    spans: list[tuple[int, int]] = []
    unpaired = end
    position = start
    while True:
        found = _INLINE.search(text, position, end)
        if found is None:
            return spans, unpaired
        opener = found.start()
        if text[opener] == "\\":
            position = found.end()
            continue
        size = found.end() - opener
        starts = runs.get(size, [])
        k = bisect_left(starts, found.end())
        if k < len(starts):
            spans.append((opener, starts[k] + size))
            position = starts[k] + size
        else:
            unpaired = min(unpaired, opener)
            position = found.end()


def pair_block(text: str, pieces: list[tuple[int, int]], cells: bool) -> tuple[list[tuple[int, int]], int]:
    """The code spans of an inline block: cells each on their own, lines of a paragraph joined."""
    if cells:
        spans: list[tuple[int, int]] = []
        unpaired = len(text)
        for a, b in pieces:
            found, first = _pair(text, a, b)
            spans += found
            if first < b:
                unpaired = min(unpaired, first)
        return spans, unpaired
    if len(pieces) == 1:
        a, b = pieces[0]
        found, first = _pair(text, a, b)
        return found, first if first < b else len(text)
    # Across lines: pair on the joined text, then map back (a span may cross lines).
    joined = "\n".join(text[a:b] for a, b in pieces)
    offsets = list(accumulate((b - a + 1 for a, b in pieces[:-1]), initial=0))
    found, first = _pair(joined, 0, len(joined))

    def source(i: int) -> int:
        k = bisect_left(offsets, i + 1) - 1
        a, b = pieces[k]
        return a + min(i - offsets[k], b - a)

    spans = [(source(s), source(e - 1) + 1) for s, e in found]
    return spans, source(first) if first < len(joined) else len(text)


Block = tuple[Token, int, list[tuple[int, int]]]  # an inline block: token, first unpaired run, spans


def code_and_blocks(parsed: Parsed) -> tuple[list[tuple[int, int]], list[Block]]:
    """Where one parse puts code (fenced blocks, code spans, hidden table cells), in order, and each
    inline block with a backtick as Block (code_tail reads the blocks still open at the end)."""
    text = parsed.text
    code = parsed.fences()
    if "|" in text:
        code += parsed.hidden()  # never shown: nothing there is a marker either
    blocks: list[Block] = []
    if "`" in text:
        for pieces, token, cells in parsed.inlines():
            spans, unpaired = pair_block(text, pieces, cells)
            code += spans
            blocks.append((token, unpaired, spans))
    code.sort()
    if "|" in text:  # a hidden cell holds the spans inside it: one region
        merged: list[tuple[int, int]] = []
        for start, end in code:
            if merged and start < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        code = merged
    return code, blocks
