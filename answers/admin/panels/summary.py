"""The answer as its reader got it, for a reviewer's page: the question, the final text rendered, the
Sources list, and a link to its trail (the answer's own admin page).

Shown on a conversation's page (each turn) and above the review form, so a reviewer reads the answer
where the verdict is written. Read from the stored record only: the final pair and the AnswerSource rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.urls import reverse

from answers.models import Answer, AnswerSource
from answers.payloads import answer_html
from answers.rendering import link_url, source_anchor


@dataclass(frozen=True)
class SummarySource:
    """A source of the final list, numbered as the reader saw it."""

    number: int
    title: str
    link: str | None  # its URL when it may be a link (answers.rendering.link_url)
    anchor: str  # the id its citation links in the rendered text point at


@dataclass(frozen=True)
class AnswerSummary:
    answer: Answer
    html: str  # the final text, sanitized (answers.rendering): empty when the answer is not done
    sources: tuple[SummarySource, ...]
    trail_url: str

    @property
    def done(self) -> bool:
        return self.answer.status == Answer.Status.DONE


def answer_summary(answer: Answer, sources: Sequence[AnswerSource]) -> AnswerSummary:
    """`answer` with `sources` (its AnswerSource rows) as its reader got it."""
    final = sorted((s for s in sources if s.final_number is not None), key=lambda s: s.final_number or 0)
    done = answer.status == Answer.Status.DONE
    return AnswerSummary(
        answer=answer,
        # Its own turn's anchors (source-N, turn-T-source-N): the turns of one conversation share a page.
        html=answer_html(answer, reference_count=len(final)) if done else "",
        sources=tuple(
            SummarySource(
                number=s.final_number or 0,
                title=s.title or s.url or "Untitled",
                link=link_url(s.url),
                anchor=source_anchor(s.final_number or 0, answer.turn),
            )
            for s in final
        )
        if done
        else (),
        trail_url=reverse("admin:answers_answer_change", args=[answer.pk]),
    )
