"""Conversations: answers asked one after the other, each a turn."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse


class Conversation(models.Model):
    """Answers asked one after the other, each a turn with its own retrieval, Sources list and trail.

    Read by whoever may read its answers; continued only by whoever started it: the signed-in
    asker, or for an anonymous one the same session (answers/conversations/services.py). A deleted
    user's conversation stays theirs (`started_signed_in`): staff only.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    asker = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="conversations",
    )
    started_signed_in = models.BooleanField(
        default=False,
        editable=False,
        help_text=(
            "Started by a signed-in user: readable by that user and staff only, "
            "even once the user is deleted."
        ),
    )
    session_key = models.CharField(
        max_length=64,
        blank=True,
        editable=False,
        help_text="For an anonymous conversation, the session that may add turns to it.",
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # As an answer's asked_signed_in: without an asker, anonymous or its asker since deleted.
            models.CheckConstraint(
                condition=models.Q(asker__isnull=True) | models.Q(started_signed_in=True),
                name="conversation_asker_is_signed_in",
            ),
        ]

    def __str__(self) -> str:
        return f"Conversation {self.id}"

    def get_absolute_url(self) -> str:
        return reverse("answers:conversation", kwargs={"conversation_id": self.id})
