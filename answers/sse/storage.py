"""Where every answer event is stored before it is published: a late client replays its channel from here."""

from __future__ import annotations

import json
from collections.abc import Sequence
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
    counter (its row lock orders concurrent appends), read it, insert the event (or
    the events: `append_events`).
    Reading (`get_events`, `get_current_id`) and the table layout are the stock ones.
    """

    def append_event(self, channel: str, event_type: str, data: Any) -> Event:
        return self.append_events(channel, [(event_type, data)])[0]

    def append_events(self, channel: str, events: Sequence[tuple[str, Any]]) -> list[Event]:
        """Append several events to one channel in one transaction, with consecutive ids, in order
        (a delta and the `cite` events before it cost one commit, not one each)."""
        rows = [(event_type, json.dumps(data, cls=DjangoJSONEncoder)) for event_type, data in events]
        count = len(rows)
        with transaction.atomic():
            counters = EventCounter.objects.filter(name=channel)
            if not counters.update(value=F("value") + count):
                try:
                    with transaction.atomic():
                        EventCounter.objects.create(name=channel, value=count)
                        # Event 0 marks the channel's start: replay asks for "everything after 0".
                        StoredEvent.objects.bulk_create([StoredEvent(channel=channel, eid=0)])
                except IntegrityError:  # another writer created the channel first
                    counters.update(value=F("value") + count)
            last = counters.values_list("value", flat=True).get()
            first = last - count + 1
            StoredEvent.objects.bulk_create(
                [
                    StoredEvent(channel=channel, type=event_type, data=stored, eid=first + i)
                    for i, (event_type, stored) in enumerate(rows)
                ]
            )
        return [Event(channel, event_type, data, id=first + i) for i, (event_type, data) in enumerate(events)]
