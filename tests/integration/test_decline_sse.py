"""A declined answer on the SSE path, over real HTTP (daphne in a subprocess, the openai provider pointed
at the stub): `references` with an empty list, one delta with the decline text, `done` with `declined`;
the stub receives no request; the answer object, a late replay and the trail say the same."""

from __future__ import annotations

import re
from html import unescape

from answers.conf import DECLINE_TEXT
from tests.fixtures.live_server import LiveServer
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.sse_client import READ_TIMEOUT_S, ask, client_for, read_stream
from tests.fixtures.waiting import await_until

# No word of it is in the live server's corpus (zebras and quokkas).
OFF_TOPIC = "How do zeppelins moor in Patagonia?"


async def test_a_declined_answer_streams_empty_references_its_text_and_done_declined(
    live: LiveServer, stub: StubOpenAIServer
) -> None:
    stub.enqueue(Reply(pieces=["Zeppelins moor at masts [1]."]))
    async with client_for(live) as client:
        accepted = await ask(client, OFF_TOPIC)
        stream = await read_stream(client, accepted["events_url"])
        replay = await read_stream(client, accepted["events_url"])  # a client that comes late
        answer = (await client.get(f"/api/answers/{accepted['id']}/")).json()
        trail = await _trail_with_coverage(client, live, accepted["id"])

    assert stream.types == ["references", "delta", "done"]
    references, delta, done = (event.data for event in stream.events)
    assert references == {"references": []}
    assert delta == {"text": DECLINE_TEXT, "display": DECLINE_TEXT}
    assert done["declined"] is True
    assert done["references"] == []
    assert done["fallback"] is False
    assert done["text"] == DECLINE_TEXT
    assert unescape(re.sub(r"<[^>]+>", "", done["html"])).strip() == DECLINE_TEXT
    assert [(e.type, e.data) for e in replay.events] == [(e.type, e.data) for e in stream.events]
    assert stub.requests == []  # the provider was never asked

    assert answer["status"] == "done"
    assert {k: answer[k] for k in ("text", "references", "fallback", "declined")} == {
        k: done[k] for k in ("text", "references", "fallback", "declined")
    }
    assert trail["declined"] is True
    assert trail["delivery"] == "sse"
    assert trail["sources"] == []
    assert trail["coverage"]["flag"] is False
    assert "patagonia" in trail["coverage"]["missing"]


async def _trail_with_coverage(client, live: LiveServer, answer_id: str) -> dict:
    """The trail once its support and coverage records are stored (computed just after `done`)."""

    async def stored() -> dict | None:
        response = await client.get(f"/api/answers/{answer_id}/trail/", headers=live.auth("reviewer"))
        assert response.status_code == 200, response.text
        body: dict = response.json()
        return body if body["coverage"] is not None else None

    return await await_until(stored, within=READ_TIMEOUT_S, what=f"answer {answer_id}: its coverage record")
