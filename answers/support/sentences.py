"""Split a final answer text into sentences outside fenced code, with offsets and cited numbers (pure).

The unit the support check judges. The rules, in the order they apply:

- Fenced code blocks (docs/citations.md's definition, found by the citation core) are
  not prose: no sentence includes any of their characters.
- The prose between them falls into blocks: a blank line ends a block, and a
  line that opens a Markdown block (a heading `#`, a list item `-`/`*`/`+`/`1.`/
  `1)`, a quote `>`, a table row `|`) starts one; the line after a heading too.
- Inside a block, a sentence ends after `.`, `!` or `?` (with any closing quotes,
  brackets or emphasis right after) followed by whitespace or the block's end;
  not inside an inline code span, not after a common abbreviation (`e.g.`,
  `i.e.`, `etc.`, ...), not after a list item's own number (`1. `).
- A citation marker that follows a sentence's closing punctuation belongs to that
  sentence (`Foo. [1] Bar.`: `Foo. [1]`), even across a single line break.
- A sentence is trimmed of surrounding whitespace; a piece with no letter or
  digit outside its markers (a lone `[1]`, a rule `---`) joins the sentence
  before it in the same stretch of prose (else the one after).

So sentences never overlap, appear in text order, and together cover every
character of the text outside fenced code blocks that is not whitespace.

Why a splitter of its own: a source's plain prose is split by one rule
(answers.retrieval.chunking.sentence_spans, which chunking and the extractive
answerer share); this one splits the answer's own Markdown, whose markers, code
spans and list items that rule knows nothing of, and the support records stored
for every answer are keyed by its offsets: changing it would change what every
stored record's sentences are.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from answers.citations import Marker, scan_markers
from answers.citations.code import code_regions

_FENCES = ("```", "~~~")
_BLOCK_START = re.compile(r"[ \t]*(?:#{1,6}(?:[ \t]|$)|[-*+][ \t]|\d{1,9}[.)](?:[ \t]|$)|>|\|)")
_HEADING = re.compile(r"[ \t]*#{1,6}(?:[ \t]|$)")
# Closing punctuation, then whitespace, the end, or a bracket (a marker written right after it).
_END = re.compile(r"[.!?]+[)\"'”’*_]*(?=\s|$|\[)")
_WORD = re.compile(r"[^\W_]")
_LIST_NUMBER = re.compile(r"[ \t]*\d{1,9}$")
_ABBREVIATIONS = frozenset(["e.g", "i.e", "etc", "vs", "cf", "al", "approx", "mr", "mrs", "ms", "dr"])
_ABBREVIATION_BEFORE = re.compile(r"([A-Za-z](?:\.[A-Za-z])*|[A-Za-z]+)$")


@dataclass(frozen=True)
class Sentence:
    """One sentence of the final text: `text == final_text[start:end]`."""

    start: int
    end: int
    text: str
    cited: tuple[int, ...]  # members of its markers, in written order, repeats removed
    body: str  # the text with its markers blanked out: what the support methods read


def _code_kinds(text: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(fenced blocks, inline spans) among the citation core's code ranges.

    A line that starts with ``` or ~~~ always opens a fence (fences are found
    first), so a code range starting so at a line start is a fenced block.
    """
    fenced: list[tuple[int, int]] = []
    inline: list[tuple[int, int]] = []
    for start, end in code_regions(text):
        at_line_start = start == 0 or text[start - 1] == "\n"
        (fenced if at_line_start and text.startswith(_FENCES, start) else inline).append((start, end))
    return fenced, inline


def _stretches(text: str, fenced: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The stretches of prose between fenced code blocks."""
    out = []
    prose = 0
    for start, end in fenced:
        out.append((prose, start))
        prose = end
    out.append((prose, len(text)))
    return [(a, b) for a, b in out if a < b]


def _blocks(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """Markdown-ish blocks of text[a:b]: split at blank lines, block openers and after headings."""
    blocks = []
    block_start = a
    after_heading = False
    pos = a
    while pos < b:
        newline = text.find("\n", pos, b)
        line_end = b if newline < 0 else newline
        line = text[pos:line_end]
        starts_block = not line.strip() or bool(_BLOCK_START.match(line)) or after_heading
        if starts_block and pos > block_start:
            blocks.append((block_start, pos))
            block_start = pos
        after_heading = bool(_HEADING.match(line))
        pos = line_end + 1
    blocks.append((block_start, b))
    return blocks


class _Spans:
    """Inline code spans, asked whether they hold an index (bisect: a long text stays linear)."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.spans = spans
        self.starts = [start for start, _ in spans]

    def holds(self, index: int) -> bool:
        i = bisect_right(self.starts, index) - 1
        return i >= 0 and self.spans[i][0] <= index < self.spans[i][1]


def _is_abbreviation_or_list_number(text: str, block_start: int, dot: int) -> bool:
    """Whether the period at `dot` ends an abbreviation or a list item's number, not a sentence."""
    if text[dot] != ".":
        return False
    # Both fit in the dozen characters before the period: looking no further keeps this constant.
    near = max(block_start, dot - 12)
    newline = text.rfind("\n", near, dot)
    line_start = newline + 1 if newline >= 0 else (block_start if near == block_start else None)
    if line_start is not None and _LIST_NUMBER.fullmatch(text, line_start, dot):
        return True
    found = _ABBREVIATION_BEFORE.search(text, near if line_start is None else line_start, dot)
    return found is not None and found.group(1).lower() in _ABBREVIATIONS


def _after_markers(text: str, end: int, block_end: int, marker_at: dict[int, Marker]) -> int:
    """`end` moved past the markers (and the whitespace between them) that follow it in the block."""
    pos = end
    while True:
        nxt = pos
        while nxt < block_end and text[nxt] in " \t\r\n":
            nxt += 1
        marker = marker_at.get(nxt)
        if marker is None or marker.end > block_end:
            return end
        pos = end = marker.end


def _pieces(
    text: str, block: tuple[int, int], marker_at: dict[int, Marker], code: _Spans
) -> list[tuple[int, int]]:
    """(start, end) of each sentence of one block, untrimmed."""
    a, b = block
    pieces = []
    start = a
    pos = a
    while True:
        found = _END.search(text, pos, b)
        if found is None:
            break
        pos = found.end()
        if pos < b and text[pos] == "[" and pos not in marker_at:
            continue  # "3.[x]": not a sentence end
        if code.holds(found.start()) or _is_abbreviation_or_list_number(text, a, found.start()):
            continue
        end = _after_markers(text, found.end(), b, marker_at)
        pieces.append((start, end))
        start = pos = end
    pieces.append((start, b))
    return pieces


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


class _Markers:
    """The text's markers, found by where they start (bisect: a long text stays linear)."""

    def __init__(self, markers: list[Marker]) -> None:
        self.markers = markers
        self.starts = [m.start for m in markers]
        self.at = {m.start: m for m in markers}

    def within(self, start: int, end: int) -> list[Marker]:
        found = self.markers[bisect_left(self.starts, start) : bisect_left(self.starts, end)]
        return [m for m in found if m.end <= end]


def _has_words(text: str, start: int, end: int, markers: _Markers) -> bool:
    return bool(_WORD.search(_blank_markers(text, start, end, markers.within(start, end))))


def _blank_markers(text: str, start: int, end: int, inside: list[Marker]) -> str:
    """text[start:end] with each of the markers inside it replaced by spaces (offsets kept)."""
    out = []
    pos = start
    for marker in inside:
        out.append(text[pos : marker.start])
        out.append(" " * (marker.end - marker.start))
        pos = marker.end
    out.append(text[pos:end])
    return "".join(out)


def _merge_wordless(text: str, spans: list[tuple[int, int]], markers: _Markers) -> list[tuple[int, int]]:
    """Join each piece without a word to its neighbour (before it, else after it)."""
    merged: list[tuple[int, int]] = []
    pending: int | None = None  # start of wordless pieces waiting for a following sentence
    for start, end in spans:
        if _has_words(text, start, end, markers):
            merged.append((pending if pending is not None else start, end))
            pending = None
        elif merged:
            merged[-1] = (merged[-1][0], end)
        elif pending is None:
            pending = start
    if pending is not None:
        # Nothing with words in this stretch: the wordless run stands alone.
        merged.append((pending, spans[-1][1]))
    return merged


def split_sentences(text: str, markers_of_text: list[Marker] | None = None) -> list[Sentence]:
    """The sentences of `text` outside fenced code blocks, in order (see the module docstring).

    `markers_of_text`: the text's markers when they are known (a stored answer's, from its trail:
    citations.trail.final_markers()); else the text is scanned.
    """
    markers = _Markers(scan_markers(text) if markers_of_text is None else markers_of_text)
    fenced, inline = _code_kinds(text)
    code = _Spans(inline)
    sentences = []
    for a, b in _stretches(text, fenced):
        spans = []
        for block in _blocks(text, a, b):
            for start, end in _pieces(text, block, markers.at, code):
                trimmed = _trim(text, start, end)
                if trimmed is not None:
                    spans.append(trimmed)
        if not spans:
            continue
        for start, end in _merge_wordless(text, spans, markers):
            inside = markers.within(start, end)
            cited = tuple(dict.fromkeys(n for m in inside for n in m.members))
            sentences.append(
                Sentence(
                    start=start,
                    end=end,
                    text=text[start:end],
                    cited=cited,
                    body=_blank_markers(text, start, end, inside),
                )
            )
    return sentences
