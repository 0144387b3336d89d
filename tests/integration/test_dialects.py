"""Marker dialects end to end: a reply in a dialect finalizes like the same reply written in [n].

JSON path through the API test client, SSE path through a real daphne server; both against the
OpenAI-compatible stub, with real retrieval. The trail keeps what was rewritten.
"""

from __future__ import annotations

import pytest

from answers.models import Answer
from tests.fixtures.answers import QUESTION
from tests.fixtures.live_events import assert_live_events, events_of
from tests.fixtures.live_server import LiveServer
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.sse_client import ask as ask_streaming
from tests.fixtures.sse_client import client_for, read_stream

CANONICAL = "Teacups need care [3]. Walruses agree [1, 3] and more [2]."
# The same reply in each dialect (issue 16's table), and what the trail records of it.
DIALECTS = {
    "fullwidth": (
        "Teacups need care 【3】. Walruses agree 【1, 3】 and more ［2］.",
        [("fullwidth", "【3】"), ("fullwidth", "【1, 3】"), ("fullwidth", "［2］")],
    ),
    "label": (
        "Teacups need care [citation:3]. Walruses agree [doc1, 3] and more [source 2].",
        [("label", "[citation:3]"), ("label", "[doc1, 3]"), ("label", "[source 2]")],
    ),
    "dagger": (
        "Teacups need care 【3†source】. Walruses agree 【1, 3†x】 and more [2†L3].",
        [("dagger", "【3†source】"), ("dagger", "【1, 3†x】"), ("dagger", "[2†L3]")],
    ),
    "double": (
        "Teacups need care [[3]]. Walruses agree [[1, 3]] and more [[2]].",
        [("double", "[[3]]"), ("double", "[[1, 3]]"), ("double", "[[2]]")],
    ),
    "footnote": (
        "Teacups need care [^3]. Walruses agree [^1][^3] and more [^2].\n[^1]: one\n[^3]: three\n",
        [
            ("footnote", "[^3]"),
            ("footnote", "[^1]"),
            ("footnote", "[^3]"),
            ("footnote", "[^2]"),
            ("footnote-definition", "[^1]: one\n"),
            ("footnote-definition", "[^3]: three\n"),
        ],
    ),
}
CANONICAL_FOR = {"footnote": "Teacups need care [3]. Walruses agree [1][3] and more [2].\n"}


def _json_ask(client, stub: StubOpenAIServer, reply: str) -> dict[str, object]:
    stub.enqueue(Reply(pieces=[reply[i : i + 7] for i in range(0, len(reply), 7)]))
    response = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json")
    assert response.status_code == 201, response.content
    body: dict[str, object] = response.json()
    return body


@pytest.mark.django_db
@pytest.mark.parametrize("dialect", DIALECTS)
def test_json_a_reply_in_a_dialect_finalizes_like_the_same_reply_in_brackets(
    client, corpus, openai_settings, stub_openai, admin_user, dialect: str
) -> None:
    reply, normalized = DIALECTS[dialect]
    expected = _json_ask(client, stub_openai, CANONICAL_FOR.get(dialect, CANONICAL))
    got = _json_ask(client, stub_openai, reply)

    assert (got["text"], got["references"], got["fallback"]) == (
        expected["text"],
        expected["references"],
        expected["fallback"],
    )
    assert got["fallback"] is False
    answer = Answer.objects.get(id=got["id"])
    assert answer.raw_text == reply  # as the model wrote it
    client.force_login(admin_user)
    trail = client.get(f"/api/answers/{got['id']}/trail/").json()
    assert [(n["dialect"], n["text"]) for n in trail["normalized"]] == normalized
    # Each marker's decision points at the dialect marker the model wrote.
    dialect_markers = [m for m in trail["markers"] if m["dialect"]]
    assert [reply[m["raw_start"] : m["raw_end"]] for m in dialect_markers] == [
        text for name, text in normalized if name != "footnote-definition"
    ]


@pytest.mark.django_db
def test_json_dialects_off_leaves_them_as_text_and_falls_back(
    client, corpus, openai_settings, stub_openai, settings
) -> None:
    settings.ANSWERS_MARKER_DIALECTS = "none"
    got = _json_ask(client, stub_openai, DIALECTS["fullwidth"][0])
    assert got["text"] == DIALECTS["fullwidth"][0]
    assert got["fallback"] is True


@pytest.mark.parametrize("dialect", ["fullwidth", "label", "footnote"])
async def test_sse_a_reply_in_a_dialect_finalizes_like_the_same_reply_in_brackets(
    stub_served: LiveServer, stub: StubOpenAIServer, dialect: str
) -> None:
    reply, _ = DIALECTS[dialect]
    done = {}
    for text in (CANONICAL_FOR.get(dialect, CANONICAL), reply):
        stub.reset()
        stub.enqueue(Reply(pieces=[text[i : i + 5] for i in range(0, len(text), 5)]))
        async with client_for(stub_served) as client:
            accepted = await ask_streaming(client)
            stream = await read_stream(client, accepted["events_url"])
        assert stream.types[-1] == "done"
        assert "".join(e.data["text"] for e in stream.events if e.type == "delta") == text  # raw deltas
        # The display shows the dialect already normalized and renumbered: it is the final text.
        assert stream.display_text == stream.events[-1].data["text"]
        assert_live_events(events_of(stream))
        done[text] = stream.events[-1].data
    canonical, dialected = done.values()
    assert (dialected["text"], dialected["references"], dialected["fallback"]) == (
        canonical["text"],
        canonical["references"],
        canonical["fallback"],
    )


@pytest.mark.django_db
def test_admin_shows_each_dialect_at_its_marker_and_filters_normalized_answers(
    client, corpus, openai_settings, stub_openai, admin_user
) -> None:
    reply = "Teacups need care 【3】 and more [citation:9] [1]."
    plain = _json_ask(client, stub_openai, CANONICAL)
    got = _json_ask(client, stub_openai, reply)
    assert got["text"] == "Teacups need care [1] and more [2]."
    client.force_login(admin_user)

    html = client.get(f"/admin/answers/answer/{got['id']}/change/").content.decode()

    # The raw marker as written, and what it became, at the marker; the dialect named in the list.
    assert '<mark class="qa-marker">【3】</mark><span class="qa-rewrite"> → [1]</span>' in html
    assert '<del class="qa-stripped" title="stripped: points at no source">[citation:9]</del>' in html
    assert "fullwidth: <code>【3】</code> → <code>[3]</code>" in html
    assert (
        '2 rewritten into [n]: <span class="qa-normalized">fullwidth <code>【3】</code></span>, '
        '<span class="qa-normalized">label <code>[citation:9]</code></span>'
    ) in html
    listed = client.get("/admin/answers/answer/", {"normalized": "yes"}).content.decode()
    assert got["id"] in listed
    assert plain["id"] not in listed
