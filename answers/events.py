"""SSE channels: one per answer, named from its id; who may read them."""

from __future__ import annotations

import uuid
from typing import Any

from django_eventstream.channelmanager import DefaultChannelManager

CHANNEL_PREFIX = "answer-"


def channel_for(answer_id: uuid.UUID | str) -> str:
    return f"{CHANNEL_PREFIX}{answer_id}"


def answer_id_from_channel(channel: str) -> uuid.UUID | None:
    if not channel.startswith(CHANNEL_PREFIX):
        return None
    try:
        return uuid.UUID(channel.removeprefix(CHANNEL_PREFIX))
    except ValueError:
        return None


class AnswerChannelManager(DefaultChannelManager):  # type: ignore[misc]
    """Only answer channels exist, and only those allowed to read the answer may read them."""

    def can_read_channel(self, user: Any, channel: str) -> bool:
        from answers.selectors import answer_readable_by

        answer_id = answer_id_from_channel(channel)
        return answer_id is not None and answer_readable_by(answer_id=answer_id, user=user)
