"""A marker flood on the SSE path, over real HTTP (issue 35): streamed live, replayed from the start and
from an id mid-way, the same events in the same order; and the event text the server writes (to a
stream, to a GRIP proxy) is what django-eventstream writes.

The app runs under daphne (tests/fixtures/live_server.py) on the run's database (SQLite or
PostgreSQL), the openai provider pointed at the stub server in this process.
"""

from __future__ import annotations

import json
from typing import Any

import django_grip
import pytest
from django_eventstream.utils import publish_event, sse_encode_event

from answers.sse.grip import publish_whole
from answers.sse.stream import encode_event
from tests.fixtures.live_events import assert_live_events, events_of
from tests.fixtures.live_server import LiveServer
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.sse_client import READ_TIMEOUT_S, ask, client_for, read_stream

FLOOD = "Flooded " + "[1]" * 10_000  # 30 KB of one marker
# What a stored payload may hold: JSON text (a line break escaped), a `%` (GRIP's id escape), an
# empty payload; and what the stock encoder must still handle: raw line breaks, a NUL.
PAYLOADS = [
    json.dumps({"text": "one\ntwo\r\nthree", "display": "50% [1]", "html": '<a href="#source-1">[1]</a>'}),
    json.dumps({"text": "%I %% %"}),
    "",
    "line one\nline two\r\nline three\rfour",
    "nul \x00 inside",
]


def _pieces(text: str, count: int) -> list[str]:
    size = len(text) // count + 1
    return [text[i : i + size] for i in range(0, len(text), size)]


async def test_a_flood_streams_in_order_and_replays_the_same_events_from_the_start_and_mid_way(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    stub.enqueue(Reply(pieces=_pieces(FLOOD, 5)))
    async with client_for(live) as client:
        accepted = await ask(client)
        streamed = await read_stream(client, accepted["events_url"], limit_s=READ_TIMEOUT_S * 3)
        replayed = await read_stream(client, accepted["events_url"])
        middle = len(streamed.events) // 2
        resume_from = streamed.events[middle - 1].id
        assert resume_from is not None
        resumed = await read_stream(
            client, accepted["events_url"].split("?")[0], headers={"Last-Event-ID": resume_from}
        )
        answer = (await client.get(accepted["url"])).json()

    assert answer["status"] == "done"
    assert (streamed.types[0], streamed.types[-1]) == ("references", "done"), streamed.types
    assert streamed.duplicates == 0
    # Every event once, ids 1, 2, 3... in order.
    numbers = [int(event.id.rsplit(":", 1)[1]) for event in streamed.events if event.id]
    assert numbers == list(range(1, len(streamed.events) + 1))
    assert streamed.delta_text == FLOOD
    assert streamed.display_text == answer["text"] == streamed.events[-1].data["text"]
    assert_live_events(events_of(streamed))

    def seen(events: list[Any]) -> list[tuple[str, str | None, Any]]:
        return [(e.type, e.id, e.data) for e in events]

    assert seen(replayed.events) == seen(streamed.events)
    assert middle >= 1
    assert seen(resumed.events) == seen(streamed.events[middle:])


async def test_a_stream_of_an_answer_with_a_huge_marker_record_replays_it_whole(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    # 100,000 characters of markers (cut at ANSWERS_MAX_ANSWER_CHARS): a trail record of over
    # 33,000 markers, megabytes that opening the stream does not read.
    stub.enqueue(Reply(pieces=_pieces("Flooded " + "[1]" * 40_000, 50)))
    async with client_for(live) as client:
        accepted = await ask(client)
        streamed = await read_stream(client, accepted["events_url"], limit_s=READ_TIMEOUT_S * 3)
        replayed = await read_stream(client, accepted["events_url"])

    done = streamed.events[-1]
    assert (done.type, done.data["truncated"], len(done.data["text"])) == ("done", True, 100_000)
    assert [(e.type, e.id, e.data) for e in replayed.events] == [
        (e.type, e.id, e.data) for e in streamed.events
    ]


@pytest.mark.parametrize("data", PAYLOADS)
@pytest.mark.parametrize("event_id", ["answer-1f0e:7", "", None])
def test_an_event_is_written_as_django_eventstream_writes_it(data: str, event_id: str | None) -> None:
    assert encode_event("done", data, event_id) == sse_encode_event("done", data, event_id=event_id)


def test_an_event_type_or_id_with_a_line_break_is_cleaned_as_django_eventstream_cleans_it() -> None:
    assert encode_event("do\nne", "{}", "answer-1:\r2") == sse_encode_event(
        "do\nne", "{}", event_id="answer-1:\r2"
    )


@pytest.mark.parametrize("data", PAYLOADS[:3])
def test_the_grip_proxy_gets_the_message_django_eventstream_would_send(monkeypatch, data: str) -> None:
    sent: list[tuple[Any, ...]] = []

    def record(channel: str, formats: Any, id: Any = None, prev_id: Any = None, **kwargs: Any) -> None:
        sent.append((channel, formats.content, formats.content_filters, id, prev_id, kwargs.get("meta")))

    monkeypatch.setattr(django_grip, "publish", record)

    publish_event("answer-1f0e", "delta", data, "7", "6")
    publish_whole("answer-1f0e", "delta", data, 7)

    assert len(sent) == 2
    assert sent[1] == sent[0]
