"""Where an answer's Markdown is code: CommonMark as markdown-it-py parses it with the renderer's options.

Why markdown-it-py's own block parser, and a hand rule only for the inline part
(docs/citations.md, "What is code"):

- Exact where it matters most. Block structure (fences inside block quotes and
  list items, lazy lines, tables interrupting paragraphs, a fence ending with
  its container, closing fences at least as long as the opening one) is what
  the renderer's parser says, because it *is* the renderer's parser, configured
  by `markdown_parser()`, the one function answers/rendering.py builds on. A
  hand copy of those rules drifted from CommonMark on 38 of 72 generated replies.
- Fast enough, and only when needed. A text without a backtick and without
  "~~~" has no code at all and is never parsed (unless it may hold a table:
  cells past a table's columns are dropped unseen, so they are treated as code). Parsing costs about 0.1 s per
  MB of Markdown (bench/RESULTS_citations.md), so only the stretches between
  blank lines that may hold a block other than a paragraph are parsed, all in
  one call (see _chunked_regions; plain paragraphs need no parse, and
  removals strip makes in them are checked in place: removals_keep_code); a
  one-paragraph text's tail needs none either. Inline parsing, which costs
  twice that, is not run: code spans are paired here, on each inline block's
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

Positions are those of the text as given. markdown-it-py first rewrites "\\r\\n"
and "\\r" as "\\n" and NUL as U+FFFD; the parse here sees a copy of the same
length (" \\n" for "\\r\\n"), so every offset is one of the original text.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate

from markdown_it import MarkdownIt
from markdown_it.common.utils import MD_TRIM_CHARS
from markdown_it.token import Token


def markdown_parser() -> MarkdownIt:
    """A parser with the renderer's options: CommonMark, GFM tables, no raw HTML, indented code or
    link reference definitions, hard line breaks (docs/api.md, "Answer rendering")."""
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
    md.enable("table")
    md.disable(["code", "reference", "html_block", "html_inline"])
    return md


def _block_parser() -> MarkdownIt:
    md = markdown_parser()
    md.disable(["inline", "text_join"])  # blocks only: code spans are paired below
    return md


_BLOCKS = _block_parser()
# What markdown-it reads inside an inline block before a backtick can open a span:
# a backslash escape (an ASCII punctuation character or a line break after it), or a run.
_INLINE = re.compile(r"\\[!-/:-@\[-`{-~\n]|`++")
_TICKS = re.compile(r"`++")
# A line that may be a table's delimiter row: only then can a table hide cells.
_DELIMITER_ROW = re.compile(r"^[ \t>]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$", re.M)
_ROW_PREFIX = re.compile(r"(?:[ \t]*>)*[ \t]*")
# A line whose beginning may still make it a block of another kind (a list item,
# quote, fence, heading, break, table row, setext underline) until more of it arrives.
_UNSETTLED_LINE = re.compile(r"[ \t>]*(?:[-+*#|`~=_:0-9][^\n]*)?")


def _parseable(text: str) -> str:
    """`text` as markdown-it-py's normalize leaves it, with every character where it was."""
    if "\r" in text:
        text = text.replace("\r\n", " \n").replace("\r", "\n")
    if "\0" in text:
        text = text.replace("\0", "\ufffd")
    return text


class _Parsed:
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
        return _located(token.content, self.lines[first:last], self.starts[first:last])

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


def _located(content: str, lines: list[str], starts: list[int]) -> list[tuple[int, int]]:
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


def _pair_block(text: str, pieces: list[tuple[int, int]], cells: bool) -> tuple[list[tuple[int, int]], int]:
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


def code_regions(text: str) -> list[tuple[int, int]]:
    """Where `text` is code (fenced blocks and code spans), as (start, end) pairs in order."""
    if "`" not in text and "~~~" not in text and ("|" not in text or _DELIMITER_ROW.search(text) is None):
        return []
    if "\r" in text or "\0" in text:
        return _regions(_Parsed(text))[0]
    return _chunked_regions(text)


# --- Parsing only what may hold blocks (see _chunked_regions) ---------------------------------

# A blank line (spaces and tabs only): the "\n" that ends the line before it, then its blanks.
_BLANK = re.compile(r"\n[ \t]*+(?=\n)")
# A line whose first characters may open a block other than a paragraph, or end one (a list item,
# quote, fence, heading, break, table row or delimiter, setext underline): with the "\n" before it.
_BLOCKISH = re.compile(r"\n[ \t]*+(?:[-+*#>|=_~`:]|[0-9]++[.)])")
_FIRST_BLOCKISH = re.compile(r"[ \t]*+(?:[-+*#>|=_~`:]|[0-9]++[.)])")
_TICK = re.compile(r"``*+")  # (a literal first: the search skips ahead to the next backtick)
_LEADING_BLANKS = re.compile(r"(?:[ \t]*+\n)*+")
_RUN_SEPARATOR = "\n\nx\n\n"


class _Layout:
    """A text cut into chunks at its blank lines (see _chunked_regions), and where it is code."""

    def __init__(self, text: str, starts: list[int], ends: list[int], parsed: bytearray) -> None:
        self.text = text
        self.starts = starts  # chunk k is text[starts[k]:ends[k]]
        self.ends = ends
        self.parsed = parsed  # 1 where a chunk's code comes from a parse; 0: a paragraph alone
        self.regions: list[tuple[int, int]] = []
        self.runs: list[tuple[int, int]] = []  # the first and last chunk of each run parsed
        self.tail = len(starts)  # from this chunk on, all was parsed at once (a fence ran on)


_last_layout: _Layout | None = None  # the last text's (strip asks about the text it just cut)


def _chunked_regions(text: str) -> list[tuple[int, int]]:
    global _last_layout
    layout = _chunked_layout(text)
    _last_layout = layout
    return layout.regions


def _chunked_layout(text: str) -> _Layout:
    """code_regions(text) without parsing the plain paragraphs (text without "\r" or NUL).

    The text is cut at its blank lines into chunks. A chunk none of whose lines
    starts (after blanks) with a character that can open or end a block (a list
    marker, ">", a fence character, "#", "|", ":", "=", "_") is one paragraph
    whenever nothing is open before it: none of those blocks can interrupt it,
    and indented code is off. Nothing is open at the start of the text, nor
    after such a paragraph and a blank line. The other chunks are parsed by
    markdown-it-py in runs: a run takes the chunks that follow it while they
    start with a blank (a list item may go on) or may open a block; a blank
    line and then a line starting with a plain character close whatever a run
    left open (a list, a quote, a table) but a fenced block. All runs are
    parsed at once, joined by such a paragraph; a run that leaves a fenced
    block open (its code reaches past the run) is parsed again with all the
    text after it. In a paragraph chunk, code spans are paired as in any
    paragraph. The result is the one parse of the whole text gives (the
    tests hold the two against each other).
    """
    size = len(text)
    # Chunk k is text[starts[k]:ends[k]]: no blank line inside, none at its ends (blank lines at
    # the start of the text are no chunk).
    starts = [_LEADING_BLANKS.match(text).end()]  # type: ignore[union-attr]
    ends = []
    for blank in _BLANK.finditer(text, starts[0]):
        if blank.start() >= starts[-1]:
            ends.append(blank.start())
            starts.append(blank.end() + 1)
        else:  # a blank line right after another
            starts[-1] = blank.end() + 1
    if starts[-1] < size:
        ends.append(size)
    else:  # blank lines end the text: they go with the last chunk (a fenced block it opens holds them)
        starts.pop()
        if ends:
            ends[-1] = size
    count = len(starts)
    parsed = bytearray(count)  # 1: the chunk's code comes from a parse
    layout = _Layout(text, starts, ends, parsed)
    if not count:
        return layout
    blockish = {bisect_right(starts, found.start() + 1) - 1 for found in _BLOCKISH.finditer(text)}
    if _FIRST_BLOCKISH.match(text, starts[0]):
        blockish.add(0)
    # Chunks of paragraphs and closed top-level fences only: read here, not parsed (unless a run
    # takes them in).
    fenced: dict[int, list[tuple[int, int]]] = {}
    for k in list(blockish):
        if text[starts[k]] in " \t":
            continue
        found = _fenced_paragraphs(text, starts[k], ends[k])
        if found is not None:
            fenced[k] = found
            blockish.discard(k)
    runs: list[tuple[int, int]] = []  # (first chunk, last chunk)
    for k in sorted(blockish):
        if runs and k <= runs[-1][1]:
            continue
        last = k
        while last + 1 < count and (last + 1 in blockish or text[starts[last + 1]] in " \t"):
            last += 1
        runs.append((k, last))
        parsed[k : last + 1] = b"\x01" * (last + 1 - k)
    layout.runs = runs
    code: list[tuple[int, int]] = []
    if runs:
        # One parse for all the runs (markdown-it-py costs ~0.1 ms a call): the runs joined with a
        # plain paragraph between them, which closes all they leave open but a fenced block.
        joined = "".join(text[starts[k] : ends[last]] + _RUN_SEPARATOR for k, last in runs)
        at = list(
            accumulate((ends[last] - starts[k] + len(_RUN_SEPARATOR) for k, last in runs[:-1]), initial=0)
        )
        found = _regions(_Parsed(joined))[0]
        open_run = len(runs)  # the first run that leaves a fenced block open (it runs on past its end)
        for a, b in found:
            i = bisect_right(at, a) - 1
            k, last = runs[i]
            if b > at[i] + ends[last] - starts[k]:
                open_run = i
                break
            code.append((a - at[i] + starts[k], b - at[i] + starts[k]))
        if open_run < len(runs):
            # That fenced block goes on into the text after the run: from the run on, one parse.
            start = starts[runs[open_run][0]]
            code = [region for region in code if region[0] < start]
            code += [(a + start, b + start) for a, b in _regions(_Parsed(text[start:]))[0]]
            parsed[runs[open_run][0] :] = b"\x01" * (count - runs[open_run][0])
            layout.tail = runs[open_run][0]
    for k, regions in fenced.items():
        if not parsed[k]:
            code += regions
    if "`" in text:
        for k in sorted({bisect_right(starts, found.start()) - 1 for found in _TICK.finditer(text)}):
            if k < 0 or parsed[k] or k in fenced:
                continue
            start, end = starts[k], ends[k]
            chunk = text[start:end]
            content = chunk.strip(MD_TRIM_CHARS)
            if "\n" not in content:
                lead = start + len(chunk) - len(chunk.lstrip(MD_TRIM_CHARS))
                pieces = [(lead, lead + len(content))]
            else:
                lines = chunk.split("\n")
                offsets = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=start))
                pieces = _located(content, lines, offsets)
            code += _pair_block(text, pieces, False)[0]
    code.sort()
    layout.regions = code
    return layout


_FENCE_OPENING = re.compile(r" {0,3}+(`{3,}+|~{3,}+)([^\n]*)")
_SPACES = re.compile(r" *+")


def _fenced_paragraphs(text: str, start: int, end: int) -> list[tuple[int, int]] | None:
    """The code of text[start:end] (a chunk, with nothing open before it) when it is paragraphs and
    fenced blocks closed in it, each line unindented or indented by spaces only (markdown-it-py's
    reading: a fence opens and closes at up to 3 spaces; a line indented more in a fenced block
    is not read here); None for anything else."""
    code: list[tuple[int, int]] = []
    paragraph: list[tuple[int, str]] = []  # (where the line starts, the line)
    fence: tuple[str, int, int] | None = None  # (its character, run length, where it starts)
    position = start

    def pair() -> None:
        lines = [line for _, line in paragraph]
        content = "\n".join(lines).strip(MD_TRIM_CHARS)
        if "`" in content:
            code.extend(_pair_block(text, _located(content, lines, [at for at, _ in paragraph]), False)[0])
        paragraph.clear()

    for line in text[start:end].split("\n"):
        if "\t" in line[: len(line) - len(line.lstrip(" \t"))] or not line.strip(" \t"):
            return None
        if fence is not None:
            indent = _SPACES.match(line).end()  # type: ignore[union-attr]
            run = len(line) - indent - len(line[indent:].lstrip(fence[0]))
            if run and indent > 3:
                return None  # (may close it: indented code is off)
            if run >= fence[1] and not line[indent + run :].strip(" \t"):
                code.append((fence[2], position + len(line)))
                fence = None
        elif (opening := _FENCE_OPENING.fullmatch(line)) and (opening[1][0] == "~" or "`" not in opening[2]):
            pair()
            fence = (opening[1][0], len(opening[1]), position)
        elif _FIRST_BLOCKISH.match(line):
            return None
        else:
            paragraph.append((position, line))
        position += len(line) + 1
    if fence is not None:
        return None
    pair()
    return code


def removals_keep_code(old: str, new: str, edits: list[tuple[int, int, int]]) -> bool:
    """Whether strip's edits of `old` (each: start, end, length of what replaced old[start:end]; a
    removal of marker text and blanks, or a marker re-rendered) leave code where it was in `new`.

    A sufficient rule. A re-rendered marker never moves code (it keeps its
    brackets, and its text holds no backtick, "|" or line break). Each removal
    must leave its line neither blank nor starting as a block may, and not be
    at the start of the first line of its chunk (see _chunked_regions): then
    the chunks and which of them are parsed stay. In a paragraph chunk no
    backtick or backslash may be next to where it joined (backtick runs and
    escapes stay); the runs that have one are parsed again and must give the
    code they gave, moved by the edits.
    """
    layout = _last_layout
    if layout is None or layout.text is not old:
        if "\r" in old or "\0" in old:
            return False
        layout = _chunked_layout(old)
    starts, ends, parsed = layout.starts, layout.ends, layout.parsed
    edit_ends = [end for _, end, _ in edits]
    shrunk = list(accumulate((end - start - size for start, end, size in edits), initial=0))

    def moved(x: int) -> int:
        """Where a position of `old` outside the edits is in `new`."""
        return x - shrunk[bisect_right(edit_ends, x)]

    first_chunks = [k for k, _ in layout.runs]
    affected: dict[int, None] = {}
    for start, _, size in edits:
        if size:
            continue
        k = bisect_right(starts, start) - 1
        if k < 0 or k >= layout.tail:
            return False
        join = moved(start)
        line = new.rfind("\n", 0, join) + 1
        if not new[line:join].strip(" \t"):  # at its line's start
            end = new.find("\n", join)
            if (
                line == 0
                or not new[line : end if end >= 0 else len(new)].strip(" \t")
                or _FIRST_BLOCKISH.match(new, line)
                or not new[new.rfind("\n", 0, line - 1) + 1 : line - 1].strip(" \t")  # a first line
            ):
                return False
        if parsed[k]:
            affected[bisect_right(first_chunks, k) - 1] = None
        elif (join and new[join - 1] in "\\`") or new.startswith("`", join):
            return False
    if not affected:
        return True
    runs = [layout.runs[r] for r in affected]
    texts = [new[moved(starts[k]) : moved(ends[last])] for k, last in runs]
    at = list(accumulate((len(text) + len(_RUN_SEPARATOR) for text in texts[:-1]), initial=0))
    found: list[list[tuple[int, int]]] = [[] for _ in runs]
    for a, b in _regions(_Parsed("".join(text + _RUN_SEPARATOR for text in texts)))[0]:
        i = bisect_right(at, a) - 1
        if b > at[i] + len(texts[i]):
            return False  # a fenced block left open
        found[i].append((a - at[i], b - at[i]))
    regions = layout.regions
    for (k, last), got in zip(runs, found, strict=True):
        start, end = starts[k], ends[last]
        base = moved(start)
        was = regions[bisect_left(regions, (start, -1)) : bisect_left(regions, (end, -1))]
        if got != [(moved(a) - base, moved(b) - base) for a, b in was]:
            return False
    return True


_Block = tuple[Token, int, list[tuple[int, int]]]  # an inline block: token, first unpaired run, spans


def _regions(parsed: _Parsed) -> tuple[list[tuple[int, int]], list[_Block]]:
    text = parsed.text
    code = parsed.fences()
    if "|" in text:
        code += parsed.hidden()  # never shown: nothing there is a marker either
    blocks: list[_Block] = []
    if "`" in text:
        for pieces, token, cells in parsed.inlines():
            spans, unpaired = _pair_block(text, pieces, cells)
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
    if _one_paragraph(text):
        # (What the parse below finds for it: one paragraph, open at the end, nothing undecided.)
        return Tail(size, 0, ((("paragraph_open", "", 0),), _last_kind(text), line == size, True), None)
    last = text[line:]
    parsed = _Parsed(text)
    _, blocks = _regions(parsed)
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


def _one_paragraph(text: str) -> bool:
    """Whether `text` is surely one paragraph without code, whatever its last line: no backtick,
    tilde or "|", no blank line, and no line starting as another block may."""
    return (
        "`" not in text
        and "~" not in text
        and "|" not in text
        and "\r" not in text
        and "\0" not in text
        and text.strip(" \t\n") != ""
        and _FIRST_BLOCKISH.match(text) is None
        and not text.startswith(("\n", " \n", "\t\n"))
        and _BLANK.search(text) is None
        and _LEADING_BLANKS.match(text).end() == 0  # type: ignore[union-attr]
        and _BLOCKISH.search(text) is None
        and (text.endswith("\n") or text[text.rfind("\n") + 1 :].strip(" \t") != "")
    )


def _closed(parsed: _Parsed, fence: Token) -> bool:
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


def _pipe_line(parsed: _Parsed, token: Token) -> int | None:
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
