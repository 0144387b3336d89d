"""Reviews: the only thing QA reviewers write (a verdict per answer, with flags on its sources)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin
from django.db.models import F
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString

from answers.feedback import feedback_resolve_for_review
from answers.models import AnswerSource, Feedback, Review, ReviewSourceFlag

if TYPE_CHECKING:
    # The admin classes are generic only to the type checker (no django_stubs_ext monkeypatch at runtime).
    _ReviewAdminBase = admin.ModelAdmin[Review]
    _FlagInlineBase = admin.TabularInline[ReviewSourceFlag, Review]
else:
    _ReviewAdminBase = admin.ModelAdmin
    _FlagInlineBase = admin.TabularInline


def _answer_id_from(request: HttpRequest) -> uuid.UUID | None:
    raw = request.POST.get("answer") or request.GET.get("answer")
    try:
        return uuid.UUID(str(raw)) if raw else None
    except ValueError:
        return None


def _owns(request: HttpRequest, review: Review | None) -> bool:
    """Reviewers change only what they wrote; superusers anything."""
    return review is None or request.user.is_superuser or review.reviewer_id == request.user.pk


def answer_link(obj: Review | Feedback) -> SafeString:
    """The answer a review or a feedback is about, in a list: its question, linking to its admin page."""
    return render_to_string(
        "admin/answers/review/answer_link.html",
        {
            "url": reverse("admin:answers_answer_change", args=[obj.answer_id]),
            "question": obj.answer.question,
        },
    )


def source_label(source: AnswerSource) -> str:
    """A source in the review form: `[final] title (retrieved as [original])`, or `dropped: ...`."""
    retrieved = f"(retrieved as [{source.original_number}])"
    if source.final_number is None:
        return f"dropped: {source.title} {retrieved}"
    return f"[{source.final_number}] {source.title} {retrieved}"


class ReviewSourceFlagInline(_FlagInlineBase):
    model = ReviewSourceFlag
    fields = ("source", "flag", "note")
    extra = 1

    def get_formset(
        self, request: HttpRequest, obj: Review | None = None, **kwargs: Any
    ) -> type[BaseInlineFormSet[Any, Any, Any]]:
        formset = super().get_formset(request, obj, **kwargs)
        answer_id = obj.answer_id if obj is not None else _answer_id_from(request)
        field = formset.form.base_fields.get("source")
        if isinstance(field, forms.ModelChoiceField):
            # Only the reviewed answer's own sources can be flagged.
            field.queryset = (
                AnswerSource.objects.filter(answer_id=answer_id).order_by(
                    F("final_number").asc(nulls_last=True), "original_number"
                )
                if answer_id
                else AnswerSource.objects.none()
            )
            # Named as readers saw them (the final number), the retrieval number beside (the trail's).
            field.label_from_instance = source_label  # type: ignore[assignment]  # Django's documented hook
        return formset

    def has_add_permission(self, request: HttpRequest, obj: Review | None = None) -> bool:
        return super().has_add_permission(request, obj) and _owns(request, obj)

    # For an inline, `obj` is the parent review (the stubs type it as the inline's model).
    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and _owns(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and _owns(request, obj)


class ReviewAdmin(_ReviewAdminBase):
    list_display = ("answer_question", "verdict", "reviewer", "created_at", "updated_at")
    # The first column links to the answer; the review's own page is reached by its verdict (two links
    # in one cell would nest, and the browser would leave an empty link before the question).
    list_display_links = ("verdict",)
    list_filter = ("verdict", "created_at")
    list_select_related = ("answer", "reviewer")
    search_fields = ("answer__question", "notes")
    ordering = ("-created_at", "-id")
    raw_id_fields = ("answer",)
    inlines = (ReviewSourceFlagInline,)

    class Media:
        css = {"all": ("answers/admin_review.css",)}

    fields = ("answer", "verdict", "notes", "reviewer", "created_at", "updated_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Review | None = None) -> tuple[str, ...]:
        # A review stays on the answer it was written for.
        return ("reviewer", "created_at", "updated_at", *(("answer",) if obj is not None else ()))

    def has_change_permission(self, request: HttpRequest, obj: Review | None = None) -> bool:
        return super().has_change_permission(request, obj) and _owns(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Review | None = None) -> bool:
        # Verdicts are kept with their reviewer and time.
        return False

    def save_model(self, request: HttpRequest, obj: Review, form: Any, change: bool) -> None:
        if not change:
            obj.reviewer = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)
        if not change:
            # A new review covers the reader feedback the answer had by then (admin's save is atomic).
            feedback_resolve_for_review(review=obj)

    @admin.display(description="answer", ordering="answer__question")
    def answer_question(self, obj: Review) -> SafeString:
        return answer_link(obj)
