"""SSE channels: one per answer, named from its id, and the one decision on who may read them.

The stream view (answers.sse.views) asks `stream_access` once per stream and
reads the store as an `Admitted` reader; django-eventstream asks the channel
manager, which admits such a reader without asking again and calls
`stream_access` for anyone else (a GRIP proxy's catch-up request).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.urls import reverse
from django_eventstream.channelmanager import DefaultChannelManager

from answers import selectors

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


def events_url(answer_id: uuid.UUID | str) -> str:
    """The stream's URL, asking for replay from the channel's start (late clients get everything)."""
    channel = channel_for(answer_id)
    return f"{reverse('answers:events', kwargs={'answer_id': answer_id})}?lastEventId={channel}:0"


def stream_access(*, answer_id: uuid.UUID, user: Any) -> selectors.Access:
    """Whether `user` may read the answer's stream: the answer's own read rules, nothing else."""
    return selectors.answer_access(answer_id=answer_id, user=user)


@dataclass(frozen=True)
class Admitted:
    """A reader stream_access already let in to `channels`: django-eventstream's reads of the store
    (the first, and each re-read after a gap) pass it as their user, so access is decided once."""

    channels: frozenset[str]


class AnswerChannelManager(DefaultChannelManager):  # type: ignore[misc]
    """Only answer channels exist, and only those allowed to read the answer may read them."""

    def get_channels_for_request(self, request: Any, view_kwargs: dict[str, Any]) -> set[str]:
        # Channels come only from the route (answers.sse.views.answer_events), never from a
        # `?channel=` query parameter, so a stream request cannot ask for other channels.
        return {c for c in view_kwargs.get("channels", ()) if answer_id_from_channel(c) is not None}

    def can_read_channel(self, user: Any, channel: str) -> bool:
        if isinstance(user, Admitted):
            return channel in user.channels
        answer_id = answer_id_from_channel(channel)
        return (
            answer_id is not None and stream_access(answer_id=answer_id, user=user) is selectors.Access.READ
        )
