"""Conversations end to end with ANSWERS_PROVIDER=anthropic (docs/explanation/conversations.md):
the three turns of test_conversations.py against the Anthropic stub, whose native citations come as one
marker per block, on the JSON path (the API test client) and the SSE path (the module's live server on the
same stub)."""

from __future__ import annotations

import pytest

from tests.fixtures.anthropic_stub import StubAnthropicServer, anthropic_env
from tests.fixtures.conversations import (
    GLOBAL,
    SCOPE_DOCUMENTS,
    anthropic_script,
    check_three_turns_sse,
    three_turns_json_checked,
    three_turns_sse,
)
from tests.fixtures.live_server import LiveServer, SeedDocument


@pytest.fixture(scope="module")
def live_settings(anthropic_stub: StubAnthropicServer) -> dict[str, str]:
    return anthropic_env(anthropic_stub)  # the anthropic provider: the module's openai stub is not called


@pytest.fixture(scope="module")
def live_documents() -> list[SeedDocument]:
    return SCOPE_DOCUMENTS


@pytest.mark.django_db
def test_three_turns_json(client, scope_documents, anthropic_settings, stub_anthropic) -> None:
    _, requests = three_turns_json_checked(client, stub_anthropic, anthropic_script(), one_marker=True)

    # The documents travel with the current turn only, after the marker-free history.
    last = [r for r in requests if r.get("stream")][-1]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert next(d["title"] for d in last[-1]["content"] if d.get("type") == "document") == GLOBAL


async def test_three_turns_sse(live: LiveServer, anthropic_stub: StubAnthropicServer) -> None:
    anthropic_stub.reset()
    anthropic_stub.enqueue(*anthropic_script())

    dones = await three_turns_sse(live)

    check_three_turns_sse(dones, anthropic_stub.requests, one_marker=True)
