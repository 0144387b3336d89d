"""SSE channels: one per answer, named from its id; publishing its events; who may read them.

Every event is stored (AnswerEventStorage) before it is published, so a client
that connects late replays the channel from its start. Publishing then reaches
live listeners: through Redis when REDIS_URL is set (every server process), else
in this process. Redis faults never stop an answer: events are stored anyway,
this process's listeners get them directly, and other processes' listeners
re-read the store once Redis is back (answers.fanout).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.db.models import F
from django_eventstream.channelmanager import DefaultChannelManager
from django_eventstream.event import Event
from django_eventstream.storage import DjangoModelStorage
from django_eventstream.utils import get_storage, publish_event

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


logger = logging.getLogger(__name__)


def send(channel: str, event_type: str, payload: dict[str, Any]) -> Event:
    """Store the event, then deliver it live (Redis or this process) and to a GRIP proxy if any.

    Only storing can fail (the database is the record); delivery problems are logged,
    and clients catch up from the store.
    """
    from answers.fanout import fanout

    data = json.dumps(payload, cls=DjangoJSONEncoder)
    event: Event = get_storage().append_event(channel, event_type, data)
    fanout().publish(event)
    try:
        publish_event(channel, event_type, data, str(event.id), str(event.id - 1))
    except Exception:
        logger.warning("event %s:%s not published to the GRIP proxy", channel, event.id, exc_info=True)
    return event


def publish_references(answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> None:
    from answers.selectors import reference_payload

    references = [reference_payload(s, s.number) for s in sources]
    send(channel_for(answer_id), REFERENCES, {"references": references})


def publish_delta(answer_id: uuid.UUID, text: str) -> None:
    send(channel_for(answer_id), DELTA, {"text": text})


def publish_done(answer: Any) -> None:
    from answers.selectors import answer_done_payload

    send(channel_for(answer.id), DONE, answer_done_payload(answer=answer))


def publish_error(answer_id: uuid.UUID, detail: str) -> None:
    send(channel_for(answer_id), ERROR, {"detail": detail})


class AnswerEventStorage(DjangoModelStorage):  # type: ignore[misc]
    """django-eventstream's database storage, keeping every event and appending in one transaction.

    The stock class deletes events older than a day (a query on every append), after
    which a late client could no longer replay an answer; and it spends five or six
    queries per append. Here an append is one short transaction: bump the channel's
    counter (its row lock orders concurrent appends), read it, insert the event.
    Reading (`get_events`, `get_current_id`) and the table layout are the stock ones.
    """

    def append_event(self, channel: str, event_type: str, data: Any) -> Event:
        from django_eventstream.models import Event as StoredEvent
        from django_eventstream.models import EventCounter

        stored = json.dumps(data, cls=DjangoJSONEncoder)
        with transaction.atomic():
            counters = EventCounter.objects.filter(name=channel)
            if not counters.update(value=F("value") + 1):
                try:
                    with transaction.atomic():
                        EventCounter.objects.create(name=channel, value=1)
                        # Event 0 marks the channel's start: replay asks for "everything after 0".
                        StoredEvent.objects.bulk_create([StoredEvent(channel=channel, eid=0)])
                except IntegrityError:  # another writer created the channel first
                    counters.update(value=F("value") + 1)
            eid = counters.values_list("value", flat=True).get()
            StoredEvent.objects.bulk_create(
                [StoredEvent(channel=channel, type=event_type, data=stored, eid=eid)]
            )
        return Event(channel, event_type, data, id=eid)


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
