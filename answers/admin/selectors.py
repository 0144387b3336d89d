"""Read queries behind the QA admin: the answer list and page, the export, the health figures.

Reader feedback (answers.models.Feedback) is read here too: what the list filters and orders
by, what the answer page and the export show, and the health page's reader shares.

"Renumbered" is stored on each source when the trail is (AnswerSource.renumbered,
answers.citations.trail.source_renumbered()): the list column and filter, the health
share, the answer page's `old → new` rows and its per-marker renumbering all read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce

from answers.models import Answer, AnswerSource, Feedback, Review, ReviewSourceFlag


def _source_count(**filters: Any) -> Coalesce:
    """How many of the answer's sources match `filters`: a correlated subquery (no row multiplication)."""
    counted = (
        AnswerSource.objects.filter(answer=OuterRef("pk"), **filters)
        .order_by()
        .values("answer")
        .annotate(n=Count("pk"))
        .values("n")[:1]
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def renumbered_expression() -> Exists:
    """True when some source of the answer is renumbered (AnswerSource.renumbered, stored when the
    trail is: answers.citations.trail.source_renumbered() is the rule)."""
    return Exists(AnswerSource.objects.filter(answer=OuterRef("pk"), renumbered=True))


def sources_in_order() -> QuerySet[AnswerSource]:
    """An answer's sources in retrieval order (each with its stored `renumbered`)."""
    return AnswerSource.objects.order_by("original_number")


def has_dropped_expression() -> Exists:
    return Exists(AnswerSource.objects.filter(answer=OuterRef("pk"), status=AnswerSource.Status.DROPPED))


def _latest_review(answer: OuterRef, field: str) -> Subquery:
    """`field` of the answer's latest review: reviews are append-only, and the latest one counts."""
    return Subquery(Review.objects.filter(answer=answer).order_by("-created_at", "-pk").values(field)[:1])


def latest_verdict_expression() -> Subquery:
    """On answers: the verdict of the answer's latest review (null when unreviewed)."""
    return _latest_review(OuterRef("pk"), "verdict")


def review_is_latest_expression() -> ExpressionWrapper[Q]:
    """On reviews: True for the latest review of its answer (the one that counts), False once corrected."""
    return ExpressionWrapper(Q(pk=_latest_review(OuterRef("answer"), "pk")), output_field=BooleanField())


def reader_unhelpful_expression() -> Exists:
    """True when a reader said the answer is unhelpful (a flagged source says so too)."""
    return Exists(Feedback.objects.filter(answer=OuterRef("pk"), verdict=Feedback.Verdict.UNHELPFUL))


def reader_flagged_expression() -> Exists:
    """True when a reader flagged one of the answer's sources as not backing it."""
    return Exists(Feedback.objects.filter(answer=OuterRef("pk"), source__isnull=False))


def unresolved_feedback_count() -> Coalesce:
    """How much of the answer's feedback no review (or reviewer) has resolved yet."""
    counted = (
        Feedback.objects.filter(answer=OuterRef("pk"), resolved_at__isnull=True)
        .order_by()
        .values("answer")
        .annotate(n=Count("pk"))
        .values("n")[:1]
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def answer_list_annotate(queryset: QuerySet[Answer]) -> QuerySet[Answer]:
    """Everything the answer list shows and filters on, computed by the database in the one list query."""
    return queryset.annotate(
        retrieved_count=_source_count(),
        cited_count=_source_count(status=AnswerSource.Status.CITED),
        dropped_count=_source_count(status=AnswerSource.Status.DROPPED),
        renumbered=renumbered_expression(),
        latest_verdict=latest_verdict_expression(),
        unresolved_feedback=unresolved_feedback_count(),
        reader_unhelpful=reader_unhelpful_expression(),
        reader_flagged=reader_flagged_expression(),
    )


def feedback_with_people() -> QuerySet[Feedback]:
    """Feedback in the order it came, with who sent it, the flagged source and the resolving review."""
    return Feedback.objects.select_related("user", "source", "resolved_by__reviewer").order_by(
        "created_at", "pk"
    )


def answer_detail_queryset(queryset: QuerySet[Answer]) -> QuerySet[Answer]:
    """An answer's page: its sources in retrieval order (with their reader flags), its reviews with
    their flags, and its reader feedback."""
    return queryset.prefetch_related(
        Prefetch(
            "sources",
            queryset=sources_in_order().prefetch_related(
                Prefetch("feedback", queryset=feedback_with_people())
            ),
        ),
        Prefetch("feedback", queryset=feedback_with_people()),
        Prefetch(
            "reviews",
            queryset=Review.objects.select_related("reviewer")
            .prefetch_related(
                Prefetch("source_flags", queryset=ReviewSourceFlag.objects.select_related("source"))
            )
            .order_by("created_at", "pk"),
        ),
    )


def answers_export_rows(*, queryset: QuerySet[Answer], chunk_size: int = 200) -> Iterator[dict[str, Any]]:
    """One JSON-ready dict per answer: the question, both texts, every source, the support record and the
    reviewers' verdicts."""
    rows = answer_detail_queryset(queryset.order_by("created_at", "pk"))
    for answer in rows.iterator(chunk_size=chunk_size):
        yield answer_export_row(answer)


def answer_export_row(answer: Answer) -> dict[str, Any]:
    sources = sorted(answer.sources.all(), key=lambda s: s.original_number)
    return {
        "id": str(answer.id),
        "question": answer.question,
        "status": answer.status,
        "delivery": answer.delivery,
        "provider": answer.provider,
        "model": answer.model,
        "prompt_version": answer.prompt_version,
        "created_at": answer.created_at.isoformat(),
        "finished_at": answer.finished_at.isoformat() if answer.finished_at else None,
        "raw_text": answer.raw_text,
        "final_text": answer.final_text,
        "stripped": list(answer.stripped),
        "fallback": answer.fallback,
        "declined": answer.declined,
        "markers": list(answer.markers),
        "error_kind": answer.error_kind,
        "error_message": answer.error_message,
        "support": answer.support,
        "coverage": answer.coverage,
        "sources": [
            {
                "original_number": s.original_number,
                "final_number": s.final_number,
                "status": s.status,
                "document_id": s.document_id,
                "title": s.title,
                "url": s.url,
                "excerpt": s.excerpt,
                "lexical_score": s.lexical_score,
                "rerank_score": s.rerank_score,
                "citation_count": s.citation_count,
                "first_cited_offset": s.first_cited_offset,
            }
            for s in sources
        ],
        "reviews": [
            {
                "reviewer": review.reviewer.get_username() if review.reviewer else None,
                "verdict": review.verdict,
                "notes": review.notes,
                "created_at": review.created_at.isoformat(),
                "updated_at": review.updated_at.isoformat(),
                "source_flags": [
                    {"original_number": f.source.original_number, "flag": f.flag, "note": f.note}
                    for f in review.source_flags.all()
                ],
            }
            for review in answer.reviews.all()
        ],
        "feedback": [feedback_export_row(f) for f in answer.feedback.all()],
    }


def feedback_export_row(feedback: Feedback) -> dict[str, Any]:
    source = feedback.source
    return {
        "verdict": feedback.verdict,
        # The source as the reader saw it (its final number) and as the trail numbers it.
        "source": None
        if source is None
        else {"final_number": source.final_number, "original_number": source.original_number},
        "comment": feedback.comment,
        "user": feedback.user.get_username() if feedback.user else None,
        "client": feedback.client or None,
        "created_at": feedback.created_at.isoformat(),
        "resolved_at": feedback.resolved_at.isoformat() if feedback.resolved_at else None,
        "resolved_by_review": feedback.resolved_by_id,
    }


@dataclass(frozen=True)
class HealthRow:
    """Citation health of one provider/model over a period."""

    provider: str
    model: str
    answers: int  # every answer asked in the period
    done: int
    failed: int
    with_dropped: int  # of the done answers
    renumbered: int
    fallback: int
    with_stripped: int
    with_normalized: int  # of the done answers: markers that needed a dialect repair
    reader_unhelpful: int  # of the done answers: a reader said unhelpful (or flagged a source)
    reader_flagged: int  # of the done answers: a reader flagged a source
    retrieved: int  # sources of the done answers
    cited: int
    support_checked: int = 0  # done answers with a support record
    with_unsupported: int = 0  # ... with a sentence citing a source under the bar
    with_grounded_uncited: int = 0  # ... with an uncited sentence some retrieved source grounds
    declined: int = 0  # of the done answers: no source reached the threshold, no provider call
    coverage_checked: int = 0  # done answers with a coverage record
    may_not_address: int = 0  # ... whose cited sources miss a key term of the question

    @staticmethod
    def _share(part: int, whole: int) -> float | None:
        return part / whole if whole else None

    @property
    def dropped_share(self) -> float | None:
        return self._share(self.with_dropped, self.done)

    @property
    def renumbered_share(self) -> float | None:
        return self._share(self.renumbered, self.done)

    @property
    def fallback_share(self) -> float | None:
        return self._share(self.fallback, self.done)

    @property
    def stripped_share(self) -> float | None:
        return self._share(self.with_stripped, self.done)

    @property
    def normalized_share(self) -> float | None:
        return self._share(self.with_normalized, self.done)

    @property
    def unhelpful_share(self) -> float | None:
        return self._share(self.reader_unhelpful, self.done)

    @property
    def flagged_share(self) -> float | None:
        return self._share(self.reader_flagged, self.done)

    @property
    def unsupported_share(self) -> float | None:
        return self._share(self.with_unsupported, self.support_checked)

    @property
    def grounded_uncited_share(self) -> float | None:
        return self._share(self.with_grounded_uncited, self.support_checked)

    @property
    def declined_share(self) -> float | None:
        return self._share(self.declined, self.done)

    @property
    def may_not_address_share(self) -> float | None:
        return self._share(self.may_not_address, self.coverage_checked)

    @property
    def failed_share(self) -> float | None:
        return self._share(self.failed, self.answers)

    @property
    def avg_retrieved(self) -> float | None:
        return self._share(self.retrieved, self.done)

    @property
    def avg_cited(self) -> float | None:
        return self._share(self.cited, self.done)


def citation_health(*, since: datetime, until: datetime) -> list[HealthRow]:
    """Per provider/model, answers created in [since, until): counts the health page turns into shares.

    Shares of dropped/renumbered/fallback/stripped/normalized, and of answers a reader called
    unhelpful or whose source a reader flagged, are over the finished (done) answers; the failed
    share is over all answers. Two grouped queries.
    Shares of dropped/renumbered/fallback/stripped/normalized are over the finished (done)
    answers; the unsupported and grounded-uncited shares over the done answers whose support
    record is computed; the declined share over the done answers; the "may not address the
    question" share over the done answers whose coverage record is computed; the failed share
    is over all answers. Two grouped queries.
    """
    # Readers' answers only: an evaluation run's measure the system, not what readers were given.
    period = Answer.objects.filter(created_at__gte=since, created_at__lt=until, origin=Answer.Origin.READER)
    done = Q(status=Answer.Status.DONE)
    counts = (
        period.order_by()
        .values("provider", "model")
        .annotate(
            answers=Count("pk"),
            done=Count("pk", filter=done),
            failed=Count("pk", filter=Q(status=Answer.Status.FAILED)),
            with_dropped=Count("pk", filter=done & Q(has_dropped_expression())),
            renumbered=Count("pk", filter=done & Q(renumbered_expression())),
            fallback=Count("pk", filter=done & Q(fallback=True)),
            with_stripped=Count("pk", filter=done & ~Q(stripped=[])),
            with_normalized=Count("pk", filter=done & ~Q(normalized=[])),
            reader_unhelpful=Count("pk", filter=done & Q(reader_unhelpful_expression())),
            reader_flagged=Count("pk", filter=done & Q(reader_flagged_expression())),
            support_checked=Count("pk", filter=done & Q(unsupported_count__isnull=False)),
            with_unsupported=Count("pk", filter=done & Q(unsupported_count__gt=0)),
            with_grounded_uncited=Count("pk", filter=done & Q(grounded_uncited_count__gt=0)),
            declined=Count("pk", filter=done & Q(declined=True)),
            coverage_checked=Count("pk", filter=done & Q(may_not_address__isnull=False)),
            may_not_address=Count("pk", filter=done & Q(may_not_address=True)),
        )
    )
    sources = (
        AnswerSource.objects.filter(answer__in=period.filter(done))
        .order_by()
        .values("answer__provider", "answer__model")
        .annotate(retrieved=Count("pk"), cited=Count("pk", filter=Q(status=AnswerSource.Status.CITED)))
    )
    by_group = {(s["answer__provider"], s["answer__model"]): s for s in sources}
    rows = []
    for c in counts:
        s = by_group.get((c["provider"], c["model"]), {"retrieved": 0, "cited": 0})
        rows.append(HealthRow(**{**c, "retrieved": s["retrieved"], "cited": s["cited"]}))
    rows.sort(key=lambda r: (r.provider, r.model))
    return rows


def review_verdicts(*, since: datetime, until: datetime) -> dict[tuple[str, str], dict[str, int]]:
    """Per provider/model, answers created in [since, until) by the verdict of their latest review (the one
    that counts: latest_verdict_expression); unreviewed answers are not counted. One grouped query."""
    counted = (
        Answer.objects.filter(created_at__gte=since, created_at__lt=until)
        .annotate(latest_verdict=latest_verdict_expression())
        .filter(latest_verdict__isnull=False)
        .order_by()
        .values("provider", "model", "latest_verdict")
        .annotate(n=Count("pk"))
    )
    verdicts: dict[tuple[str, str], dict[str, int]] = {}
    for row in counted:
        verdicts.setdefault((row["provider"], row["model"]), {})[row["latest_verdict"]] = row["n"]
    return verdicts


def health_total(rows: Iterable[HealthRow]) -> HealthRow:
    """All providers/models together."""
    rows = list(rows)
    counts = {f.name: sum(getattr(r, f.name) for r in rows) for f in fields(HealthRow) if f.type == "int"}
    return HealthRow(provider="All", model="", **counts)
