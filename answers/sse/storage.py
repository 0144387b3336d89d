"""Where every answer event is stored before it is published: a late client replays its channel from here."""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.db.models import F
from django_eventstream.event import Event
from django_eventstream.models import Event as StoredEvent
from django_eventstream.models import EventCounter
from django_eventstream.storage import DjangoModelStorage


class AnswerEventStorage(DjangoModelStorage):  # type: ignore[misc]
    """django-eventstream's database storage, keeping every event and appending in one transaction.

    The stock class deletes events older than a day (a query on every append), after
    which a late client could no longer replay an answer; and it spends five or six
    queries per append. Here an append is one short transaction: bump the channel's
    counter (its row lock orders concurrent appends), read it, insert the event.
    Reading (`get_events`, `get_current_id`) and the table layout are the stock ones.
    """

    def append_event(self, channel: str, event_type: str, data: Any) -> Event:
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
