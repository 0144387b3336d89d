"""Reviews: the only thing QA reviewers write (a verdict per answer, with flags on its sources).

Append-only (docs/reference/models.md, "Reviews"): a saved review and its flags are shown, never changed or
deleted; a correction is a new review, and the answer's latest review is the one that counts.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IS_POPUP_VAR
from django.db.models import F, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from answers.admin.exports import QAExportMixin, ReviewResource
from answers.admin.filters import LatestReviewFilter
from answers.admin.panels.summary import answer_summary
from answers.admin.panels.support import support_panel
from answers.admin.selectors import review_is_latest_expression
from answers.feedback import feedback_resolve_for_review
from answers.models import Answer, AnswerSource, Feedback, Review, ReviewSourceFlag
from answers.selectors import may_read_trails

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

    # For an inline, `obj` is the parent review (the stubs type it as the inline's model): flags are
    # written with their review, never added to, changed in or removed from a saved one.
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_add_permission(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReviewAdmin(QAExportMixin, _ReviewAdminBase):
    list_display = ("answer_question", "verdict", "reviewer", "created_at", "counts")
    # The first column links to the answer; the review's own page is reached by its verdict (two links
    # in one cell would nest, and the browser would leave an empty link before the question).
    list_display_links = ("verdict",)
    list_filter = ("verdict", LatestReviewFilter, "created_at")
    list_select_related = ("answer", "reviewer")
    search_fields = ("answer__question", "notes")
    ordering = ("-created_at", "-id")
    raw_id_fields = ("answer",)
    inlines = (ReviewSourceFlagInline,)
    resource_classes = (ReviewResource,)

    class Media:
        css = {"all": ("answers/admin_answer.css", "answers/admin_review.css")}

    fields = ("answer", "verdict", "notes", "reviewer", "created_at")
    readonly_fields = ("reviewer", "created_at")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Review]:
        reviews: QuerySet[Review] = super().get_queryset(request)
        return reviews.annotate(latest=review_is_latest_expression())

    # Append-only: a saved review is shown (its page has no save or delete), a correction is a new one.
    def has_change_permission(self, request: HttpRequest, obj: Review | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Review | None = None) -> bool:
        return False

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # One button: a saved review cannot be edited further, and the next one is for another answer.
        extra_context = {**(extra_context or {}), "show_save_and_continue": False}
        extra_context["show_save_and_add_another"] = False
        return super().add_view(request, form_url, extra_context)

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Review | None = None,
    ) -> HttpResponse:
        # The form (and a saved review's page) shows the answer it is about.
        answer_id = obj.answer_id if obj is not None else _answer_id_from(request)
        context["reviewed"] = reviewed_answer(request, answer_id)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def save_model(self, request: HttpRequest, obj: Review, form: Any, change: bool) -> None:
        obj.reviewer = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)
        # A new review covers the reader feedback the answer had by then (admin's save is atomic).
        feedback_resolve_for_review(review=obj)

    def response_add(
        self, request: HttpRequest, obj: Review, post_url_continue: str | None = None
    ) -> HttpResponse:
        if IS_POPUP_VAR in request.POST:
            return super().response_add(request, obj, post_url_continue)
        resolved = Feedback.objects.filter(resolved_by=obj).count()
        self.message_user(request, review_saved_message(obj, resolved=resolved), messages.SUCCESS)
        # Back to the answer the reviewer came from, where the new review now heads the reviews.
        if may_read_trails(request.user):
            return HttpResponseRedirect(reverse("admin:answers_answer_change", args=[obj.answer_id]))
        return HttpResponseRedirect(reverse("admin:answers_review_changelist"))

    @admin.display(description="answer", ordering="answer__question")
    def answer_question(self, obj: Review) -> SafeString:
        return answer_link(obj)

    @admin.display(description="counts (latest of its answer)", boolean=True, ordering="latest")
    def counts(self, obj: Review) -> bool:
        return bool(getattr(obj, "latest", False))


def reviewed_answer(request: HttpRequest, answer_id: uuid.UUID | None) -> dict[str, Any] | None:
    """What the review form shows above itself, so the reviewer needs no other tab: the answer as its
    reader got it (question, final text, Sources) and its support check. Only for whoever may read the
    trails (the support record is the trail's); None when there is no such answer."""
    if answer_id is None or not may_read_trails(request.user):
        return None
    answer = Answer.objects.filter(pk=answer_id).prefetch_related("sources").first()
    if answer is None:
        return None
    sources = list(answer.sources.all())
    return {"summary": answer_summary(answer, sources), "support": support_panel(answer, sources)}


def review_saved_message(review: Review, *, resolved: int) -> str:
    """What saving a review says: its verdict, the answer by its question, the feedback it resolved."""
    feedback = {0: "no reader feedback", 1: "1 reader feedback item"}.get(
        resolved, f"{resolved} reader feedback items"
    )
    question = Truncator(review.answer.question).chars(100)
    return f"Review saved: “{review.get_verdict_display()}” on “{question}”. It resolved {feedback}."
