"""Parsing only what may hold blocks: code_regions' way through a long text, and what strip's removals keep.

One of the two modules under answers/citations/code.py (the overview; its
code_regions reads chunked_layout for any text without "\\r" or NUL). A text
is cut at its blank lines into chunks; the plain paragraphs among them are
paired in place and only the rest parsed, all at once (chunked_layout);
removals_keep_code tells strip, from the same chunks, whether its removals
leave code where it was; one_paragraph asks the same line rules of a whole
text (code_tail's shortcut). Named for the unit it works in, the blocks
between blank lines; the parse itself is answers/citations/markdown.py.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from itertools import accumulate

from markdown_it.common.utils import MD_TRIM_CHARS

from answers.citations.markdown import Parsed, code_and_blocks, located, pair_block

# A blank line (spaces and tabs only): the "\n" that ends the line before it, then its blanks.
_BLANK = re.compile(r"\n[ \t]*+(?=\n)")
# A line whose first characters may open a block other than a paragraph, or end one (a list item,
# quote, fence, heading, break, table row or delimiter, setext underline): with the "\n" before it.
_BLOCKISH = re.compile(r"\n[ \t]*+(?:[-+*#>|=_~`:]|[0-9]++[.)])")
_FIRST_BLOCKISH = re.compile(r"[ \t]*+(?:[-+*#>|=_~`:]|[0-9]++[.)])")
_TICK = re.compile(r"``*+")  # (a literal first: the search skips ahead to the next backtick)
_LEADING_BLANKS = re.compile(r"(?:[ \t]*+\n)*+")
_RUN_SEPARATOR = "\n\nx\n\n"


class Layout:
    """A text cut into chunks at its blank lines (see chunked_layout), and where it is code."""

    def __init__(self, text: str, starts: list[int], ends: list[int], parsed: bytearray) -> None:
        self.text = text
        self.starts = starts  # chunk k is text[starts[k]:ends[k]]
        self.ends = ends
        self.parsed = parsed  # 1 where a chunk's code comes from a parse; 0: a paragraph alone
        self.regions: list[tuple[int, int]] = []
        self.runs: list[tuple[int, int]] = []  # the first and last chunk of each run parsed
        self.tail = len(starts)  # from this chunk on, all was parsed at once (a fence ran on)


def chunked_layout(text: str) -> Layout:
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
    layout = Layout(text, starts, ends, parsed)
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
        found = code_and_blocks(Parsed(joined))[0]
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
            code += [(a + start, b + start) for a, b in code_and_blocks(Parsed(text[start:]))[0]]
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
                pieces = located(content, lines, offsets)
            code += pair_block(text, pieces, False)[0]
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
            code.extend(pair_block(text, located(content, lines, [at for at, _ in paragraph]), False)[0])
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


def removals_keep_code(
    old: str, new: str, edits: list[tuple[int, int, int]], layout: Layout | None = None
) -> bool:
    """Whether strip's edits of `old` (each: start, end, length of what replaced old[start:end]; a
    removal of marker text and blanks, or a marker re-rendered) leave code where it was in `new`.

    A sufficient rule. A re-rendered marker never moves code (it keeps its
    brackets, and its text holds no backtick, "|" or line break). Each removal
    must leave its line neither blank nor starting as a block may, and not be
    at the start of the first line of its chunk (see chunked_layout): then
    the chunks and which of them are parsed stay. In a paragraph chunk no
    backtick or backslash may be next to where it joined (backtick runs and
    escapes stay); the runs that have one are parsed again and must give the
    code they gave, moved by the edits. `layout` is chunked_layout(old) when the caller has it
    (strip cut `old` with it); otherwise it is made here.
    """
    if layout is None or layout.text is not old:
        if "\r" in old or "\0" in old:
            return False
        layout = chunked_layout(old)
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
    for a, b in code_and_blocks(Parsed("".join(text + _RUN_SEPARATOR for text in texts)))[0]:
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


def one_paragraph(text: str) -> bool:
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
