"""The writes behind evaluation: sets' items imported, made from answers, and runs and their results."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from answers.evaluation import selectors
from answers.evaluation.items import item_from_answer
from answers.evaluation.jsonl import ItemSpec
from answers.evaluation.metrics import run_metrics
from answers.models import EvaluationItem, EvaluationResult, EvaluationRun, EvaluationSet


@dataclass
class ItemsReport:
    """What adding items did: how many were added, which were left out and why, and which expected keys
    name no indexed document (kept, but no answer can cite them)."""

    set: EvaluationSet
    added: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (question or answer id, why)
    unknown_keys: list[str] = field(default_factory=list)
    replaced: int = 0


def set_get_or_create(name: str, *, description: str = "") -> EvaluationSet:
    evaluation_set, _ = EvaluationSet.objects.get_or_create(name=name, defaults={"description": description})
    return evaluation_set


def _canonical(items: Sequence[ItemSpec], report: ItemsReport) -> list[ItemSpec]:
    """The items with each expected key spelled as its document's key (url, else ingest key); keys
    naming no document are kept as given and reported."""
    keys = {key for item in items for key in item.expected_documents}
    canonical = selectors.canonical_keys(keys)
    report.unknown_keys = sorted(keys - set(canonical))
    return [
        ItemSpec(
            question=item.question,
            expected_documents=tuple(dict.fromkeys(canonical.get(k, k) for k in item.expected_documents)),
            expect_decline=item.expect_decline,
            notes=item.notes,
            from_answer_id=item.from_answer_id,
        )
        for item in items
    ]


@transaction.atomic
def items_add(
    evaluation_set: EvaluationSet,
    items: Sequence[ItemSpec],
    *,
    user_id: int | None = None,
    replace: bool = False,
) -> ItemsReport:
    """Add `items` to the set in one transaction; a question already in it is skipped (`replace`: the
    set's items are replaced by these)."""
    report = ItemsReport(set=evaluation_set)
    if replace:
        report.replaced, _ = evaluation_set.items.all().delete()
    present = set(evaluation_set.items.values_list("question", flat=True))
    rows = []
    for item in _canonical(items, report):
        if item.question in present:
            report.skipped.append((item.question, "the question is already in the set"))
            continue
        present.add(item.question)
        rows.append(
            EvaluationItem(
                set=evaluation_set,
                question=item.question,
                expected_documents=list(item.expected_documents),
                expect_decline=item.expect_decline,
                notes=item.notes,
                from_answer_id=item.from_answer_id,
                created_by_id=user_id,
            )
        )
    EvaluationItem.objects.bulk_create(rows)
    report.added = len(rows)
    return report


def items_from_answers(
    evaluation_set: EvaluationSet, answer_ids: Collection[uuid.UUID], *, user_id: int | None = None
) -> ItemsReport:
    """Items made from these answers (the admin action): a reviewed one by its latest review, an unreviewed
    one from its final sources (answers.evaluation.items)."""
    from answers.models import Answer

    reviews = {
        answer.id: review
        for review, answer in selectors.reviewed_answers(selectors.latest_review_ids(answer_ids=answer_ids))
    }
    answers = (
        Answer.objects.filter(id__in=list(answer_ids))
        .prefetch_related("sources__document")
        .order_by("created_at")
    )
    return _add_reviewed(evaluation_set, [(reviews.get(a.id), a) for a in answers], user_id=user_id)


def items_from_reviews(
    evaluation_set: EvaluationSet, *, since: datetime | None = None, user_id: int | None = None
) -> ItemsReport:
    """Items made from every reviewed answer (its latest review on or after `since`)."""
    pairs = selectors.reviewed_answers(selectors.latest_review_ids(since=since))
    return _add_reviewed(evaluation_set, pairs, user_id=user_id)


def _add_reviewed(
    evaluation_set: EvaluationSet, pairs: Sequence[tuple[Any, Any]], *, user_id: int | None
) -> ItemsReport:
    already = set(evaluation_set.items.exclude(from_answer=None).values_list("from_answer_id", flat=True))
    specs: list[ItemSpec] = []
    skipped: list[tuple[str, str]] = []
    for review, answer in pairs:
        if answer.id in already:
            skipped.append((str(answer.id), "already in the set"))
            continue
        spec = item_from_answer(selectors.reviewed_answer(answer, review))
        if spec is None:
            skipped.append((str(answer.id), "no expected document and no expected decline"))
            continue
        specs.append(spec)
    report = items_add(evaluation_set, specs, user_id=user_id)
    report.skipped = skipped + report.skipped
    return report


def run_start(evaluation_set: EvaluationSet, *, label: str, settings: Mapping[str, Any]) -> EvaluationRun:
    return EvaluationRun.objects.create(set=evaluation_set, label=label, settings=dict(settings))


def result_store(
    run: EvaluationRun, item: EvaluationItem, *, answer_id: uuid.UUID | None, data: Mapping[str, Any]
) -> EvaluationResult:
    return EvaluationResult.objects.create(
        run=run,
        item=item,
        answer_id=answer_id,
        question=item.question,
        failed=bool(data["failed"]),
        declined=bool(data["declined"]),
        right_first=data["right_first"],
        data=dict(data),
    )


def run_finish(run: EvaluationRun, status: str, *, now: datetime | None = None) -> EvaluationRun:
    """The run ended (`done`, `cancelled` or `failed`): its metrics over the results it kept."""
    run.metrics = run_metrics(selectors.run_data(run))
    run.status = status
    run.finished_at = now or timezone.now()
    run.save(update_fields=["metrics", "status", "finished_at"])
    return run
