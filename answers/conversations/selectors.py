"""Reads of conversations: one with its turns (answers with their sources), under the answers' read rules."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Prefetch

from answers.conversations.services import Asker, reader_conversations
from answers.models import Answer, Conversation
from answers.selectors import with_sources


def conversation_get(*, conversation_id: uuid.UUID, user: Any) -> Conversation | None:
    """The conversation with `turn_list` (its answers in turn order, sources loaded), or None when
    it does not exist, `user` may not read it, or an evaluation run asked it (reader_conversations)."""
    conversation = (
        Conversation.objects.prefetch_related(
            Prefetch(
                "turns",
                queryset=Answer.objects.order_by("turn").prefetch_related(with_sources()),
                to_attr="turn_list",
            )
        )
        .filter(id=conversation_id, pk__in=reader_conversations())
        .first()
    )
    if conversation is None or not Asker.of(user).may_read(conversation):
        return None
    return conversation


def earlier_questions(answer: Answer) -> list[str]:
    """The questions asked before `answer` in its conversation, in turn order (none for a first turn)."""
    if answer.conversation_id is None or answer.turn <= 1:
        return []
    return list(
        Answer.objects.filter(conversation_id=answer.conversation_id, turn__lt=answer.turn)
        .order_by("turn")
        .values_list("question", flat=True)
    )


def conversation_turns(conversation: Conversation) -> list[Answer]:
    """The answers of a conversation from conversation_get, in turn order."""
    return list(getattr(conversation, "turn_list", None) or conversation.turns.order_by("turn"))
