"""The sources panel: each retrieved source with its stored outcome, and what the support record
says of it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from answers.admin.panels.support import record_grounding, record_sentences
from answers.models import AnswerSource
from answers.rendering import link_url


@dataclass(frozen=True)
class SourceSupport:
    """A final source in the support record: its lowest score among the sentences citing it."""

    lowest: float | None  # None: no sentence of the record cites it (a fallback answer, say)
    sentences: tuple[int, ...]  # the sentences (numbered from 1) that cite it, in order
    lowest_in: int  # the sentence with the lowest score (0 when none)
    min_score: float  # the record's bar

    @property
    def below_bar(self) -> bool:
        return self.lowest is not None and self.lowest < self.min_score

    @property
    def where(self) -> str:
        """ "sentence 2" / "sentence 2 of 1, 2 and 3": where the lowest score is, among those citing it."""
        if len(self.sentences) <= 1:
            return f"sentence {self.lowest_in}"
        numbers = [str(n) for n in self.sentences]
        return f"sentence {self.lowest_in}, of {', '.join(numbers[:-1])} and {numbers[-1]} citing it"


@dataclass(frozen=True)
class SourceRow:
    """One retrieved source on the answer page, with its outcome as the AnswerSource row stores it."""

    source: AnswerSource
    link: str | None  # the URL when it may become a link
    relied_on_by: tuple[int, ...] = ()  # uncited sentences (numbered from 1) it grounds (support record)
    support: SourceSupport | None = None  # a final source's support; None: no record (or not in the list)

    @property
    def relied_on(self) -> str:
        """ "sentence 3 relies" / "sentences 2 and 3 rely": what the page says beside "dropped"."""
        numbers = [str(n) for n in self.relied_on_by]
        if len(numbers) == 1:
            return f"sentence {numbers[0]} relies"
        return f"sentences {', '.join(numbers[:-1])} and {numbers[-1]} rely"

    @property
    def pending(self) -> bool:
        return self.source.status == AnswerSource.Status.PENDING

    @property
    def dropped(self) -> bool:
        return self.source.status == AnswerSource.Status.DROPPED

    @property
    def renumbered(self) -> bool:
        return self.source.renumbered


def source_rows(sources: Sequence[AnswerSource], support: Any = None) -> list[SourceRow]:
    """The sources panel's rows; with the answer's support record, which uncited sentences each grounds
    and, for each source of the final list, its support (the lowest score of the sentences citing it:
    shown beside readers' flags, so a reviewer sees whether the check agrees with the reader)."""
    relied = record_grounding(support)
    supports = _support_by_final(support)
    return [
        SourceRow(
            source=s,
            link=link_url(s.url),
            relied_on_by=tuple(relied.get(s.original_number, ())),
            support=supports(s.final_number) if s.final_number is not None else None,
        )
        for s in sources
    ]


def _support_by_final(support: Any) -> Callable[[int], SourceSupport | None]:
    """final number -> its SourceSupport, or always None without a stored record."""
    if not isinstance(support, dict) or not isinstance(support.get("sentences"), list):
        return lambda final: None
    bar = support.get("min_score")
    min_score = float(bar) if isinstance(bar, (int, float)) else 0.0
    scored: dict[int, list[tuple[float, int]]] = {}
    for index, sentence in enumerate(record_sentences(support), start=1):
        for key, score in sentence["scores"].items():
            if str(key).isdigit() and isinstance(score, (int, float)) and not isinstance(score, bool):
                scored.setdefault(int(key), []).append((float(score), index))

    def lookup(final: int) -> SourceSupport:
        pairs = scored.get(final, [])
        if not pairs:
            return SourceSupport(lowest=None, sentences=(), lowest_in=0, min_score=min_score)
        lowest, where = min(pairs)
        return SourceSupport(
            lowest=lowest, sentences=tuple(i for _, i in pairs), lowest_in=where, min_score=min_score
        )

    return lookup
