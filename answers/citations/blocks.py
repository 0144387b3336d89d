"""Parsing only what may hold blocks: code_regions' way through a long text, and what strip's removals keep.

One of the two modules under answers/citations/code.py (the overview; its
code_regions reads chunked_layout for any text without "\\r" or NUL). A text
is read as chunks, the stretches between its blank lines, found only where a
line may start a block or a backtick stands (_Chunks): the chunks that may
hold blocks are parsed, all at once, and the paragraphs holding a backtick
paired in place (chunked_layout); removals_keep_code tells strip, from the
same runs of chunks, whether its removals leave code where it was, and
lines_removed_keep_code tells normalize the same of the footnote definitions
it removes; one_paragraph asks the same line rules of a whole text
(code_tail's shortcut). Named for the unit it works in, the blocks between
blank lines; the parse itself is answers/citations/markdown.py.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
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
    """A text's code (`regions`), and the runs of its chunks (the stretches between blank lines, see
    chunked_layout) that it read from a parse: what removals_keep_code checks strip's edits against."""

    def __init__(
        self, text: str, regions: list[tuple[int, int]], runs: list[tuple[int, int]], tail: int
    ) -> None:
        self.text = text
        self.regions = regions
        self.runs = runs  # (start, end) of each run of chunks parsed together, in order
        self.tail = tail  # from here on, all was parsed at once (a fenced block ran on); past the end: none

    def moved(self, text: str, edits: list[tuple[int, int, int]]) -> Layout:
        """This layout for `text`: this one's text after `edits` (start, end, length of what replaced
        text[start:end], in order) that move no code (normalize's rewrites holding no backtick, "|"
        or line break, outside code: see normalize.moves_no_code)."""
        at = mover(edits)
        tail = at(self.tail) if self.tail <= len(self.text) else len(text) + 1
        return Layout(
            text, [(at(a), at(b)) for a, b in self.regions], [(at(a), at(b)) for a, b in self.runs], tail
        )


def mover(edits: list[tuple[int, int, int]]) -> Callable[[int], int]:
    """Where a position outside `edits` (start, end, length of the replacement; in order) is after them."""
    ends = [end for _, end, _ in edits]
    shrunk = list(accumulate((end - start - size for start, end, size in edits), initial=0))
    return lambda x: x - shrunk[bisect_right(ends, x)]


class _Chunks:
    """A text's chunks, found where asked: the stretches between blank lines.

    A chunk has no blank line inside and none at its ends; blank lines at the
    start of the text are no chunk, and those at its end go with the last
    chunk (a fenced block it opens holds them). Asked in order of position,
    each costs what it walks: a text's few chunks that may hold code are found
    without cutting all of it.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.first = _LEADING_BLANKS.match(text).end()  # type: ignore[union-attr]

    def around(self, position: int) -> tuple[int, int]:
        """The chunk holding `position` (on a line that is not blank): its start and end."""
        text = self.text
        start = text.rfind("\n", 0, position) + 1
        while start > self.first:
            previous = text.rfind("\n", 0, start - 1) + 1
            if not text[previous : start - 1].strip(" \t"):
                break
            start = previous
        return start, self.end(position)

    def end(self, position: int) -> int:
        """The end of the chunk holding `position`."""
        blank = _BLANK.search(self.text, position)
        if blank is None or self.after(blank.start()) >= len(self.text):
            return len(self.text)
        return blank.start()

    def after(self, end: int) -> int:
        """Where the chunk after the one ending at `end` starts (the end of the text: none)."""
        if end >= len(self.text):
            return end
        return _LEADING_BLANKS.match(self.text, end + 1).end()  # type: ignore[union-attr]


def chunked_layout(text: str) -> Layout:
    """code_regions(text) without parsing the plain paragraphs (text without "\r" or NUL).

    The text is cut at its blank lines into chunks (_Chunks). A chunk none of
    whose lines starts (after blanks) with a character that can open or end a
    block (a list marker, ">", a fence character, "#", "|", ":", "=", "_") is
    one paragraph whenever nothing is open before it: none of those blocks can
    interrupt it, and indented code is off. Nothing is open at the start of
    the text, nor after such a paragraph and a blank line. The other chunks are
    parsed by markdown-it-py in runs (_block_runs), all at once (_parse_runs);
    a run that leaves a fenced block open is parsed again with all the text
    after it. In a paragraph chunk, code spans are paired as in any paragraph,
    and only a chunk holding a backtick is read at all. The result is the one
    parse of the whole text gives (the tests hold the two against each other).
    """
    chunks = _Chunks(text)
    if chunks.first >= len(text):
        return Layout(text, [], [], len(text) + 1)
    runs, fenced = _block_runs(chunks)
    code, tail = _parse_runs(text, runs)
    for (start, _), regions in fenced.items():
        if start < tail:
            code += regions
    if "`" in text:
        code += _paragraph_code(chunks, runs, fenced, tail)
    code.sort()
    return Layout(text, code, runs, tail)


def _block_runs(
    chunks: _Chunks,
) -> tuple[list[tuple[int, int]], dict[tuple[int, int], list[tuple[int, int]]]]:
    """The runs of chunks to parse together, and the chunks of paragraphs and fenced blocks closed in
    them read here instead (each with its code).

    A chunk may hold blocks when one of its lines starts as a block may. Unless
    it is only paragraphs and closed fences (_fenced_paragraphs), a run starts
    there and takes the chunks that follow it while they start with a blank (a
    list item may go on) or may hold blocks: a blank line and then a line
    starting with a plain character close whatever a run left open (a list, a
    quote, a table) but a fenced block.
    """
    text = chunks.text
    found = [m.start() + 1 for m in _BLOCKISH.finditer(text, chunks.first)]
    if _FIRST_BLOCKISH.match(text, chunks.first):
        found.insert(0, chunks.first)
    blocky: dict[int, int] = {}  # start -> end of each chunk that may hold blocks
    fenced: dict[tuple[int, int], list[tuple[int, int]]] = {}
    end = -1
    for position in found:
        if position < end:
            continue  # (in the chunk just read)
        start, end = chunks.around(position)
        read = None if text[start] in " \t" else _fenced_paragraphs(text, start, end)
        if read is None:
            blocky[start] = end
        else:
            fenced[(start, end)] = read
    runs: list[tuple[int, int]] = []
    for start, end in blocky.items():
        if runs and start < runs[-1][1]:
            continue
        following = chunks.after(end)
        while following < len(text) and (text[following] in " \t" or following in blocky):
            end = blocky.get(following) or chunks.end(following)
            following = chunks.after(end)
        runs.append((start, end))
    return runs, fenced


def _parse_runs(text: str, runs: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], int]:
    """The code of the runs, from one parse, and where the text was parsed whole from (a run left a
    fenced block open: from it on, the text is parsed at once); past the end when nowhere."""
    found = _parse_apart([text[start:end] for start, end in runs])
    code: list[tuple[int, int]] = []
    for (start, _), regions in zip(runs, found, strict=False):
        if regions is None:
            # That fenced block goes on into the text after the run: from the run on, one parse.
            code += [(a + start, b + start) for a, b in code_and_blocks(Parsed(text[start:]))[0]]
            return code, start
        code += [(a + start, b + start) for a, b in regions]
    return code, len(text) + 1


def _parse_apart(texts: list[str]) -> list[list[tuple[int, int]] | None]:
    """The code of each of `texts` (runs of chunks), in one parse (markdown-it-py costs ~0.1 ms a call):
    joined with a plain paragraph between them, which closes all they leave open but a fenced
    block. Stops at the first that leaves a fenced block open (None there: its code reaches past it)."""
    if not texts:
        return []
    at = list(accumulate((len(part) + len(_RUN_SEPARATOR) for part in texts[:-1]), initial=0))
    found: list[list[tuple[int, int]] | None] = [[] for _ in texts]
    for a, b in code_and_blocks(Parsed("".join(part + _RUN_SEPARATOR for part in texts)))[0]:
        i = bisect_right(at, a) - 1
        if b > at[i] + len(texts[i]):
            found[i] = None
            return found[: i + 1]
        found[i].append((a - at[i], b - at[i]))  # type: ignore[union-attr]
    return found


def _paragraph_code(
    chunks: _Chunks,
    runs: list[tuple[int, int]],
    fenced: dict[tuple[int, int], list[tuple[int, int]]],
    tail: int,
) -> list[tuple[int, int]]:
    """The code spans of the paragraph chunks holding a backtick (the chunks neither parsed nor read
    with their fences)."""
    text = chunks.text
    done = sorted([*runs, *fenced])  # chunks whose code is known already
    k = 0
    end = -1
    code: list[tuple[int, int]] = []
    for tick in _TICK.finditer(text, chunks.first, tail):
        position = tick.start()
        if position < end:
            continue
        while k < len(done) and done[k][1] <= position:
            k += 1
        if k < len(done) and done[k][0] <= position:
            end = done[k][1]
            continue
        start, end = chunks.around(position)
        if text.count("`", start, end) == 2 and text.find("\\", start, end) < 0:
            # (The common case, one code span: two lone backticks and no escape. `position` is the first.)
            second = text.find("`", position + 1, end)
            if second > position + 1:
                code.append((position, second + 1))
                continue
        lines = text[start:end].split("\n")
        code += _paragraph_spans(
            text, lines, list(accumulate((len(line) + 1 for line in lines[:-1]), initial=start))
        )
    return code


def _paragraph_spans(text: str, lines: list[str], starts: list[int]) -> list[tuple[int, int]]:
    """The code spans of a paragraph made of `lines` (`starts`: where each begins in `text`)."""
    content = "\n".join(lines).strip(MD_TRIM_CHARS)
    if "`" not in content:
        return []
    return pair_block(text, located(content, lines, starts), False)[0]


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
        code.extend(_paragraph_spans(text, [line for _, line in paragraph], [at for at, _ in paragraph]))
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
    old: str,
    new: str,
    edits: list[tuple[int, int, int]],
    joins: list[int],
    layout: Layout,
    moved: Callable[[int], int],
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
    code they gave, moved by the edits. `joins`: where each removal joined `new`, in order;
    `layout` is chunked_layout(old) (strip cut `old` with it); `moved` is mover(edits).
    """
    run_starts = [start for start, _ in layout.runs]
    affected: dict[int, None] = {}  # the runs holding a removal
    removals = [start for start, _, size in edits if not size]
    for start, join in zip(removals, joins, strict=True):
        if start >= layout.tail or not _join_keeps_its_line(new, join):
            return False
        run = bisect_right(run_starts, start) - 1 if run_starts else -1
        if run >= 0 and start < layout.runs[run][1]:
            affected[run] = None
        elif (join and new[join - 1] in "\\`") or new.startswith("`", join):
            return False
    runs = [layout.runs[run] for run in affected]
    regions = layout.regions
    for (start, end), got in zip(
        runs, _parse_apart([new[moved(a) : moved(b)] for a, b in runs]), strict=False
    ):
        base = moved(start)
        was = regions[bisect_left(regions, (start, -1)) : bisect_left(regions, (end, -1))]
        if got != [(moved(a) - base, moved(b) - base) for a, b in was]:
            return False  # (None: a fenced block left open)
    return True


def _join_keeps_its_line(new: str, join: int) -> bool:
    """Whether a removal that joined `new` at `join` left its line as it was for blocks: not blank,
    and, where it is at the line's start, not starting as a block may nor a chunk's first line."""
    if join and new[join - 1] not in " \t\n":
        return True  # (the common case: after other text on its line)
    line = new.rfind("\n", 0, join) + 1
    if new[line:join].strip(" \t"):
        return True
    end = new.find("\n", join)
    return not (
        line == 0
        or not new[line : end if end >= 0 else len(new)].strip(" \t")
        or _FIRST_BLOCKISH.match(new, line)
        or not new[new.rfind("\n", 0, line - 1) + 1 : line - 1].strip(" \t")  # a first line
    )


def lines_removed_keep_code(text: str, removed: list[tuple[int, int]]) -> bool:
    """Whether removing these whole lines of `text` (each from a line's start through its line break,
    or to the end; in order), lines holding no backtick, "|" or "\r", leaves code where it was,
    only moved along (normalize's removed footnote definitions).

    A sufficient rule. Lines next to each other go as one stretch, which keeps
    code where the line before it is a plain paragraph line (not blank, not
    starting as a block may, without "|"): the stretch continued that
    paragraph, and what follows it continues it, or interrupts it, as it did.
    Or where the stretch starts the text or follows a blank line, and the line
    after it is missing, or unindented and plain, or blank with the first line
    not blank after it unindented: nothing the stretch's paragraph closed
    (a list, a quote) can take the lines after it in.
    """
    stretches: list[tuple[int, int]] = []
    for start, end in removed:
        if stretches and stretches[-1][1] == start:
            stretches[-1] = (stretches[-1][0], end)
        else:
            stretches.append((start, end))
    for start, end in stretches:
        if start:
            line = text.rfind("\n", 0, start - 1) + 1
            if text[line : start - 1].strip(" \t"):
                if _plain_line(text, line, start - 1):
                    continue
                return False
        after = _LEADING_BLANKS.match(text, end).end()  # type: ignore[union-attr]
        if after < len(text) and (
            text[after] in " \t" or (after == end and not _plain_line(text, end, text.find("\n", end)))
        ):
            return False
    return True


def _plain_line(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] (a line; `end` -1: to the end) is a plain paragraph line: not blank,
    not starting as a block other than a paragraph may, without "|"."""
    line = text[start:] if end < 0 else text[start:end]
    return bool(line.strip(" \t")) and "|" not in line and _FIRST_BLOCKISH.match(line) is None


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
