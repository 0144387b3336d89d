"""SSE channels: one per answer, named from its id, and the one decision on who may read them.

The stream view (answers.sse.views) asks `stream_refusal` (who asks, then `stream_access`) once
per stream and reads the store as an `Admitted` reader; django-eventstream asks the channel
manager, which admits such a reader without asking again and calls `stream_access` for anyone
else (a GRIP proxy's catch-up request).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django_eventstream.channelmanager import DefaultChannelManager

from answers import selectors
from answers.auth import AuthenticationFailed, challenge, request_user
from answers.retrieval.access import NOTHING_WITHHELD, Redaction

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


def stream_redaction(*, answer_id: uuid.UUID, user: Any) -> Redaction:
    """What of the answer's sources `user` may no longer read (selectors.answer_redaction)."""
    answer = selectors.answer_sources_get(answer_id=answer_id)
    return NOTHING_WITHHELD if answer is None else selectors.answer_redaction(answer=answer, user=user)


def stream_refusal(request: HttpRequest, answer_id: uuid.UUID | None) -> JsonResponse | None:
    """Why this request may not open the answer's stream, as its response, or None when it may.

    Who asks is decided as on the API (answers.auth; `request.user` is set to them): a token that
    does not hold is a `401` with `WWW-Authenticate: Token`; then anyone who may not read the answer
    gets the `404` of a missing one (`answer_id` None: an id in no accepted form), as on the API and
    the page. Reads the database: call it from a worker thread.
    """
    try:
        user = request_user(request)
    except AuthenticationFailed as exc:
        response = JsonResponse({"detail": str(exc.detail)}, status=401)
        response["WWW-Authenticate"] = challenge()
        return response
    if answer_id is None or stream_access(answer_id=answer_id, user=user) is not selectors.Access.READ:
        return JsonResponse({"detail": "No answer has this id."}, status=404)
    return None


@dataclass(frozen=True)
class Admitted:
    """A reader stream_access already let in to `channels`: django-eventstream's reads of the store
    (the first, and each re-read after a gap) pass it as their user, so access is decided once.

    `redaction`: the answer's sources this reader may no longer read; the stream shows them as
    `{"number", "withheld": true}` in every event that carries references (stored or live).
    """

    channels: frozenset[str]
    redaction: Redaction = NOTHING_WITHHELD


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
