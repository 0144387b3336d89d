"""Reviewers' verdicts on answers and their remarks on sources (the trail is never edited).

Reviews are append-only: a saved review and its source flags are never changed or deleted (the
models refuse it, and so does admin); a correction is a new review, and the answer's latest
review is the one that counts (docs/reference/models.md, "Reviews").
"""

from __future__ import annotations

from typing import Any, NoReturn

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import models
from django.db.models import Q

from answers.models.answers import Answer, AnswerSource


class ReviewVerdict(models.TextChoices):
    """A reviewer's verdict (Review.Verdict); defined out here for Meta."""

    OK = "ok", "OK"
    WRONG_CITATION = "wrong_citation", "Wrong citation"
    MISSING_CITATION = "missing_citation", "Missing citation"
    UNSUPPORTED_CLAIM = "unsupported_claim", "Unsupported claim"
    INCOMPLETE = "incomplete", "Does not fully answer the question"
    OFF_TOPIC = "off_topic", "Answers another question"
    OTHER = "other", "Other"


class ReviewIsFinal(Exception):
    """A saved review or source flag was to be changed or deleted: a correction is a new review."""


def _refuse(what: str) -> NoReturn:
    raise ReviewIsFinal(f"A saved {what} is final: write a new review to correct it.")


class AppendOnlyQuerySet(models.QuerySet[Any]):
    """Rows are added, never changed or deleted in bulk either (Django's own cascades and SET_NULL
    go through the base manager, so deleting a reviewer's account still empties `reviewer`)."""

    def update(self, **kwargs: Any) -> int:
        _refuse(str(self.model._meta.verbose_name))

    def delete(self) -> tuple[int, dict[str, int]]:
        _refuse(str(self.model._meta.verbose_name))


class AppendOnlyModel(models.Model):
    """save() adds the row; a second save() or delete() of it raises ReviewIsFinal."""

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            _refuse(str(self._meta.verbose_name))
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(str(self._meta.verbose_name))


class Review(AppendOnlyModel):
    """A QA reviewer's verdict on one answer. Several per answer, never edited: the latest counts."""

    Verdict = ReviewVerdict

    # PROTECT: a reviewed answer is part of the audit record; deleting it must be deliberate.
    answer = models.ForeignKey(Answer, on_delete=models.PROTECT, related_name="reviews")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="answer_reviews",
        editable=False,
    )
    verdict = models.CharField(max_length=32, choices=Verdict.choices)
    notes = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = (models.Index(fields=["answer", "-created_at"], name="review_answer_created"),)
        constraints = (
            models.CheckConstraint(
                condition=Q(verdict__in=ReviewVerdict.values),
                name="review_verdict_valid",
            ),
        )

    def __str__(self) -> str:
        return f"{self.get_verdict_display()} on {self.answer_id}"


class SourceFlag(models.TextChoices):
    """A reviewer's remark on a source (ReviewSourceFlag.Flag); defined out here for Meta."""

    DOES_NOT_SUPPORT = "does_not_support", "Cited but does not support the claim"
    SHOULD_BE_CITED = "should_be_cited", "Should have been cited"
    IRRELEVANT = "irrelevant", "Irrelevant retrieval"
    OTHER = "other", "Other"


class ReviewSourceFlag(AppendOnlyModel):
    """A reviewer's remark on one retrieved source of the reviewed answer."""

    Flag = SourceFlag

    review = models.ForeignKey(Review, on_delete=models.CASCADE, related_name="source_flags")
    source = models.ForeignKey(AnswerSource, on_delete=models.PROTECT, related_name="review_flags")
    flag = models.CharField(max_length=32, choices=Flag.choices)
    note = models.CharField(max_length=1000, blank=True)

    class Meta:
        ordering = ("review_id", "source_id", "id")
        constraints = (
            models.UniqueConstraint(fields=["review", "source", "flag"], name="reviewsourceflag_unique"),
            models.CheckConstraint(
                condition=Q(flag__in=SourceFlag.values),
                name="reviewsourceflag_flag_valid",
            ),
        )

    def __str__(self) -> str:
        return f"{self.get_flag_display()}: source {self.source_id}"

    def clean(self) -> None:
        # A cross-table rule a CheckConstraint cannot express.
        try:
            review, source = self.review, self.source
        except ObjectDoesNotExist:
            return  # the missing field reports itself
        if source.answer_id != review.answer_id:
            raise ValidationError({"source": "Pick a source of the reviewed answer."})
