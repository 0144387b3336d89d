"""Split a document's body into passages that follow its headings and paragraphs (pure, no Django).

A chunk is a slice of the body (`body[start:end] == text`) under one heading.
Paragraphs are packed together up to a size target; a paragraph over the target
is split between sentences, never inside one, so any excerpt reads well when
quoted. Only a single "sentence" longer than `hard_max_chars` (a long code block
or table without sentence ends) is split further, at line breaks, then spaces.

Headings recognised: Markdown ATX lines (`# Title`) and underlined (setext /
reStructuredText) titles: a line followed by a line of `=`, `-`, `*`, `~` or `^`
at least as long as most of the title (the demo corpus uses those).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

DEFAULT_TARGET_CHARS = 900

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_UNDERLINE = re.compile(r"^ {0,3}([=\-*~^])\1{2,}[ \t]*$")
_BLANK_LINES = re.compile(r"\n[ \t]*\n")
# A sentence ends at . ! ? (optionally followed by closing quotes or brackets)
# before whitespace and something that can start a sentence...
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s+[\"'“‘(\[]?[A-Z0-9])")
# ... but not after a common abbreviation ("e.g.") or an initial ("J. Smith").
_ABBREVIATIONS = frozenset(
    [
        "e.g",
        "i.e",
        "etc",
        "cf",
        "vs",
        "al",
        "approx",
        "dr",
        "mr",
        "mrs",
        "ms",
        "no",
        "fig",
        "sec",
        "ch",
        "vol",
        "pp",
        "resp",
        "incl",
        "esp",
        "viz",
        "st",
        "jr",
        "sr",
    ]
)


@dataclass(frozen=True)
class ChunkSpec:
    """One passage: the heading it sits under, its text and its offsets in the body."""

    heading: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class _Span:
    start: int
    end: int


def _lines(body: str) -> list[tuple[int, str]]:
    """Each line with the offset where it starts (without its newline)."""
    out: list[tuple[int, str]] = []
    offset = 0
    for line in body.split("\n"):
        out.append((offset, line))
        offset += len(line) + 1
    return out


def _sections(body: str) -> Iterator[tuple[str, int, int]]:
    """(heading, start, end) of each stretch of body between headings."""
    lines = _lines(body)
    heading = ""
    start = 0
    i = 0
    while i < len(lines):
        offset, line = lines[i]
        atx = _ATX.match(line)
        if atx:
            yield heading, start, offset
            heading = atx.group(2).strip()
            start = offset + len(line) + 1
            i += 1
            continue
        if line.strip() and i + 1 < len(lines):
            under_offset, under = lines[i + 1]
            underline = _UNDERLINE.match(under)
            title = line.strip()
            if underline and len(under.strip()) >= max(3, len(title) // 2) and len(title) <= 200:
                yield heading, start, offset
                heading = title
                start = under_offset + len(under) + 1
                i += 2
                continue
        i += 1
    yield heading, start, len(body)


def _strip(body: str, start: int, end: int) -> _Span | None:
    """The span without surrounding whitespace, or None when nothing is left."""
    end = min(end, len(body))
    while start < end and body[start].isspace():
        start += 1
    while end > start and body[end - 1].isspace():
        end -= 1
    return _Span(start, end) if start < end else None


def _paragraphs(body: str, start: int, end: int) -> Iterator[_Span]:
    cursor = start
    for match in _BLANK_LINES.finditer(body, start, end):
        span = _strip(body, cursor, match.start())
        if span:
            yield span
        cursor = match.end()
    span = _strip(body, cursor, end)
    if span:
        yield span


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) of each sentence of plain prose `text[start:end]`, whitespace trimmed.

    A sentence ends after its closing punctuation and any quotes or brackets closing with it,
    before whitespace and something that can start a sentence; not after a common abbreviation
    ("e.g.") or an initial. The one rule for a sentence of a source's text: chunking cuts a long
    paragraph between them, and the extractive answerer quotes them
    (providers.extractive.split_sentences). An answer's own text, with its markers and Markdown,
    is split by support.sentences instead (its docstring says why).
    """
    stop = len(text) if end is None else end
    cuts = [start]
    for match in _SENTENCE_END.finditer(text, start, stop):
        before = text[cuts[-1] : match.start()].rsplit(None, 1)
        last_word = (before[-1] if before else "").rstrip(".").lstrip("(\"'“‘")
        if last_word.lower() in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isupper()):
            continue
        cuts.append(match.end())
    cuts.append(stop)
    return [(span.start, span.end) for a, b in itertools.pairwise(cuts) if (span := _strip(text, a, b))]


def _split_at(body: str, span: _Span, pattern: re.Pattern[str]) -> list[_Span]:
    pieces: list[_Span] = []
    cursor = span.start
    for match in pattern.finditer(body, span.start, span.end):
        piece = _strip(body, cursor, match.start())
        if piece:
            pieces.append(piece)
        cursor = match.end()
    piece = _strip(body, cursor, span.end)
    if piece:
        pieces.append(piece)
    return pieces


def _sentences(body: str, span: _Span, hard_max: int) -> list[_Span]:
    """Sentences of a paragraph; a sentence over hard_max splits at lines, then spaces."""
    out: list[_Span] = []
    for sentence in (_Span(a, b) for a, b in sentence_spans(body, span.start, span.end)):
        if sentence.end - sentence.start <= hard_max:
            out.append(sentence)
            continue
        for line in _split_at(body, sentence, re.compile(r"\n")):
            if line.end - line.start <= hard_max:
                out.append(line)
                continue
            out.extend(_hard_split(body, line, hard_max))
    return out


def _hard_split(body: str, span: _Span, hard_max: int) -> list[_Span]:
    """Last resort for text with no sentence or line ends: cut at the last space before the limit."""
    out: list[_Span] = []
    start = span.start
    while span.end - start > hard_max:
        cut = body.rfind(" ", start + 1, start + hard_max)
        if cut <= start:
            cut = start + hard_max
        piece = _strip(body, start, cut)
        if piece:
            out.append(piece)
        start = cut
    piece = _strip(body, start, span.end)
    if piece:
        out.append(piece)
    return out


def _pack(units: list[_Span], target: int) -> list[_Span]:
    """Greedy packing of consecutive units into spans of about `target` characters."""
    packed: list[_Span] = []
    current: _Span | None = None
    for unit in units:
        if current is None:
            current = unit
        elif unit.end - current.start <= target:
            current = _Span(current.start, unit.end)
        else:
            packed.append(current)
            current = unit
    if current is not None:
        packed.append(current)
    # A tiny tail reads badly alone: fold it into the previous span when that stays reasonable.
    if len(packed) >= 2:
        last, before = packed[-1], packed[-2]
        if last.end - last.start < target // 4 and last.end - before.start <= target * 3 // 2:
            packed[-2:] = [_Span(before.start, last.end)]
    return packed


def chunk_text(
    body: str, *, target_chars: int = DEFAULT_TARGET_CHARS, hard_max_chars: int | None = None
) -> list[ChunkSpec]:
    """The body's chunks in order; each is `body[start:end]` under its nearest heading."""
    if target_chars < 1:
        raise ValueError("target_chars must be positive")
    hard_max = hard_max_chars if hard_max_chars is not None else target_chars * 4
    chunks: list[ChunkSpec] = []
    for heading, start, end in _sections(body):
        units: list[_Span] = []
        for paragraph in _paragraphs(body, start, end):
            if paragraph.end - paragraph.start <= target_chars:
                units.append(paragraph)
            else:
                units.extend(_pack(_sentences(body, paragraph, hard_max), target_chars))
        for span in _pack(units, target_chars):
            chunks.append(ChunkSpec(heading, body[span.start : span.end], span.start, span.end))
    return chunks
