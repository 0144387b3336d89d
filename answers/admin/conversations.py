"""Conversations in the QA admin: the follow-up filter and the conversation panel of the answer page,
the list (each conversation's first question, turns and asker), and the conversation's own read-only
page: its turns with their outcomes, then each turn as its reader got it, linked to its trail."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.crypto import salted_hmac
from django.utils.safestring import SafeString

from answers.admin.panels.summary import answer_summary
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


def session_tag(session_key: str) -> str:
    """A short tag that tells one anonymous session's conversations from another's, stable for a session,
    from which the session key (a credential: whoever holds it continues the conversation) cannot be had."""
    return salted_hmac("answers.admin.conversations.session_tag", session_key).hexdigest()[:8]


def asker_label(conversation: Conversation) -> str:
    """Who started a conversation, as reviewers see it: a user name, or an anonymous session's tag."""
    if conversation.asker is not None:
        return str(conversation.asker.get_username())
    if conversation.session_key:
        return f"anonymous session {session_tag(conversation.session_key)}"
    return "anonymous (no session)"


class ConversationAdmin(_ConversationAdminBase):
    """Read-only, for QA reviewers: a conversation and its turns, with their outcomes and as read."""

    list_display = ("first_question", "turn_count", "asker_shown", "created_at")
    list_display_links = ("first_question",)
    list_filter = ("created_at",)
    search_fields = ("turns__question",)
    ordering = ("-created_at",)
    fields = ("id", "asker_shown", "created_at", "turns_table", "thread")
    readonly_fields = fields

    class Media:
        css = {"all": ("answers/admin_answer.css",)}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Conversation | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Conversation | None = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Conversation | None = None) -> bool:
        return may_read_trails(request.user)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Conversation]:
        first = Answer.objects.filter(conversation=OuterRef("pk")).order_by("turn").values("question")[:1]
        return (
            super()
            .get_queryset(request)
            .annotate(turns_total=Count("turns"), first_question_text=Subquery(first))
            .select_related("asker")
        )

    @admin.display(description="first question", ordering="first_question_text")
    def first_question(self, obj: Conversation) -> str:
        question = str(getattr(obj, "first_question_text", None) or "(no turn)")
        return question if len(question) <= 100 else question[:99] + "…"

    @admin.display(description="turns", ordering="turns_total")
    def turn_count(self, obj: Conversation) -> int:
        return int(getattr(obj, "turns_total", 0))

    @admin.display(description="asker", ordering="asker__username")
    def asker_shown(self, obj: Conversation) -> str:
        return asker_label(obj)

    @admin.display(description="each turn as its reader got it")
    def thread(self, obj: Conversation) -> SafeString:
        answers = obj.turns.order_by("turn").prefetch_related("sources")
        return SafeString(
            render_to_string(
                TEMPLATES + "thread.html",
                {"summaries": [answer_summary(answer, list(answer.sources.all())) for answer in answers]},
            )
        )

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
