"""The history a follow-up's prompt carries: earlier turns without citation markers, within a budget (pure).

Old numbers never reach the model: a turn's final text goes back without its markers (the
markers the trail recorded, else those the scanner finds), so the model cannot copy `[2]` of
turn 1 into turn 3, where source 2 is another document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from answers.citations import Marker, scan_markers
from answers.citations.strip import remove_markers


@dataclass(frozen=True)
class PastTurn:
    """An earlier turn as the prompt carries it: its question and its final text without markers."""

    turn: int
    question: str
    text: str

    @property
    def chars(self) -> int:
        return len(self.question) + len(self.text)


@dataclass(frozen=True)
class History:
    """The turns sent (oldest first) and the turn numbers cut to stay within `budget` characters."""

    turns: tuple[PastTurn, ...]
    cut: tuple[int, ...]
    budget: int

    @property
    def chars(self) -> int:
        return sum(turn.chars for turn in self.turns)

    def record(self) -> dict[str, Any]:
        """What the trail keeps (Answer.history): which turns were sent, which cut, and the sizes."""
        return {
            "sent": [turn.turn for turn in self.turns],
            "cut": list(self.cut),
            "chars": self.chars,
            "budget": self.budget,
        }


def marker_free(text: str, markers: Sequence[Marker] | None = None) -> str:
    """`text` without its citation markers, each with the blanks strip removes with a marker
    ("claim [1]." reads "claim.", "[1] Claim." reads "Claim.").

    `markers`: the final text's markers as the trail recorded them
    (answers.citations.trail.final_markers); None: the scanner finds them.
    """
    return remove_markers(text, scan_markers(text) if markers is None else markers)


def assemble(turns: Sequence[PastTurn], *, budget: int) -> History:
    """The most recent turns whose questions and texts fit in `budget` characters, oldest dropped first.

    A turn is sent whole or not at all; once one does not fit, every older one is cut too, so
    the history the model reads has no gap.
    """
    kept: list[PastTurn] = []
    used = 0
    ordered = sorted(turns, key=lambda t: t.turn)
    for index in range(len(ordered) - 1, -1, -1):
        turn = ordered[index]
        if used + turn.chars > budget:
            cut = tuple(t.turn for t in ordered[: index + 1])
            return History(turns=tuple(reversed(kept)), cut=cut, budget=budget)
        kept.append(turn)
        used += turn.chars
    return History(turns=tuple(reversed(kept)), cut=(), budget=budget)
