"""Conversations in the QA admin: the follow-up filter and the conversation panel of the answer page,
and the conversation's own read-only page listing its turns with their outcomes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString

from answers.models import Answer, AnswerSource, Conversation
from answers.selectors import may_read_trails

if TYPE_CHECKING:
    _ConversationAdminBase = admin.ModelAdmin[Conversation]
else:
    _ConversationAdminBase = admin.ModelAdmin

TEMPLATES = "admin/answers/conversation/"


class FollowUpFilter(admin.SimpleListFilter):
    """Answers that are follow-ups (turn 2 on) or first turns."""

    title = "follow-up"
    parameter_name = "follow_up"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes (turn 2 on)"), ("no", "No (a first turn)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        if self.value() == "yes":
            return queryset.filter(turn__gt=1)
        if self.value() == "no":
            return queryset.filter(turn=1)
        return None


def _turn_rows(answers: list[Answer], current: Answer | None = None) -> list[dict[str, Any]]:
    rows = []
    for answer in answers:
        sources = list(answer.sources.all())
        rows.append(
            {
                "answer": answer,
                "url": reverse("admin:answers_answer_change", args=[answer.pk]),
                "current": current is not None and answer.pk == current.pk,
                "cited": sum(1 for s in sources if s.status == AnswerSource.Status.CITED),
                "retrieved": len(sources),
                "dropped": sum(1 for s in sources if s.status == AnswerSource.Status.DROPPED),
            }
        )
    return rows


def conversation_panel(answer: Answer) -> SafeString:
    """The answer page's conversation panel: its turn, the earlier turns (linked), the standalone
    question and how it was made, the history the prompt carried and what was cut."""
    if answer.conversation_id is None:
        return SafeString("Not part of a conversation (asked before conversations existed).")
    turns = list(
        Answer.objects.filter(conversation_id=answer.conversation_id)
        .order_by("turn")
        .prefetch_related("sources")
    )
    history = answer.history if isinstance(answer.history, dict) else None
    return SafeString(
        render_to_string(
            TEMPLATES + "panel.html",
            {
                "answer": answer,
                "conversation_url": reverse(
                    "admin:answers_conversation_change", args=[answer.conversation_id]
                ),
                "permalink": reverse(
                    "answers:conversation", kwargs={"conversation_id": answer.conversation_id}
                ),
                "rows": _turn_rows(turns, answer),
                "rewrite": answer.rewrite if isinstance(answer.rewrite, dict) else None,
                "history": history,
            },
        )
    )


class ConversationAdmin(_ConversationAdminBase):
    """Read-only, for QA reviewers: a conversation and its turns with their outcomes."""

    list_display = ("id", "asker", "turn_count", "created_at")
    list_filter = ("created_at",)
    ordering = ("-created_at",)
    fields = ("id", "asker", "created_at", "turns_table")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Conversation | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Conversation | None = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Conversation | None = None) -> bool:
        return may_read_trails(request.user)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Conversation]:
        return super().get_queryset(request).annotate(turns_total=Count("turns")).select_related("asker")

    @admin.display(description="turns", ordering="turns_total")
    def turn_count(self, obj: Conversation) -> int:
        return int(getattr(obj, "turns_total", 0))

    @admin.display(description="turns")
    def turns_table(self, obj: Conversation) -> SafeString:
        answers = list(obj.turns.order_by("turn").prefetch_related("sources"))
        return SafeString(
            render_to_string(
                TEMPLATES + "turns.html",
                {
                    "rows": _turn_rows(answers),
                    "permalink": reverse("answers:conversation", kwargs={"conversation_id": obj.id}),
                },
            )
        )
