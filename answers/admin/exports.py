"""Exports of the QA admin's lists (django-import-export): CSV, XLSX and JSON of what a list selects.

The answer, review and reader feedback lists each offer *Export*: the rows the list's filters and
search select (the changelist's own queryset: ExportMixin.get_export_queryset builds it from the
same request), as the fields the resources below declare. They are plain text, numbers and
booleans: never the rendered HTML, the asker, a reader's address hash or a password. Only QA
reviewers (answers.view_trail, the trail's permission: answers.selectors.may_read_trails) may
export. A cell a spreadsheet would run as a formula is made inert in CSV and XLSX.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tablib
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest
from import_export import resources, widgets
from import_export.admin import ExportMixin
from import_export.fields import Field
from import_export.formats import base_formats
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

from answers.models import Answer, AnswerSource, Feedback, Review, ReviewSourceFlag
from answers.selectors import LARGE_FIELDS, TRAIL_ONLY_FIELDS, may_read_trails

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

    _ExportMixinBase = ModelAdmin[Any]
else:
    _ExportMixinBase = object

# What an answer row of an export never needs (megabytes for a long answer): skipped in the query.
_ANSWER_HEAVY = (*TRAIL_ONLY_FIELDS, *LARGE_FIELDS, "coverage", "usage", "native", "rewrite", "history")
# A spreadsheet runs a cell starting with these as a formula (OWASP's list): a question or a
# comment is a reader's text, so such a cell is written with a leading apostrophe instead.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _inert(dataset: tablib.Dataset, *, xlsx: bool = False) -> tablib.Dataset:
    def cell(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if xlsx:  # openpyxl refuses control characters; they carry nothing a reviewer reads
            value = ILLEGAL_CHARACTERS_RE.sub("\N{REPLACEMENT CHARACTER}", value)
        return "'" + value if value.startswith(_FORMULA_START) else value

    inert = tablib.Dataset(headers=dataset.headers, title=dataset.title)
    for row in dataset:
        inert.append([cell(value) for value in row])
    return inert


class SpreadsheetCSV(base_formats.CSV):  # type: ignore[misc]  # django-import-export is untyped
    def export_data(self, dataset: tablib.Dataset, **kwargs: Any) -> Any:
        return super().export_data(_inert(dataset), **kwargs)


class SpreadsheetXLSX(base_formats.XLSX):  # type: ignore[misc]
    def export_data(self, dataset: tablib.Dataset, **kwargs: Any) -> Any:
        return super().export_data(_inert(dataset, xlsx=True), **kwargs)


EXPORT_FORMATS = (SpreadsheetCSV, SpreadsheetXLSX, base_formats.JSON)


class _Value(widgets.Widget):  # type: ignore[misc]
    """The value as it is: numbers and booleans stay typed in JSON and XLSX (None is empty)."""

    def render(self, value: Any, obj: Any = None, **kwargs: Any) -> Any:
        return value


class _Text(widgets.Widget):  # type: ignore[misc]
    """A value as text (an id), None as empty."""

    def render(self, value: Any, obj: Any = None, **kwargs: Any) -> Any:
        return None if value is None else str(value)


class _Timestamp(widgets.Widget):  # type: ignore[misc]
    """ISO 8601 with its offset, in every format (a spreadsheet then sorts it as text, correctly)."""

    def render(self, value: Any, obj: Any = None, **kwargs: Any) -> Any:
        return value.isoformat() if value is not None else None


def _field(attribute: str | None = None, widget: type[widgets.Widget] = _Value) -> Field:
    return Field(attribute=attribute, widget=widget())


def _heavy_answer_fields(prefix: str) -> list[str]:
    return [f"{prefix}{name}" for name in _ANSWER_HEAVY]


def feedback_sender(feedback: Feedback) -> str:
    """Who sent feedback, as reviewers see it: a user name, or an anonymous reader's short tag."""
    if feedback.user is not None:
        return str(feedback.user.get_username())
    return f"anonymous reader {feedback.client[:8]}" if feedback.client else "anonymous reader"


def flagged_source_label(feedback: Feedback) -> str | None:
    """The source a reader flagged, by the number the reader saw: `[2] Title`."""
    source = feedback.source
    return None if source is None else f"[{source.final_number}] {source.title}"


class _Resource(resources.Resource):  # type: ignore[misc]
    """Declared fields only (nothing read off the model by itself), named on the export page."""

    display_name = ""

    @classmethod
    def get_display_name(cls) -> str:
        return cls.display_name


class AnswerResource(_Resource):
    """An answer a row: what the answer list shows, its final text and its references."""

    id = _field("id", _Text)
    created_at = _field("created_at", _Timestamp)
    question = _field("question")
    origin = _field("origin")
    status = _field("status")
    delivery = _field("delivery")
    provider = _field("provider")
    model = _field("model")
    prompt_version = _field("prompt_version")
    final_text = _field("final_text")
    references = _field()
    retrieved = _field("retrieved_count")
    cited = _field("cited_count")
    dropped = _field("dropped_count")
    renumbered = _field("renumbered")
    fallback = _field("fallback")
    declined = _field("declined")
    stripped = _field()
    unsupported = _field("unsupported_count")
    grounded_uncited = _field("grounded_uncited_count")
    may_not_address = _field("may_not_address")
    review_verdict = _field("latest_verdict")
    unresolved_feedback = _field("unresolved_feedback")
    total_ms = _field("total_ms")
    error_kind = _field("error_kind")
    finished_at = _field("finished_at", _Timestamp)

    display_name = "Answers"

    def filter_export(self, queryset: QuerySet[Answer], **kwargs: Any) -> QuerySet[Answer]:
        final = AnswerSource.objects.filter(final_number__isnull=False).order_by("final_number")
        return queryset.defer(*_ANSWER_HEAVY).prefetch_related(
            Prefetch(
                "sources", queryset=final.only("answer_id", "final_number", "title", "url"), to_attr="final"
            )
        )

    def dehydrate_references(self, answer: Answer) -> str:
        """The final Sources list as readers saw it: `[1] Title <url>; [2] ...`."""
        final: list[AnswerSource] = getattr(answer, "final", [])
        return "; ".join(f"[{s.final_number}] {s.title}" + (f" <{s.url}>" if s.url else "") for s in final)

    def dehydrate_stripped(self, answer: Answer) -> int:
        return len(answer.stripped)


class ReviewResource(_Resource):
    """A review a row, corrected ones included (`counts` says which is its answer's latest)."""

    id = _field("id")
    created_at = _field("created_at", _Timestamp)
    answer_id = _field("answer_id", _Text)
    question = _field("answer__question")
    provider = _field("answer__provider")
    model = _field("answer__model")
    verdict = _field("verdict")
    notes = _field("notes")
    reviewer = _field()
    counts = _field("latest")
    source_flags = _field()

    display_name = "Reviews"

    def filter_export(self, queryset: QuerySet[Review], **kwargs: Any) -> QuerySet[Review]:
        flags = ReviewSourceFlag.objects.select_related("source").order_by("source__original_number", "pk")
        return (
            queryset.select_related("answer", "reviewer")
            .defer(*_heavy_answer_fields("answer__"))
            .prefetch_related(Prefetch("source_flags", queryset=flags))
        )

    def dehydrate_reviewer(self, review: Review) -> str | None:
        return review.reviewer.get_username() if review.reviewer else None

    def dehydrate_source_flags(self, review: Review) -> str:
        """`[2] Title: does_not_support (note); ...`, by the trail's (retrieval) number."""
        return "; ".join(
            f"[{f.source.original_number}] {f.source.title}: {f.flag}" + (f" ({f.note})" if f.note else "")
            for f in review.source_flags.all()
        )


class FeedbackResource(_Resource):
    """A reader's feedback a row (the sender as the list names it, never the address hash)."""

    id = _field("id")
    created_at = _field("created_at", _Timestamp)
    answer_id = _field("answer_id", _Text)
    question = _field("answer__question")
    verdict = _field("verdict")
    flagged_source = _field()
    comment = _field("comment")
    sender = _field()
    resolved = _field("resolved")
    resolved_at = _field("resolved_at", _Timestamp)
    resolved_by_review = _field("resolved_by_id")

    display_name = "Reader feedback"

    def filter_export(self, queryset: QuerySet[Feedback], **kwargs: Any) -> QuerySet[Feedback]:
        return queryset.select_related("answer", "source", "user").defer(*_heavy_answer_fields("answer__"))

    def dehydrate_flagged_source(self, feedback: Feedback) -> str | None:
        return flagged_source_label(feedback)

    def dehydrate_sender(self, feedback: Feedback) -> str:
        return feedback_sender(feedback)


class QAExportMixin(ExportMixin, _ExportMixinBase):  # type: ignore[misc]
    """*Export* on a QA list: CSV, XLSX or JSON of the rows its filters and search select."""

    export_template_name = "admin/answers/export.html"

    def get_export_formats(self) -> list[type[base_formats.Format]]:
        return list(EXPORT_FORMATS)

    def has_export_permission(self, request: HttpRequest) -> bool:
        return may_read_trails(request.user) and self.has_view_permission(request)
