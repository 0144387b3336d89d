"""SSE channels: one per answer, named from its id; publishing its events; who may read them.

Events are stored (DjangoModelStorage) before they are published, so a client
that connects late replays the channel from its start.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django_eventstream import send_event
from django_eventstream.channelmanager import DefaultChannelManager

from answers.retrieval.types import RetrievedSource

CHANNEL_PREFIX = "answer-"

REFERENCES = "references"
DELTA = "delta"
DONE = "done"
ERROR = "error"


def channel_for(answer_id: uuid.UUID | str) -> str:
    return f"{CHANNEL_PREFIX}{answer_id}"


def answer_id_from_channel(channel: str) -> uuid.UUID | None:
    if not channel.startswith(CHANNEL_PREFIX):
        return None
    try:
        return uuid.UUID(channel.removeprefix(CHANNEL_PREFIX))
    except ValueError:
        return None


def publish_references(answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> None:
    from answers.selectors import reference_payload

    references = [reference_payload(s, s.number) for s in sources]
    send_event(channel_for(answer_id), REFERENCES, {"references": references})


def publish_delta(answer_id: uuid.UUID, text: str) -> None:
    send_event(channel_for(answer_id), DELTA, {"text": text})


def publish_done(answer: Any) -> None:
    from answers.selectors import answer_done_payload

    send_event(channel_for(answer.id), DONE, answer_done_payload(answer=answer))


def publish_error(answer_id: uuid.UUID, detail: str) -> None:
    send_event(channel_for(answer_id), ERROR, {"detail": detail})


class AnswerChannelManager(DefaultChannelManager):  # type: ignore[misc]
    """Only answer channels exist, and only those allowed to read the answer may read them."""

    def get_channels_for_request(self, request: Any, view_kwargs: dict[str, Any]) -> set[str]:
        # Channels come only from the route (answers.views.answer_events), never from a
        # `?channel=` query parameter, so a stream request cannot ask for other channels.
        return {c for c in view_kwargs.get("channels", ()) if answer_id_from_channel(c) is not None}

    def can_read_channel(self, user: Any, channel: str) -> bool:
        from answers.selectors import answer_readable_by

        answer_id = answer_id_from_channel(channel)
        return answer_id is not None and answer_readable_by(answer_id=answer_id, user=user)


def events_url(answer_id: uuid.UUID | str) -> str:
    """The stream's URL, asking for replay from the channel's start (late clients get everything)."""
    from django.urls import reverse

    channel = channel_for(answer_id)
    return f"{reverse('answers:events', kwargs={'answer_id': answer_id})}?lastEventId={channel}:0"
