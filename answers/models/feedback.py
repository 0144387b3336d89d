"""Readers' feedback on done answers (answers.feedback)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from answers.models.answers import Answer, AnswerSource
from answers.models.reviews import Review

FEEDBACK_COMMENT_MAX_LENGTH = 1000


class FeedbackVerdict(models.TextChoices):
    """A reader's verdict on an answer (Feedback.Verdict); defined out here for Meta."""

    HELPFUL = "helpful", "Helpful"
    UNHELPFUL = "unhelpful", "Unhelpful"


class Feedback(models.Model):
    """A reader's verdict on a done answer, maybe naming one source of its final list that does not
    back it. Readers only add; reviewers only resolve (a review resolves the feedback it covers).
    The trail itself is never edited.
    """

    Verdict = FeedbackVerdict

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="feedback", editable=False)
    verdict = models.CharField(max_length=16, choices=Verdict.choices, editable=False)
    source = models.ForeignKey(
        AnswerSource,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="feedback",
        editable=False,
        help_text="The source of the final list the reader says does not back the answer.",
    )
    comment = models.CharField(max_length=FEEDBACK_COMMENT_MAX_LENGTH, blank=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="answer_feedback",
        editable=False,
    )
    client = models.CharField(
        max_length=64,
        blank=True,
        editable=False,
        help_text="An anonymous reader: a keyed hash of the client's address (never the address).",
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    resolved_at = models.DateTimeField(null=True, blank=True, editable=False)
    resolved_by = models.ForeignKey(
        Review,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="resolved_feedback",
        editable=False,
        help_text="The review that resolved it (empty when a reviewer marked it resolved by hand).",
    )
    resolver = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="feedback_resolved",
        editable=False,
        help_text="Who resolved it: the reviewer who marked it resolved, or whose review resolved it.",
    )

    class Meta:
        ordering = ("-created_at", "-id")
        verbose_name_plural = "feedback"
        indexes = (models.Index(fields=["answer", "resolved_at"], name="feedback_answer_resolved"),)
        constraints = (
            models.CheckConstraint(
                condition=Q(verdict__in=FeedbackVerdict.values), name="feedback_verdict_valid"
            ),
            # A flagged source means the source does not back the answer: never "helpful".
            models.CheckConstraint(
                condition=Q(source__isnull=True) | Q(verdict=FeedbackVerdict.UNHELPFUL),
                name="feedback_flag_is_unhelpful",
            ),
            models.CheckConstraint(
                condition=Q(resolved_by__isnull=True) | Q(resolved_at__isnull=False),
                name="feedback_resolved_by_has_time",
            ),
            models.CheckConstraint(
                condition=Q(resolver__isnull=True) | Q(resolved_at__isnull=False),
                name="feedback_resolver_has_time",
            ),
            # One verdict per reader per answer, and one flag per reader per source: a later one
            # replaces the earlier (answers.feedback.feedback_create). A reader is a user, or for
            # an anonymous reader the client hash; a row whose user was deleted has neither.
            models.UniqueConstraint(
                fields=["answer", "user"],
                condition=Q(source__isnull=True, user__isnull=False),
                name="feedback_one_verdict_per_user",
            ),
            models.UniqueConstraint(
                fields=["answer", "client"],
                condition=Q(source__isnull=True, user__isnull=True) & ~Q(client=""),
                name="feedback_one_verdict_per_client",
            ),
            models.UniqueConstraint(
                fields=["answer", "user", "source"],
                condition=Q(source__isnull=False, user__isnull=False),
                name="feedback_one_flag_per_user",
            ),
            models.UniqueConstraint(
                fields=["answer", "client", "source"],
                condition=Q(source__isnull=False, user__isnull=True) & ~Q(client=""),
                name="feedback_one_flag_per_client",
            ),
        )

    def __str__(self) -> str:
        flagged = f", source {self.source_id}" if self.source_id else ""
        return f"{self.get_verdict_display()}{flagged} on {self.answer_id}"

    @property
    def resolved(self) -> bool:
        return self.resolved_at is not None
