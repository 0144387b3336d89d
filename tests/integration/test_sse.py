"""The SSE path end to end: POST with `stream: true`, then the answer's event stream, over real HTTP.

The app runs under daphne in a subprocess (tests/fixtures/live_server.py) with the
openai provider pointed at a stub server in this process; these tests script
the stub's replies and read the streams with httpx.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from tests.fixtures.live_events import assert_live_events, events_of
from tests.fixtures.live_server import LiveServer
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.sse_client import READ_TIMEOUT_S, ask, client_for, read_stream, wait_until_finished


@asynccontextmanager
async def asked(
    live: LiveServer, stub: StubOpenAIServer, reply: Reply, headers: dict[str, str] | None = None
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, Any]]]:
    """The stub scripted with `reply`, then the question asked: a client of the server and the answer."""
    stub.enqueue(reply)
    async with client_for(live) as client:
        yield client, await ask(client, headers=headers)


# --- order and payloads


async def test_accepted_response_names_the_answer_and_its_stream(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    async with asked(live, stub, Reply(pieces=["Zebras live in grassland [1]."])) as (client, accepted):
        assert set(accepted) >= {"id", "status", "url", "events_url"}
        assert accepted["status"] in ("pending", "streaming")
        assert accepted["url"] == f"{live.url}/api/answers/{accepted['id']}/"
        assert accepted["events_url"] == (
            f"{live.url}/answers/{accepted['id']}/events/?lastEventId=answer-{accepted['id']}:0"
        )
        await read_stream(client, accepted["events_url"])


async def test_events_come_in_order_references_deltas_done_with_their_payloads(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    async with asked(
        live, stub, Reply(pieces=["Zebras live ", "in grassland [3", "] and savanna [1", "]."], delay_s=0.05)
    ) as (client, accepted):
        stream = await read_stream(client, accepted["events_url"])

    types = stream.types
    assert types[0] == "references"
    assert types[-1] == "done"
    assert set(types[1:-1]) == {"delta", "cite"}
    assert types.count("references") == 1
    assert types.count("done") == 1

    references = stream.events[0].data["references"]
    assert [r["number"] for r in references] == [1, 2, 3, 4]
    for ref in references:
        assert set(ref) == {"number", "document_id", "title", "url", "excerpt"}
        assert ref["title"].startswith("Zebra habitat guide")

    done = stream.events[-1].data
    assert set(done) == {
        "text",
        "references",
        "fallback",
        "declined",
        "truncated",
        "quotes",
        "passages",
        "same_passage",
        "html",
    }
    assert done["declined"] is False
    assert done["quotes"] == {}  # no native citations from this provider
    assert done["truncated"] is False
    # [3] was cited first and [2], [4] never: drop and renumber.
    assert done["text"] == "Zebras live in grassland [1] and savanna [2]."
    assert done["fallback"] is False
    assert [r["number"] for r in done["references"]] == [1, 2]
    assert [r["document_id"] for r in done["references"]] == [
        references[2]["document_id"],
        references[0]["document_id"],
    ]
    assert done["html"] == (
        '<p>Zebras live in grassland <a class="cite" href="#source-1">[1]</a>'
        ' and savanna <a class="cite" href="#source-2">[2]</a>.</p>\n'
    )
    # While streaming, the display already showed the final numbers, each announced by a `cite`
    # before it appeared.
    assert stream.display_text == done["text"]
    cites = [e.data for e in stream.of("cite")]
    assert [(c["number"], c["original"]) for c in cites] == [(1, 3), (2, 1)]
    assert [c["reference"] for c in cites] == done["references"]
    assert_live_events(events_of(stream))


async def test_deltas_add_up_to_exactly_the_raw_text(live: LiveServer, stub: StubOpenAIServer) -> None:
    pieces = [
        "Zé",
        "bras — ",
        "live\n\n",
        "in [",
        "1",
        ", 9]",
        " grass [2-",
        "3]",
        " \u2028 `[4]` ",
        "🦓",
        ".",
    ]
    async with asked(live, stub, Reply(pieces=pieces, delay_s=0.03)) as (client, accepted):
        stream = await read_stream(client, accepted["events_url"])
        trail = (
            await client.get(f"/api/answers/{accepted['id']}/trail/", headers=live.auth("reviewer"))
        ).json()

    assert stream.types[-1] == "done"
    assert stream.delta_text == "".join(pieces)
    assert trail["raw_text"] == "".join(pieces)
    assert all(e.data["text"] or e.data["display"] for e in stream.of("delta")), "no empty delta is published"
    # Out-of-range 9 stripped, the range rendered final, the code span left alone, from the first display.
    assert stream.display_text == "Zébras — live\n\nin [1] grass [2, 3] \u2028 `[4]` 🦓."
    assert_live_events(events_of(stream))


async def test_done_equals_what_a_later_get_returns(live: LiveServer, stub: StubOpenAIServer) -> None:
    async with asked(live, stub, Reply(pieces=["Savanna [4], then grassland [2][4]."])) as (client, accepted):
        stream = await read_stream(client, accepted["events_url"])
        answer = (await client.get(accepted["url"])).json()

    done = stream.of("done")[0].data
    assert answer["status"] == "done"
    assert {k: done[k] for k in ("text", "references", "fallback")} == {
        k: answer[k] for k in ("text", "references", "fallback")
    }
    assert answer["text"] == "Savanna [1], then grassland [2][1]."
    assert stream.display_text == answer["text"]
    assert_live_events(events_of(stream))


async def test_fallback_answer_keeps_every_retrieved_source(live: LiveServer, stub: StubOpenAIServer) -> None:
    async with asked(live, stub, Reply(pieces=["Zebras live in grassland.", " No numbers here."])) as (
        client,
        accepted,
    ):
        stream = await read_stream(client, accepted["events_url"])

    references = stream.events[0].data["references"]
    done = stream.of("done")[0].data
    assert done["fallback"] is True
    assert done["text"] == "Zebras live in grassland. No numbers here."
    assert done["references"] == references
    assert stream.display_text == done["text"]
    assert not stream.of("cite")


async def test_provider_failure_publishes_error_instead_of_done(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    async with asked(live, stub, Reply(status=400)) as (client, accepted):
        stream = await read_stream(client, accepted["events_url"])
        answer = (await client.get(accepted["url"])).json()

    assert stream.types == ["references", "error"]
    detail = stream.events[-1].data["detail"]
    assert isinstance(detail, str)
    assert detail
    assert "Stub error" not in detail, "upstream messages are not shown to users"
    assert answer["status"] == "failed"
    assert answer["error"]["detail"] == detail


async def test_stream_cut_midway_sends_the_partial_deltas_then_error(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    async with asked(
        live, stub, Reply(pieces=["Zebras ", "live [1]", " and then"], cut_after=2, delay_s=0.02)
    ) as (client, accepted):
        stream = await read_stream(client, accepted["events_url"])
        trail = (
            await client.get(f"/api/answers/{accepted['id']}/trail/", headers=live.auth("reviewer"))
        ).json()

    assert stream.types[0] == "references"
    assert stream.types[-1] == "error"
    assert "done" not in stream.types
    assert stream.delta_text == "Zebras live [1]"
    assert stream.display_text == "Zebras live [1]", "what was held back is released before `error`"
    assert trail["raw_text"] == "Zebras live [1]"
    assert trail["status"] == "failed"


# --- late and mid-stream subscribers


async def test_late_subscriber_after_done_replays_every_event(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    async with asked(
        live, stub, Reply(pieces=["Zebras [2]", " live ", "in grassland [1]."], delay_s=0.05)
    ) as (client, accepted):
        first = await read_stream(client, accepted["events_url"])
        late = await read_stream(client, accepted["events_url"])

    assert first.types[-1] == "done"
    assert [(e.type, e.id, e.data) for e in late.events] == [(e.type, e.id, e.data) for e in first.events]
    assert late.delta_text == "Zebras [2] live in grassland [1]."
    assert late.display_text == "Zebras [1] live in grassland [2]."
    assert [(e.data["number"], e.data["original"]) for e in late.of("cite")] == [(1, 2), (2, 1)]
    assert_live_events(events_of(late))


async def test_nobody_listening_still_finishes_and_a_later_subscriber_gets_it_all(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    async with asked(live, stub, Reply(pieces=["Nobody ", "listens [1]."], delay_s=0.05)) as (
        client,
        accepted,
    ):
        answer = await wait_until_finished(client, accepted["id"])
        stream = await read_stream(client, accepted["events_url"])

    assert answer["status"] == "done"
    assert stream.types[0] == "references"
    assert stream.types[-1] == "done"
    assert stream.delta_text == "Nobody listens [1]."


async def test_client_disconnecting_midway_does_not_stop_generation(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    async with asked(
        live, stub, Reply(pieces=[f"part {i} " for i in range(10)] + ["[1]."], delay_s=0.08)
    ) as (client, accepted):
        async with client.stream("GET", accepted["events_url"]) as response:
            async for line in response.aiter_lines():
                if line.startswith("event: delta"):
                    break  # hang up after the first delta
        answer = await wait_until_finished(client, accepted["id"])

    assert answer["status"] == "done"
    assert answer["text"].endswith("part 9 [1].")


async def test_mid_stream_subscriber_gets_everything_from_the_start(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    pieces = [f"Zebra fact {i}. " for i in range(12)] + ["They live in grassland [1]."]
    async with asked(live, stub, Reply(pieces=pieces, delay_s=0.1)) as (client, accepted):
        first_delta = asyncio.Event()
        early_task = asyncio.create_task(
            read_stream(
                client,
                accepted["events_url"],
                on_event=lambda e: first_delta.set() if e.type == "delta" else None,
            )
        )
        await asyncio.wait_for(first_delta.wait(), READ_TIMEOUT_S)
        status_when_joining = (await client.get(accepted["url"])).json()["status"]
        late = await read_stream(client, accepted["events_url"])
        early = await early_task

    assert status_when_joining == "streaming"
    assert late.types[0] == "references"
    assert late.types[-1] == "done"
    assert late.delta_text == "".join(pieces)
    assert [(e.type, e.id, e.data) for e in late.events] == [(e.type, e.id, e.data) for e in early.events]
    # The client that joined mid-answer got the same `cite`/`display` sequence.
    assert late.of("cite"), "the answer cites a source"
    assert_live_events(events_of(late))


async def test_reconnecting_with_last_event_id_resumes_after_it(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    async with asked(live, stub, Reply(pieces=["One [1]", " two", " three."], delay_s=0.15)) as (
        client,
        accepted,
    ):
        full = await read_stream(client, accepted["events_url"])
        resume_from = full.events[0].id  # right after `references`
        assert resume_from is not None
        url = accepted["events_url"].split("?")[0]
        resumed = await read_stream(client, url, headers={"Last-Event-ID": resume_from})

    assert [e.id for e in resumed.events] == [e.id for e in full.events[1:]]


# --- coalescing


async def test_an_answer_stores_at_most_ten_events_a_second(live: LiveServer, stub: StubOpenAIServer) -> None:
    pieces = [("z" if i % 7 else " ") for i in range(999)] + ["[1]"]
    async with asked(live, stub, Reply(pieces=pieces, delay_s=0.003, empty_deltas=False)) as (
        client,
        accepted,
    ):
        stream = await read_stream(client, accepted["events_url"])
        trail = (
            await client.get(f"/api/answers/{accepted['id']}/trail/", headers=live.auth("reviewer"))
        ).json()

    deltas = stream.of("delta")
    generation_s = trail["generation_ms"] / 1000
    assert stream.types[-1] == "done"
    assert stream.delta_text == "".join(pieces)
    assert generation_s >= 2.0, "the provider took long enough for the bound to mean something"
    # An answer stores at most 10 events a second of generation: references, deltas and done.
    assert len(stream.events) <= generation_s * 10, (len(stream.events), generation_s)
    assert len(deltas) >= 3, "the text still streams, in several deltas"


# --- read rules


async def test_signed_in_askers_stream_is_readable_by_them_and_staff(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    async with asked(live, stub, Reply(pieces=["Alice's answer [1]."]), headers=live.auth("alice")) as (
        client,
        accepted,
    ):
        own = await read_stream(client, accepted["events_url"], headers=live.auth("alice"))
        staff = await read_stream(client, accepted["events_url"], headers=live.auth("staff"))

    assert own.types[-1] == "done"
    assert [e.data for e in staff.events] == [e.data for e in own.events]


async def test_signed_in_askers_stream_is_closed_to_others(live: LiveServer, stub: StubOpenAIServer) -> None:
    async with asked(
        live, stub, Reply(pieces=["Alice's private answer [1]."]), headers=live.auth("alice")
    ) as (client, accepted):
        url = accepted["events_url"]
        other = await client.get(url, headers=live.auth("bob"))
        anonymous = await client.get(url)
        bad_token = await client.get(url, headers={"Authorization": "Token not-a-real-token"})
        await wait_until_finished(client, accepted["id"], headers=live.auth("alice"))

    assert other.status_code == 404
    assert anonymous.status_code == 404
    assert bad_token.status_code == 401
    assert bad_token.headers["www-authenticate"] == "Token"
    for response in (other, anonymous, bad_token):
        assert response.headers["content-type"] == "application/json"
        assert "Alice" not in response.text


async def test_anonymous_answers_stream_is_readable_by_whoever_holds_its_url(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    async with asked(live, stub, Reply(pieces=["Shared answer [1]."])) as (client, accepted):
        anonymous = await read_stream(client, accepted["events_url"])
        signed_in = await read_stream(client, accepted["events_url"], headers=live.auth("bob"))

    assert anonymous.types[-1] == "done"
    assert [e.data for e in signed_in.events] == [e.data for e in anonymous.events]


async def test_unknown_answer_has_no_stream(live: LiveServer) -> None:
    async with client_for(live) as client:
        missing = await client.get("/answers/00000000-0000-4000-8000-000000000000/events/")
        malformed = await client.get("/answers/not-a-uuid/events/")

    assert missing.status_code == 404
    assert missing.json()["detail"]
    assert malformed.status_code == 404


async def test_a_channel_query_parameter_cannot_add_another_answers_channel(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    stub.enqueue(Reply(pieces=["Alice's secret [1]."]), Reply(pieces=["Public [1]."]))
    async with client_for(live) as client:
        private = await ask(client, headers=live.auth("alice"))
        await wait_until_finished(client, private["id"], headers=live.auth("alice"))
        public = await ask(client)
        url = f"{public['events_url']}&channel=answer-{private['id']}"
        stream = await read_stream(client, url)

    assert all("secret" not in json.dumps(e.data) for e in stream.events)
    assert stream.delta_text == "Public [1]."
