"""Evaluation: named sets of questions with their expected documents, and runs of the pipeline over
them (docs/evaluation.md). A run's results are measured from the stored trails, never re-derived."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from answers.models.answers import Answer

SET_NAME_PATTERN = r"^[-a-zA-Z0-9_]+\Z"


class EvaluationSet(models.Model):
    """A named set of questions, each with the documents a good answer cites (or an expected decline)."""

    name = models.CharField(
        max_length=100,
        unique=True,
        validators=[RegexValidator(SET_NAME_PATTERN, "Letters, digits, hyphens and underscores only.")],
        help_text="A slug: what `manage.py evaluate NAME` names.",
    )
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class EvaluationItem(models.Model):
    """One question of a set: the documents expected among the answer's sources, or a decline."""

    set = models.ForeignKey(EvaluationSet, on_delete=models.CASCADE, related_name="items")
    question = models.TextField()
    expected_documents = models.JSONField(
        default=list,
        blank=True,
        help_text="Document keys (a document's url, else its ingest key); order does not matter.",
    )
    expect_decline = models.BooleanField(
        default=False, help_text="No retrieved source should reach the threshold: the answer declines."
    )
    notes = models.TextField(blank=True)
    from_answer = models.ForeignKey(
        Answer,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="evaluation_items",
        help_text="The reviewed answer this item was made from.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="evaluation_items",
        editable=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["set_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["set", "question"], name="evaluationitem_question_once_per_set"),
        ]

    def __str__(self) -> str:
        return self.question[:80]


class EvaluationRun(models.Model):
    """One pass of the pipeline over a set's items, with the settings it ran under and its metrics."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    set = models.ForeignKey(EvaluationSet, on_delete=models.CASCADE, related_name="runs")
    label = models.CharField(max_length=200, blank=True, help_text='Free text: "gpt-4.1-mini, prompt 4".')
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    settings = models.JSONField(
        default=dict,
        blank=True,
        help_text="What it ran under: provider, model, prompt and rules versions, threshold, ...",
    )
    metrics = models.JSONField(default=dict, blank=True, help_text="Over its results (docs/evaluation.md).")

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"Run {self.pk} of {self.set.name}" + (f" ({self.label})" if self.label else "")


class EvaluationResult(models.Model):
    """One item's outcome in one run: the answer the pipeline stored, and what was measured from it."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="results")
    item = models.ForeignKey(
        EvaluationItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="results"
    )
    answer = models.ForeignKey(
        Answer,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="evaluation_results",
        help_text="Null when the pipeline stored no answer (the item failed before).",
    )
    question = models.TextField(help_text="The item's question as it was asked.")
    # Outcome columns copied from `data` for the lists' filters and ordering.
    failed = models.BooleanField(default=False)
    declined = models.BooleanField(default=False)
    right_first = models.BooleanField(null=True)
    data = models.JSONField(default=dict, help_text="What was measured (docs/evaluation.md).")

    class Meta:
        ordering = ["run_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "item"],
                condition=Q(item__isnull=False),
                name="evaluationresult_item_once_per_run",
            ),
        ]

    def __str__(self) -> str:
        return self.question[:80]
