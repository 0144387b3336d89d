"""Reader feedback for reviewers: a list of it all, read-only, which they may mark resolved.

Feedback is what readers sent (answers.feedback); reviewers change nothing in it but whether
it is resolved (a review resolves the answer's feedback by itself; see answers.admin.reviews).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.contrib.admin.models import CHANGE, LogEntry
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.safestring import SafeString

from answers.admin.exports import FeedbackResource, QAExportMixin, feedback_sender, flagged_source_label
from answers.admin.reviews import answer_link
from answers.feedback import feedback_resolve
from answers.models import Feedback

if TYPE_CHECKING:
    # The admin classes are generic only to the type checker (no django_stubs_ext monkeypatch at runtime).
    _FeedbackAdminBase = admin.ModelAdmin[Feedback]
else:
    _FeedbackAdminBase = admin.ModelAdmin


class ResolvedFilter(admin.SimpleListFilter):
    title = "resolved"
    parameter_name = "resolved"

    def lookups(self, request: HttpRequest, model_admin: object) -> list[tuple[str, str]]:
        return [("no", "Unresolved"), ("yes", "Resolved")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Feedback]) -> QuerySet[Feedback] | None:
        if self.value() in ("yes", "no"):
            return queryset.filter(resolved_at__isnull=self.value() == "no")
        return None


class FlaggedFilter(admin.SimpleListFilter):
    title = "flagged a source"
    parameter_name = "flagged"

    def lookups(self, request: HttpRequest, model_admin: object) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Feedback]) -> QuerySet[Feedback] | None:
        if self.value() in ("yes", "no"):
            return queryset.filter(source__isnull=self.value() == "no")
        return None


class FeedbackAdmin(QAExportMixin, _FeedbackAdminBase):
    list_display = (
        "answer_question",
        "verdict",
        "flagged_source",
        "comment_short",
        "sender",
        "created_at",
        "resolved",
    )
    # The first column links to the answer; each feedback's own page is reached by its verdict (two
    # links in one cell would nest, and the browser would leave an empty link before the question).
    list_display_links = ("verdict",)
    list_filter = ("verdict", FlaggedFilter, ResolvedFilter, "created_at")
    list_select_related = ("answer", "source", "user")
    search_fields = ("answer__question", "comment")
    ordering = ("-created_at", "-id")
    actions = ("mark_resolved",)
    resource_classes = (FeedbackResource,)
    fields = (
        "answer",
        "verdict",
        "source",
        "comment",
        "user",
        "client",
        "created_at",
        "resolved_at",
        "resolved_by",
        "resolver",
    )
    readonly_fields = fields

    # Feedback quotes answers: like the answer pages, it needs the trail permission too.
    def has_view_permission(self, request: HttpRequest, obj: Feedback | None = None) -> bool:
        return super().has_view_permission(request, obj) and request.user.has_perm("answers.view_trail")

    def has_change_permission(self, request: HttpRequest, obj: Feedback | None = None) -> bool:
        return super().has_change_permission(request, obj) and request.user.has_perm("answers.view_trail")

    # Readers write feedback (the API); nobody adds or deletes it here.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Feedback | None = None) -> bool:
        return False

    @admin.display(description="answer", ordering="answer__question")
    def answer_question(self, obj: Feedback) -> SafeString:
        return answer_link(obj)

    @admin.display(description="flagged source")
    def flagged_source(self, obj: Feedback) -> str:
        return flagged_source_label(obj) or "—"

    @admin.display(description="comment")
    def comment_short(self, obj: Feedback) -> str:
        return obj.comment if len(obj.comment) <= 120 else obj.comment[:119] + "…"

    @admin.display(description="from")
    def sender(self, obj: Feedback) -> str:
        return feedback_sender(obj)

    @admin.display(description="resolved", boolean=True, ordering="resolved_at")
    def resolved(self, obj: Feedback) -> bool:
        return obj.resolved

    @admin.action(description="Mark the selected feedback resolved", permissions=["change"])
    def mark_resolved(self, request: HttpRequest, queryset: QuerySet[Feedback]) -> None:
        resolved = feedback_resolve(queryset=queryset, user=request.user)
        actor = request.user.pk
        assert actor is not None  # admin runs actions for signed-in staff only
        # In each feedback's history, as admin's own changes are: who resolved it, and when.
        LogEntry.objects.log_actions(
            user_id=actor, queryset=resolved, action_flag=CHANGE, change_message="Marked resolved."
        )
        self.message_user(request, f"{len(resolved)} marked resolved.", messages.SUCCESS)
