"""A source's excerpt as the Sources list shows it: a window of it, with the passages that back
the answer marked (pure).

Without a passage, the excerpt's first 200 characters (199 and an ellipsis when longer).
With passages (offsets into the excerpt: native-citation quotes found in it, the support
record's backing passages), the window starts at the excerpt's start when the first of them
ends within 200 characters, else a little (at most 40 characters) before it, at a word; it
runs for 200 characters or to that passage's end (at most 400). Each passage within is marked,
clipped at the window's edges, with an ellipsis where the window cuts the excerpt.

answers/static/answers/excerpts.js builds the same pieces in the page (native quotes at `done`):
keep the two alike (tests/browser/test_source_quotes.py compares them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from answers.support.passages import quote_span

LIMIT = 200
CONTEXT = 40  # characters shown before the first passage, at most
ELLIPSIS = "…"
_BREAKS = frozenset(" \t\n\r")

Span = tuple[int, int]


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
    length = len(excerpt)
    passages = _merged(spans, length)
    if not passages:
        if not excerpt:
            return []
        return [Piece(excerpt if length <= limit else excerpt[: limit - 1] + ELLIPSIS, False)]
    first_start, first_end = passages[0]
    start = 0
    if first_end > limit and first_start > CONTEXT:
        gap = range(first_start - CONTEXT, first_start)
        start = next((i + 1 for i in gap if excerpt[i] in _BREAKS), first_start)
    end = min(length, max(start + limit, min(first_end, start + 2 * limit)))
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
        pieces.append(Piece(ELLIPSIS, False))
    return _joined(pieces)


def _joined(pieces: list[Piece]) -> list[Piece]:
    """Neighbouring pieces of the same kind as one."""
    out: list[Piece] = []
    for piece in pieces:
        if out and out[-1].marked == piece.marked:
            out[-1] = Piece(out[-1].text + piece.text, piece.marked)
        else:
            out.append(piece)
    return out
