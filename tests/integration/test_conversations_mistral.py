"""Conversations end to end with ANSWERS_PROVIDER=mistral (docs/explanation/conversations.md): the three turns
of test_conversations.py against the Mistral stub, each follow-up's rewrite one non-streamed request to it
and each answer's references in a row one marker, on the JSON path (the API test client) and the SSE path
(the module's live server on the same stub)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.fixtures.conversations import (
    GLOBAL,
    SCOPE_DOCUMENTS,
    TURNS,
    Turn,
    check_three_turns_sse,
    three_turns_json_checked,
    three_turns_sse,
)
from tests.fixtures.live_server import LiveServer, SeedDocument
from tests.fixtures.mistral_stub import Completion, Ref, StubMistralServer, documents_of, mistral_env


def mistral_script(turns: tuple[Turn, ...] = TURNS) -> list[Callable[[dict[str, Any]], Completion]]:
    """The Mistral stub's replies, in request order: turn 1's answer, then per follow-up its rewrite
    (non-streamed) and its answer, whose reference chunks name its documents by their keys in its request."""

    def answer(turn: Turn) -> Callable[[dict[str, Any]], Completion]:
        def reply(body: dict[str, Any]) -> Completion:
            assert body.get("stream") is True
            keys = {document["title"]: key for key, document in documents_of(body).items()}
            return Completion(items=[turn.sentence, ".", *(Ref(keys[title]) for title in turn.cites)])

        return reply

    def rewrite(turn: Turn) -> Callable[[dict[str, Any]], Completion]:
        def reply(body: dict[str, Any]) -> Completion:
            assert not body.get("stream"), "the rewrite is one non-streamed request"
            return Completion(items=[str(turn.rewrite)])

        return reply

    script: list[Callable[[dict[str, Any]], Completion]] = []
    for turn in turns:
        if turn.rewrite is not None:
            script.append(rewrite(turn))
        script.append(answer(turn))
    return script


@pytest.fixture(scope="module")
def live_settings(mistral_stub: StubMistralServer) -> dict[str, str]:
    return mistral_env(mistral_stub)  # the mistral provider: the module's openai stub is not called


@pytest.fixture(scope="module")
def live_documents() -> list[SeedDocument]:
    return SCOPE_DOCUMENTS


@pytest.mark.django_db
def test_three_turns_json(client, scope_documents, mistral_settings, stub_mistral: StubMistralServer) -> None:
    _, requests = three_turns_json_checked(client, stub_mistral, mistral_script(), one_marker=True)

    # The sources travel with the current turn only, after the marker-free history and the question.
    last = [r for r in requests if r.get("stream")][-1]["messages"]
    assert [m["role"] for m in last] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    assert GLOBAL in {document["title"] for document in documents_of({"messages": last}).values()}
    # The rewrites went to mistral too: the same model, no stream.
    rewrites = [r for r in requests if not r.get("stream")]
    assert [(r["model"], len(r["messages"]) > 0) for r in rewrites] == [("mistral-stub", True)] * 2


async def test_three_turns_sse(live: LiveServer, mistral_stub: StubMistralServer) -> None:
    mistral_stub.reset()
    mistral_stub.enqueue(*mistral_script())

    dones = await three_turns_sse(live)

    check_three_turns_sse(dones, mistral_stub.requests, one_marker=True)
