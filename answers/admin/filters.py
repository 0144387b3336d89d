"""The answer list's filters (answers.admin.answers.AnswerAdmin.list_filter), and the review list's
latest-review filter: each reads a stored fact or an annotation of answers.admin.selectors, never
recomputes one."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from answers.models import Answer, Review


class _YesNoFilter(admin.SimpleListFilter):
    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No")]


class _RecordedFilter(_YesNoFilter):
    """Whether the trail's list field `parameter_name` recorded anything."""

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        empty: dict[str, list[object]] = {str(self.parameter_name): []}
        if self.value() == "yes":
            return queryset.exclude(**empty)
        if self.value() == "no":
            return queryset.filter(**empty)
        return None


class HasStrippedFilter(_RecordedFilter):
    title = "has stripped markers"
    parameter_name = "stripped"


class HasNormalizedFilter(_RecordedFilter):
    title = "normalized markers"
    parameter_name = "normalized"


class _BooleanFilter(_YesNoFilter):
    """Yes/no on the boolean field, or annotation of answer_list_annotate, named `parameter_name`
    (a null one is in neither)."""

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        if self.value() in ("yes", "no"):
            return queryset.filter(**{str(self.parameter_name): self.value() == "yes"})
        return None


class RenumberedFilter(_BooleanFilter):
    title = "renumbered"
    parameter_name = "renumbered"


class ReaderUnhelpfulFilter(_BooleanFilter):
    title = "reader said unhelpful"
    parameter_name = "reader_unhelpful"


class ReaderFlaggedFilter(_BooleanFilter):
    title = "reader flagged a source"
    parameter_name = "reader_flagged"


class _CountFilter(_YesNoFilter):
    """Whether a count (`count_field`: stored, or annotated by answer_list_annotate) is above zero.

    Answers whose count is null (a support record not computed) are in neither "yes" nor "no".
    """

    count_field = ""

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        if self.value() == "yes":
            return queryset.filter(**{f"{self.count_field}__gt": 0})
        if self.value() == "no":
            return queryset.filter(**{self.count_field: 0})
        return None


class HasDroppedFilter(_CountFilter):
    title = "has dropped sources"
    parameter_name = "dropped"
    count_field = "dropped_count"


class UnsupportedFilter(_CountFilter):
    title = "unsupported citations"
    parameter_name = "unsupported"
    count_field = "unsupported_count"


class GroundedUncitedFilter(_CountFilter):
    title = "grounded but uncited"
    parameter_name = "grounded_uncited"
    count_field = "grounded_uncited_count"


class MayNotAddressFilter(_BooleanFilter):
    """The coverage record's flag: the cited sources miss a key term of the question.

    Answers whose record is not computed (null) are in neither "yes" nor "no".
    """

    title = "may not address the question"
    parameter_name = "may_not_address"


class LatestReviewFilter(_BooleanFilter):
    """The review list's: whether a review is its answer's latest (the one that counts) or corrected
    since (answers.admin.selectors.review_is_latest_expression, annotated as `latest`)."""

    title = "counts (latest of its answer)"
    parameter_name = "latest"


class VerdictFilter(admin.SimpleListFilter):
    title = "latest review verdict"
    parameter_name = "verdict"
    UNREVIEWED = "unreviewed"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            (self.UNREVIEWED, "Unreviewed"),
            *((str(v), str(label)) for v, label in Review.Verdict.choices),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        value = self.value()
        if value == self.UNREVIEWED:
            return queryset.filter(latest_verdict__isnull=True)
        if value in Review.Verdict.values:
            return queryset.filter(latest_verdict=value)
        return None


class OriginFilter(admin.SimpleListFilter):
    """Who asked: readers by default; an evaluation run's answers only under `?origin=evaluation`
    (they measure the system, and would crowd out what readers were given)."""

    title = "origin"
    parameter_name = "origin"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(Answer.Origin.READER.value, "Readers"), (Answer.Origin.EVALUATION.value, "Evaluation runs")]

    def choices(self, changelist: Any) -> Any:
        current = self.value() or Answer.Origin.READER.value
        for value, label in self.lookup_choices:
            yield {
                "selected": current == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        evaluation = self.value() == Answer.Origin.EVALUATION
        return queryset.filter(origin=Answer.Origin.EVALUATION if evaluation else Answer.Origin.READER)
