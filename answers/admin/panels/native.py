"""The native citations panel: the raw text with each span a provider's citation names marked, and each
citation as the provider gave it (`Answer.native`, docs/howto/providers.md).

Records differ by provider; what is marked is read generically: a record's `span_at` (the cited
span in the raw text, where the provider names spans: cohere) and its `marker_at` (where its
marker's "[" is in the raw text: every native provider, mistral's records only that). Spans may
overlap, so the raw text is cut at every edge and each piece says which citations cover it. A
record whose offsets do not fit the stored raw text is listed but marks nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from answers.models import Answer


@dataclass(frozen=True)
class Piece:
    """A stretch of the raw text and the citations (numbered from 1, in record order) covering it."""

    text: str
    spans: tuple[int, ...] = ()
    markers: tuple[int, ...] = ()


@dataclass(frozen=True)
class Row:
    number: int
    record: dict[str, Any]
    span: str | None  # the raw text the citation's span covers, when the record names one
    marker: str | None  # its marker as written in the raw text


@dataclass(frozen=True)
class NativePanel:
    pieces: list[Piece]
    rows: list[Row]


def _offset(value: Any, length: int) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= length else None


def _ranges(record: dict[str, Any], raw: str) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """The record's span and marker as ranges of `raw`, each None when it names none that fits."""
    span = None
    span_at = record.get("span_at")
    if isinstance(span_at, list) and len(span_at) == 2:
        start, end = (_offset(v, len(raw)) for v in span_at)
        if start is not None and end is not None and start < end:
            span = (start, end)
    marker = None
    at = _offset(record.get("marker_at"), len(raw))
    if at is not None and raw.startswith("[", at) and (close := raw.find("]", at)) >= 0:
        marker = (at, close + 1)
    return span, marker


def native_panel(answer: Answer) -> NativePanel:
    """The raw text cut into pieces by the citations' spans and markers, and one row per citation."""
    raw = answer.raw_text
    records = [r for r in answer.native if isinstance(r, dict)]
    spans: list[tuple[int, int, int]] = []
    markers: list[tuple[int, int, int]] = []
    rows = []
    for number, record in enumerate(records, start=1):
        span, marker = _ranges(record, raw)
        if span is not None:
            spans.append((*span, number))
        if marker is not None:
            markers.append((*marker, number))
        rows.append(
            Row(
                number,
                record,
                raw[span[0] : span[1]] if span else None,
                raw[marker[0] : marker[1]] if marker else None,
            )
        )
    edges = sorted({0, len(raw), *(e for s, t, _ in spans + markers for e in (s, t))})
    pieces = [
        Piece(
            raw[start:end],
            tuple(n for s, t, n in spans if s <= start and end <= t),
            tuple(n for s, t, n in markers if s <= start and end <= t),
        )
        for start, end in pairwise(edges)
        if start < end
    ]
    return NativePanel(pieces if records else [], rows)
