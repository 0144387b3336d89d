"""What a stream replays first: the stored events from the client's last id, or, when the store no
longer holds (or never held) a finished answer's events, its outcome from the answer's record.

- Without `Last-Event-ID` (or `?lastEventId=`), a stream replays from the channel's start, as
  the events URL the API hands out asks (`lastEventId=answer-<id>:0`).
- A finished answer whose events were deleted (`manage.py trim_events`, after
  ANSWERS_EVENT_RETENTION) or never stored (the JSON path publishes no events) replays from its
  record: a `references` event (the stored retrieved list, in retrieval order) and its `done`
  (or `error`) event, payloads as a live client got them. Deltas and cites are not replayed.
  Their ids are those a live client saw: `references` is event 1 and the outcome the channel's
  last event (its counter, which trim_events keeps; 2 when nothing was ever stored), so a
  client that already had them gets nothing twice.

Only the first read of a stream comes here (answers.sse.views); everything after it is the
stream's own (answers.sse.stream).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django_eventstream.event import Event
from django_eventstream.eventrequest import EventRequest
from django_eventstream.eventresponse import EventResponse
from django_eventstream.models import EventCounter

from answers import payloads, selectors
from answers.models import Answer
from answers.sse.channels import Admitted, channel_for
from answers.sse.events import DONE, ERROR, REFERENCES
from answers.sse.stream import read_events

FINISHED = (Answer.Status.DONE, Answer.Status.FAILED)
REFERENCES_ID = 1  # the first event of every answer's channel


def first_read(event_request: EventRequest, reader: Admitted, answer_id: uuid.UUID) -> EventResponse:
    """A stream's first read: from the start unless resumed; from the record when the store lacks it."""
    channel = channel_for(answer_id)
    event_request.channel_last_ids.setdefault(channel, "0")
    response = read_events(event_request, reader)
    if not _store_lacks_outcome(response, channel):
        return response
    answer = selectors.answer_outcome_get(answer_id=answer_id)
    if answer is None or answer.status not in FINISHED:
        return response  # still being written: its events are on their way
    return _from_record(response, channel, answer, after=int(event_request.channel_last_ids[channel]))


def _store_lacks_outcome(response: EventResponse, channel: str) -> bool:
    """The store has none of the channel's events: deleted (a reset: the client's last id is
    gone) or never stored (the channel's counter is at 0)."""
    if channel in response.channel_reset:
        return True
    return not response.channel_items.get(channel) and int(response.channel_last_ids.get(channel, 0)) == 0


def record_events(answer: Answer, channel: str) -> list[Event]:
    """A finished answer's `references` and `done` (or `error`), as stored events of its channel."""
    last = EventCounter.objects.filter(name=channel).values_list("value", flat=True).first() or 0
    references = [payloads.reference_payload(s, s.original_number) for s in _retrieved(answer)]
    outcome: tuple[str, dict[str, Any]] = (
        (DONE, payloads.answer_done_payload(answer=answer))
        if answer.status == Answer.Status.DONE
        else (ERROR, {"detail": answer.error_message})
    )
    return [
        Event(channel, REFERENCES, _encoded({"references": references}), id=REFERENCES_ID),
        Event(channel, outcome[0], _encoded(outcome[1]), id=max(last, REFERENCES_ID + 1)),
    ]


def _retrieved(answer: Answer) -> list[Any]:
    return sorted(answer.sources.all(), key=lambda source: source.original_number)


def _encoded(payload: dict[str, Any]) -> str:
    # Stored events carry their payload as JSON text (answers.sse.publish.send_all).
    return json.dumps(payload, cls=DjangoJSONEncoder)


def _from_record(response: EventResponse, channel: str, answer: Answer, *, after: int) -> EventResponse:
    events = [event for event in record_events(answer, channel) if event.id is not None and event.id > after]
    replay = EventResponse()
    replay.is_next, replay.is_recover, replay.user = response.is_next, response.is_recover, response.user
    replay.channel_items = {**response.channel_items, channel: events}
    last = events[-1].id if events else after
    replay.channel_last_ids = {**response.channel_last_ids, channel: str(last)}
    replay.channel_reset = set(response.channel_reset) - {channel}
    replay.channel_more = set(response.channel_more) - {channel}
    return replay
