"""A source's excerpt as the Sources list shows it: a window of it, with the passages that back
the answer marked (pure).

The excerpt is first made readable (`readable`): Markdown reduced to its text (headings',
quotes' and bullets' marks, emphasis and code marks, link and image syntax, backslash escapes
dropped), table rules (`|---|`, `+-----+`) dropped, table pipes and every run of whitespace read
as one space. Passages (offsets into the stored excerpt) follow their text.

Without a passage, the text's first 200 characters (less, to end at a word, and an ellipsis when longer).
With passages (offsets into the excerpt: native-citation quotes found in it, the support
record's backing passages), the window starts at the excerpt's start when the first of them
ends within 200 characters, else a little (at most 40 characters) before it, at a word; it
runs for 200 characters or to that passage's end (at most 400), then back to the last word's end
(within 40 characters). Each passage within is marked, clipped at the window's edges, with an
ellipsis where the window cuts the excerpt.

answers/static/answers/excerpts.js builds the same pieces in the page (native quotes at `done`):
both must give the pieces of one table, tests/fixtures/excerpt_cases.json (tests/unit/test_excerpts.py
runs it here, tests/browser/test_source_quotes.py in the page).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from answers.support.passages import quote_span

LIMIT = 200
CONTEXT = 40  # characters shown before the first passage, at most
ELLIPSIS = "…"
_BREAKS = frozenset(" \t\n\r")

Span = tuple[int, int]

# What `readable` drops, each as a regex whose matched text goes (a group, when there is one, stays).
_TABLE_RULE = re.compile(r"^[ \t]*[|+]?[-=:+| \t]*[-=]{3,}[-=:+| \t]*(?:\n|$)", re.M)
_LINE_MARKS = re.compile(r"^[ \t]*(?:#{1,6}[ \t]+|>[ \t]?|[-*+][ \t]+)", re.M)
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]*\)")
# Emphasis, strike-through and code spans go by pairs (a lone `*` or `_`, as in `__init__` or
# `2 * 3`, is text); an underscore pair only around a word, as CommonMark reads it.
_PAIRED_MARKS = re.compile(r"(?<!\\)(\*{1,3}|~~|`+)(?=\S)([^\n]*?\S)\1")
_PAIRED_UNDERSCORES = re.compile(r"(?<![\\0-9A-Za-z_])(_{1,3})(?=\S)([^\n]*?\S)\1(?![0-9A-Za-z_])")
_ESCAPE = re.compile(r"\\(?=[\\`*_{}\[\]()#+\-.!|])")
_SPACE = " \t\n\r\f\v|"


def readable(excerpt: str) -> tuple[str, list[int]]:
    """The excerpt as a reader reads it (see the module docstring), and where each of its characters
    was in the excerpt (one more entry, for an end offset: the excerpt's length)."""
    keep = [True] * len(excerpt)

    def drop(start: int, end: int) -> None:
        keep[start:end] = [False] * (end - start)

    for found in _TABLE_RULE.finditer(excerpt):
        drop(found.start(), found.end())
    for found in _LINE_MARKS.finditer(excerpt):
        drop(found.start(), found.end())
    for found in _LINK.finditer(excerpt):
        drop(found.start(), found.start(1))
        drop(found.end(1), found.end())
    for pattern in (_PAIRED_MARKS, _PAIRED_UNDERSCORES):
        for found in pattern.finditer(excerpt):
            drop(found.start(1), found.end(1))
            drop(found.end(2), found.end())
    for found in _ESCAPE.finditer(excerpt):
        drop(found.start(), found.end())
    chars: list[str] = []
    where: list[int] = []
    for index, char in enumerate(excerpt):
        if not keep[index]:
            continue
        if char in _SPACE:
            if chars and chars[-1] != " ":
                chars.append(" ")
                where.append(index)
            continue
        chars.append(char)
        where.append(index)
    while chars and chars[-1] == " ":
        chars.pop()
        where.pop()
    where.append(len(excerpt))
    return "".join(chars), where


def _moved(span: Sequence[int], where: list[int]) -> Span:
    """A span of the excerpt as a span of its readable text: the readable characters it holds."""
    last = len(where) - 1
    return min(bisect_left(where, int(span[0])), last), min(bisect_left(where, int(span[1])), last)


def _word_end(text: str, end: int, floor: int) -> int:
    """`end` moved back (at most CONTEXT characters, never to `floor` or before) to a break between words."""
    if end >= len(text) or text[end] in _BREAKS:
        return end
    for i in range(end - 1, max(floor, end - CONTEXT), -1):
        if text[i] in _BREAKS:
            return i
    return end


@dataclass(frozen=True)
class Piece:
    text: str
    marked: bool


def quote_spans(excerpt: str, quotes: Iterable[str]) -> list[Span]:
    """Where each quote is in the excerpt (whitespace matched loosely); quotes not found are left out."""
    return [span for quote in quotes if (span := quote_span(excerpt, quote)) is not None]


def _merged(spans: Iterable[Sequence[int]], length: int) -> list[Span]:
    clipped = sorted((max(0, int(s[0])), min(length, int(s[1]))) for s in spans)
    merged: list[Span] = []
    for start, end in clipped:
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def excerpt_pieces(excerpt: str, spans: Iterable[Sequence[int]] = (), limit: int = LIMIT) -> list[Piece]:
    """The excerpt's window as pieces of text, marked or not (see the module docstring)."""
    excerpt, where = readable(excerpt)
    length = len(excerpt)
    passages = _merged((_moved(span, where) for span in spans), length)
    if not passages:
        if not excerpt:
            return []
        if length <= limit:
            return [Piece(excerpt, False)]
        return [Piece(excerpt[: _word_end(excerpt, limit - 1, 0)].rstrip(" ") + ELLIPSIS, False)]
    first_start, first_end = passages[0]
    start = 0
    if first_end > limit and first_start > CONTEXT:
        gap = range(first_start - CONTEXT, first_start)
        start = next((i + 1 for i in gap if excerpt[i] in _BREAKS), first_start)
    end = min(length, max(start + limit, min(first_end, start + 2 * limit)))
    end = _word_end(excerpt, end, start)
    pieces: list[Piece] = [Piece(ELLIPSIS, False)] if start > 0 else []
    position = start
    for passage_start, passage_end in passages:
        if passage_start >= end:
            break
        a, b = max(passage_start, start), min(passage_end, end)
        if a > position:
            pieces.append(Piece(excerpt[position:a], False))
        if b > a:
            pieces.append(Piece(excerpt[a:b], True))
        position = max(position, b)
    if position < end:
        pieces.append(Piece(excerpt[position:end], False))
    if end < length:
        if pieces and not pieces[-1].marked:
            pieces[-1] = Piece(pieces[-1].text.rstrip(" "), False)
        pieces.append(Piece(ELLIPSIS, False))
    return _joined([piece for piece in pieces if piece.text])


def _joined(pieces: list[Piece]) -> list[Piece]:
    """Neighbouring pieces of the same kind as one."""
    out: list[Piece] = []
    for piece in pieces:
        if out and out[-1].marked == piece.marked:
            out[-1] = Piece(out[-1].text + piece.text, piece.marked)
        else:
            out.append(piece)
    return out
