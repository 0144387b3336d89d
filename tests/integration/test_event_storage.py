"""The event store (answers.sse.storage.AnswerEventStorage): a delta and the `cite`s before it are stored
together, with consecutive ids in publishing order, and replay exactly as a late client reads them."""

from __future__ import annotations

import json
import uuid

import pytest

from answers.sse.channels import channel_for
from answers.sse.publish import Delta, publish_delta, send
from answers.sse.storage import AnswerEventStorage


def _replayed(channel: str) -> list[tuple[int, str, object]]:
    """The channel's events as a late client gets them (the publisher stores its payloads as JSON text)."""
    events = AnswerEventStorage().get_events(channel, 0)
    return [(e.id, e.type, json.loads(e.data) if isinstance(e.data, str) else e.data) for e in events]


@pytest.mark.django_db
def test_several_events_get_consecutive_ids_in_order_on_a_new_channel_and_after_others() -> None:
    storage = AnswerEventStorage()
    channel = "answer-test-storage"
    first = storage.append_events(channel, [("cite", {"number": 1}), ("delta", {"text": "a"})])
    assert [(e.id, e.type) for e in first] == [(1, "cite"), (2, "delta")]
    alone = storage.append_event(channel, "delta", {"text": "b"})
    assert alone.id == 3
    more = storage.append_events(channel, [("cite", {"number": 2}), ("cite", {"number": 3}), ("delta", {})])
    assert [e.id for e in more] == [4, 5, 6]
    assert [(eid, kind) for eid, kind, _ in _replayed(channel)] == [
        (1, "cite"),
        (2, "delta"),
        (3, "delta"),
        (4, "cite"),
        (5, "cite"),
        (6, "delta"),
    ]


@pytest.mark.django_db
def test_a_published_delta_replays_its_cites_first_then_itself() -> None:
    answer_id = uuid.uuid4()
    channel = channel_for(answer_id)
    send(channel, "references", {"references": []})
    cites = [{"number": 1, "original": 3, "reference": {}}, {"number": 2, "original": 1, "reference": {}}]
    publish_delta(answer_id, Delta("x [3][1", "x [1]", cites))
    publish_delta(answer_id, Delta("]", "[2]"))
    assert _replayed(channel) == [
        (1, "references", {"references": []}),
        (2, "cite", cites[0]),
        (3, "cite", cites[1]),
        (4, "delta", {"text": "x [3][1", "display": "x [1]"}),
        (5, "delta", {"text": "]", "display": "[2]"}),
    ]
