"""The reads behind evaluation: document keys, answers as stored (for measuring), reviewed answers (for
items and the agreement report), and runs."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any

from django.db.models import F, OuterRef, Prefetch, Q, Subquery

from answers.evaluation.agreement import Pair, answer_pairs
from answers.evaluation.comparison import compare
from answers.evaluation.items import ReviewedAnswer, ReviewedSource
from answers.evaluation.jsonl import ItemSpec
from answers.evaluation.measure import StoredAnswer, StoredSource
from answers.models import (
    Answer,
    AnswerSource,
    Document,
    EvaluationItem,
    EvaluationResult,
    EvaluationRun,
    EvaluationSet,
    Review,
    SourceFlag,
)
from answers.support.compute import compute_support
from answers.support.methods import SupportMethod


def document_key(url: str, key: str) -> str:
    """A document's key as evaluation names documents: its url, else its ingest key."""
    return url or key


def source_key(source: AnswerSource) -> str:
    """A retrieved source's document key: the url it was retrieved with, else its document's ingest key."""
    if source.url:
        return source.url
    return source.document.key if source.document is not None else ""


def canonical_keys(keys: Iterable[str]) -> dict[str, str]:
    """For each of `keys` naming an indexed document (by its url or its ingest key), that document's
    key (document_key); keys naming none are absent."""
    wanted = set(keys)
    if not wanted:
        return {}
    found: dict[str, str] = {}
    rows = Document.objects.filter(Q(key__in=wanted) | Q(url__in=wanted)).values_list("key", "url")
    for key, url in rows:
        for name in (key, url):
            if name in wanted:
                found[name] = document_key(url, key)
    return found


def set_get(name: str) -> EvaluationSet | None:
    return EvaluationSet.objects.filter(name=name).first()


def item_spec(item: EvaluationItem) -> ItemSpec:
    return ItemSpec(
        question=item.question,
        expected_documents=tuple(item.expected_documents),
        expect_decline=item.expect_decline,
        notes=item.notes,
        from_answer_id=item.from_answer_id,
    )


def set_items(evaluation_set: EvaluationSet) -> list[EvaluationItem]:
    return list(evaluation_set.items.order_by("id"))


def stored_answer(answer_id: uuid.UUID) -> StoredAnswer | None:
    """The answer as the pipeline stored it, sources in retrieval order with their document keys."""
    sources = AnswerSource.objects.select_related("document").order_by("original_number")
    answer = (
        Answer.objects.filter(id=answer_id).prefetch_related(Prefetch("sources", queryset=sources)).first()
    )
    if answer is None:
        return None
    return StoredAnswer(
        answer_id=str(answer.id),
        done=answer.status == Answer.Status.DONE,
        declined=answer.declined,
        fallback=answer.fallback,
        stripped=len(answer.stripped or []),
        normalized=len(answer.normalized or []),
        support=answer.support,
        total_ms=answer.total_ms,
        usage=answer.usage,
        error=answer.error_message,
        sources=[
            StoredSource(original_number=s.original_number, final_number=s.final_number, key=source_key(s))
            for s in answer.sources.all()
        ],
    )


def latest_review_ids(
    *, since: datetime | None = None, answer_ids: Collection[uuid.UUID] | None = None
) -> list[int]:
    """The id of each answer's latest review (the one that counts: reviews are never edited), for the
    answers whose latest review is on or after `since`, or among `answer_ids`."""
    latest = Review.objects.filter(answer=OuterRef("answer")).order_by("-created_at", "-id").values("id")[:1]
    reviews = Review.objects.annotate(latest=Subquery(latest)).filter(id=F("latest"))
    if since is not None:
        reviews = reviews.filter(created_at__gte=since)
    if answer_ids is not None:
        reviews = reviews.filter(answer_id__in=list(answer_ids))
    return list(reviews.order_by("created_at", "id").values_list("id", flat=True))


def reviewed_answers(review_ids: Collection[int]) -> list[tuple[Review, Answer]]:
    """Each review with its answer, sources (documents loaded) and the review's own flags."""
    sources = AnswerSource.objects.select_related("document").order_by("original_number")
    reviews = (
        Review.objects.filter(id__in=list(review_ids))
        .select_related("answer")
        .prefetch_related("source_flags", Prefetch("answer__sources", queryset=sources))
        .order_by("created_at", "id")
    )
    return [(review, review.answer) for review in reviews]


def reviewed_answer(answer: Answer, review: Review | None) -> ReviewedAnswer:
    """The answer as the item rules read it (answers.evaluation.items); `review` its latest, or None."""
    flags: dict[int, set[str]] = {}
    for flag in review.source_flags.all() if review is not None else ():
        flags.setdefault(flag.source_id, set()).add(flag.flag)
    return ReviewedAnswer(
        answer_id=answer.id,
        question=answer.question,
        standalone_question=answer.standalone_question,
        declined=answer.declined,
        verdict=review.verdict if review is not None else None,
        sources=[
            ReviewedSource(
                key=source_key(s), final=s.final_number is not None, flags=frozenset(flags.get(s.pk, ()))
            )
            for s in sorted(answer.sources.all(), key=lambda s: s.original_number)
        ],
    )


def run_get(run_id: int) -> EvaluationRun | None:
    return EvaluationRun.objects.select_related("set").filter(id=run_id).first()


def previous_run(run: EvaluationRun) -> EvaluationRun | None:
    """The latest finished (`done`) run of the same set before `run`."""
    return (
        EvaluationRun.objects.filter(
            set_id=run.set_id, status=EvaluationRun.Status.DONE, started_at__lte=run.started_at
        )
        .exclude(id=run.id)
        .order_by("-started_at", "-id")
        .first()
    )


def run_data(run: EvaluationRun) -> list[dict[str, Any]]:
    """Every result's data, in the items' order."""
    return [r.data for r in EvaluationResult.objects.filter(run=run).order_by("item_id", "id")]


def run_document(run: EvaluationRun) -> dict[str, Any]:
    """A run as `evaluate --json` writes it."""
    return {
        "run": run.pk,
        "set": run.set.name,
        "label": run.label,
        "status": run.status,
        "settings": run.settings,
        "metrics": run.metrics,
        "items": run_data(run),
    }


def comparison(run: EvaluationRun, baseline: EvaluationRun) -> dict[str, Any]:
    """`run` against `baseline` (another run of its set): the baseline's metrics, the regressions and
    the improvements."""
    regressions, improvements = compare(run_data(run), run_data(baseline))
    return {
        "run": baseline.pk,
        "metrics": baseline.metrics,
        "regressions": regressions,
        "improvements": improvements,
    }


def agreement_pairs(*, since: datetime | None = None, method: SupportMethod | None = None) -> list[Pair]:
    """A pair for every final source of every reviewed, done, not declined answer (its latest review on or
    after `since`): the reviewers' label and the support check's, from the stored record or, with
    `method`, a record computed anew (not stored). Answers without a stored record are left out."""
    pairs: list[Pair] = []
    for review, answer in reviewed_answers(latest_review_ids(since=since)):
        if answer.status != Answer.Status.DONE or answer.declined:
            continue
        record = compute_support(answer, method=method) if method is not None else answer.support
        if record is None:
            continue
        flagged = {
            flag.source_id for flag in review.source_flags.all() if flag.flag == SourceFlag.DOES_NOT_SUPPORT
        }
        final = {s.final_number: s.pk in flagged for s in answer.sources.all() if s.final_number is not None}
        pairs += answer_pairs(record, final)
    return pairs


def other_runs(run: EvaluationRun) -> list[EvaluationRun]:
    """The set's other runs, newest first (what a run may be compared with)."""
    return list(
        EvaluationRun.objects.filter(set_id=run.set_id).exclude(id=run.id).order_by("-started_at", "-id")
    )
