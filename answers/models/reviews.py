"""Reviewers' verdicts on answers and their remarks on sources (the trail is never edited)."""

from __future__ import annotations

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
    OTHER = "other", "Other"


class Review(models.Model):
    """A QA reviewer's verdict on one answer. Several per answer; the trail itself is never edited."""

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


class ReviewSourceFlag(models.Model):
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
