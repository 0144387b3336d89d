"""The support panel: the support record (answers.support) laid out sentence by sentence."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from answers.models import Answer, AnswerSource
from answers.support.record import SUPPORTED, UNCITED, UNSUPPORTED, VERDICTS, below_bar, grounded_uncited

# The page's name of an uncited sentence some retrieved source grounds (its css class and count).
GROUNDED = "grounded"


def record_sentences(support: Any) -> list[dict[str, Any]]:
    """The record's sentences that have the shape the page reads (the record is data: skip the rest)."""
    if not isinstance(support, dict) or not isinstance(support.get("sentences"), list):
        return []
    return [
        s
        for s in support["sentences"]
        if isinstance(s, dict)
        and isinstance(s.get("start"), int)
        and isinstance(s.get("end"), int)
        and s.get("verdict") in VERDICTS
        and isinstance(s.get("cited", []), list)
        and isinstance(s.get("scores", {}), dict)
        and isinstance(s.get("grounded_by", []), list)
    ]


def record_grounding(support: Any) -> dict[int, list[int]]:
    """Original number -> the uncited sentences (numbered from 1) it grounds."""
    relied: dict[int, list[int]] = {}
    for index, sentence in enumerate(record_sentences(support), start=1):
        for number in grounded_uncited(sentence):
            relied.setdefault(number, []).append(index)
    return relied


@dataclass(frozen=True)
class CitedScore:
    """A cited source's support score beside its sentence."""

    number: int  # final number
    score: float
    title: str
    below_bar: bool


@dataclass(frozen=True)
class Grounding:
    """A retrieved source that grounds an uncited sentence."""

    original_number: int
    final_number: int | None
    title: str

    @property
    def dropped(self) -> bool:
        return self.final_number is None


@dataclass(frozen=True)
class SupportPiece:
    """A piece of the final text: between sentences (`verdict` empty), or one sentence and its verdict."""

    text: str
    verdict: str = ""
    number: int = 0  # the sentence's number, from 1
    scores: tuple[CitedScore, ...] = ()
    grounded_by: tuple[Grounding, ...] = ()  # (grounded_uncited(): an uncited sentence's only)

    @property
    def label(self) -> str:
        """The verdict as the page names it: supported, unsupported, uncited and grounded, uncited."""
        if self.verdict == UNCITED:
            return "uncited and grounded" if self.grounded_by else "uncited"
        return self.verdict

    @property
    def css(self) -> str:
        return GROUNDED if self.grounded_by else self.verdict

    @property
    def hover(self) -> str:
        """The tooltip: the verdict and each score or grounding source."""
        details = [f"[{c.number}] {c.title}: {c.score:.2f}" for c in self.scores] + [
            f"source {g.original_number}{' (dropped)' if g.dropped else f' [{g.final_number}]'} {g.title}"
            for g in self.grounded_by
        ]
        return f"Sentence {self.number}: {self.label}" + ("".join(f"\n{d}" for d in details))


@dataclass(frozen=True)
class SupportPanel:
    """The support record as the answer page shows it (None fields: nothing to show)."""

    state: str  # "shown", "pending" (done, not computed yet or failed), "none" (not a done answer)
    method: str = ""
    min_score: float = 0.0
    fallback: dict[str, str] | None = None
    pieces: tuple[SupportPiece, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)


def support_panel(answer: Answer, sources: Sequence[AnswerSource]) -> SupportPanel:
    """The final text cut into its sentences, each with its verdict, scores and grounding sources."""
    if answer.status != Answer.Status.DONE:
        return SupportPanel(state="none")
    record = answer.support
    if not isinstance(record, dict):
        return SupportPanel(state="pending")
    by_final = {s.final_number: s for s in sources if s.final_number is not None}
    by_original = {s.original_number: s for s in sources}
    text = answer.final_text
    bar = float(record.get("min_score", 0.0))
    pieces: list[SupportPiece] = []
    cursor = 0
    for number, sentence in enumerate(record_sentences(record), start=1):
        start, end = sentence["start"], sentence["end"]
        if start < cursor or end > len(text) or end < start:
            continue  # not a span of this text (the record is data)
        if cursor < start:
            pieces.append(SupportPiece(text=text[cursor:start]))
        scores = []
        for key, score in sentence["scores"].items():
            final = int(key) if str(key).isdigit() else 0
            source = by_final.get(final)
            value = float(score) if isinstance(score, (int, float)) else 0.0
            scores.append(CitedScore(final, value, source.title if source else "?", below_bar(value, bar)))
        grounded = [
            Grounding(n, by_original[n].final_number, by_original[n].title)
            for n in grounded_uncited(sentence)
            if n in by_original
        ]
        pieces.append(
            SupportPiece(
                text=text[start:end],
                verdict=sentence["verdict"],
                number=number,
                scores=tuple(scores),
                grounded_by=tuple(grounded),
            )
        )
        cursor = end
    if cursor < len(text):
        pieces.append(SupportPiece(text=text[cursor:]))
    verdicts = [p.css for p in pieces if p.verdict]
    fallback = record.get("fallback")
    return SupportPanel(
        state="shown",
        method=str(record.get("method", "")),
        min_score=bar,
        fallback={k: str(v) for k, v in fallback.items()} if isinstance(fallback, dict) else None,
        pieces=tuple(pieces),
        counts={name: verdicts.count(name) for name in (SUPPORTED, UNSUPPORTED, GROUNDED, UNCITED)},
    )
