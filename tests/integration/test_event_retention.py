"""Event retention and the replay from the answer's record, end to end (daphne, real HTTP, real SSE).

`manage.py trim_events` (run as cron would, against the live server's database) deletes the
stored events of answers finished ANSWERS_EVENT_RETENTION ago; a late client then still gets
the answer's `references` and its `done` (or `error`), payloads and ids as live clients got
them. The same replay serves answers asked on the JSON path (which store no events), and a
stream opened without `lastEventId` replays from the start.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import httpx

from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer, manage
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.sse_client import Stream, ask, client_for, read_stream, wait_until_finished


def trim_events(live: LiveServer, retention: float = 0) -> str:
    """`manage.py trim_events` on the live server's database, as cron runs it (no terminal)."""
    return manage(["trim_events"], {**live.env, "ANSWERS_EVENT_RETENTION": str(retention)})


def events_url(live: LiveServer, answer_id: str, last_event_id: str | None = None) -> str:
    url = f"{live.url}/answers/{answer_id}/events/"
    return url if last_event_id is None else f"{url}?lastEventId=answer-{answer_id}:{last_event_id}"


def outcome(stream: Stream) -> list[tuple[str, str | None, Any]]:
    """The `references` and final events of a stream: type, id and payload."""
    return [(e.type, e.id, e.data) for e in stream.events if e.type in ("references", "done", "error")]


def as_get(done: dict[str, Any]) -> dict[str, Any]:
    return {key: done[key] for key in ("text", "references", "fallback")}


async def test_after_trim_a_late_client_gets_references_and_done_as_live_clients_did(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    stub.enqueue(Reply(pieces=["Zebras live ", "in grassland [3", "] and savanna [1", "]."], delay_s=0.02))
    async with client_for(live) as client:
        accepted = await ask(client)
        first = await read_stream(client, accepted["events_url"])
        assert first.of("delta"), "a live client gets the deltas"
        kept = trim_events(live, retention=3600)
        assert "trim_events: 0 event(s)" in kept, "finished a moment ago: kept for the hour"
        assert [e.type for e in (await read_stream(client, accepted["events_url"])).events] == first.types

        trimmed = trim_events(live)
        assert "of 1 answer(s)" in trimmed, trimmed
        late = await read_stream(client, accepted["events_url"])
        answer = (await client.get(accepted["url"])).json()
        # Resuming after `references` (its id) gets only `done`; after `done`, the stream has nothing
        # more to send: a client never gets an event twice.
        resumed = await read_stream(client, events_url(live, accepted["id"], "1"))
        done_id = first.events[-1].id
        assert done_id is not None
        silent = await _read_for(client, events_url(live, accepted["id"], done_id.rpartition(":")[2]), 1.0)

    assert late.types == ["references", "done"], "deltas and cites are not replayed"
    assert outcome(late) == outcome(first), "payloads and ids as the live client got them"
    assert as_get(late.events[-1].data) == {key: answer[key] for key in ("text", "references", "fallback")}
    assert answer["text"] == "Zebras live in grassland [1] and savanna [2]."
    assert late.events[-1].data["html"].startswith('<p>Zebras live in grassland <a class="cite"')
    assert outcome(resumed) == outcome(first)[1:]
    assert silent == []
    assert "trim_events: 0 event(s)" in trim_events(live), "a second run has nothing left to delete"


async def test_after_trim_a_failed_answer_replays_references_and_its_error(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    stub.enqueue(Reply(pieces=["Zebras live ", "in grass"], cut_after=1))
    async with client_for(live) as client:
        accepted = await ask(client)
        first = await read_stream(client, accepted["events_url"])
        answer = await wait_until_finished(client, accepted["id"])
        assert "of 1 answer(s)" in trim_events(live)
        late = await read_stream(client, accepted["events_url"])

    assert answer["status"] == "failed"
    assert first.types[-1] == "error"
    assert late.types == ["references", "error"]
    assert outcome(late) == outcome(first)
    assert late.events[0].data["references"] == first.events[0].data["references"]


async def test_a_streaming_answers_events_are_never_trimmed(live: LiveServer, stub: StubOpenAIServer) -> None:
    gate = threading.Event()
    stub.enqueue(Reply(pieces=["Zebras live ", "in grassland [1]."], gate=gate, delay_s=0.02))
    async with client_for(live) as client:
        try:
            accepted = await ask(client)
            answer = (await client.get(accepted["url"])).json()
            assert answer["status"] == "streaming"
            # Retention 0: everything finished is due, and this answer's `references` is already stored.
            assert "trim_events: 0 event(s) of 0 answer(s)" in trim_events(live)
        finally:
            gate.set()
        stream = await read_stream(client, accepted["events_url"])
    assert stream.types[0] == "references"
    assert stream.types[-1] == "done"
    assert stream.of("delta"), "nothing of the streaming answer was deleted"
    assert stream.delta_text == "Zebras live in grassland [1]."


async def test_the_events_url_of_a_json_path_answer_replays_its_outcome(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    stub.enqueue(Reply(pieces=["Zebras live in grassland [2]."]), Reply(pieces=["Zebras li"], cut_after=1))
    async with client_for(live) as client:
        done = await client.post("/api/answers/", json={"question": ZEBRA_QUESTION, "stream": False})
        failed = await client.post("/api/answers/", json={"question": ZEBRA_QUESTION, "stream": False})
        assert (done.status_code, failed.status_code) == (201, 502), (done.text, failed.text)
        done_id, failed_id = done.json()["id"], failed.json()["id"]
        trail = (await client.get(f"/api/answers/{done_id}/trail/", headers=live.auth("reviewer"))).json()
        done_stream = await read_stream(client, events_url(live, done_id))
        failed_stream = await read_stream(client, events_url(live, failed_id, "0"))

    assert done_stream.types == ["references", "done"]
    retrieved = done_stream.events[0].data["references"]
    assert [(r["number"], r["title"]) for r in retrieved] == [
        (s["original_number"], s["title"]) for s in trail["sources"]
    ]
    assert as_get(done_stream.events[1].data) == {
        key: done.json()[key] for key in ("text", "references", "fallback")
    }
    assert done_stream.events[1].data["text"] == "Zebras live in grassland [1]."
    assert failed_stream.types == ["references", "error"]
    assert failed_stream.events[1].data == {"detail": failed.json()["detail"]}


async def test_a_stream_without_last_event_id_replays_from_the_start(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    stub.enqueue(Reply(pieces=["Zebras live ", "in grassland [3", "]."], delay_s=0.02))
    async with client_for(live) as client:
        accepted = await ask(client)
        from_zero = await read_stream(client, accepted["events_url"])
        bare = await read_stream(client, events_url(live, accepted["id"]))
    assert bare.types == from_zero.types
    assert [(e.id, e.data) for e in bare.events] == [(e.id, e.data) for e in from_zero.events]
    assert bare.of("delta")


async def _read_for(client: httpx.AsyncClient, url: str, seconds: float) -> list[str]:
    """The app events a stream sends within `seconds` (a stream with nothing to send stays open)."""
    received: list[str] = []

    async def read() -> None:
        stream = await read_stream(client, url, on_event=lambda event: received.append(event.type))
        received.append(f"closed after {stream.types}")

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(read(), seconds)
    return received
