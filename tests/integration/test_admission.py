"""A process takes only the questions it can serve (ANSWERS_MAX_GENERATING), and none once it stops.

Past the limit, a new question is refused before anything of it is stored: `503` with
`Retry-After` on both API paths and on the no-JavaScript form, never an answer accepted and then
failed. A refused question leaves no answer, no conversation and no Idempotency-Key behind, so
asking again later (with the same key) is simply a new question.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.sessions.models import Session
from django.test import AsyncClient
from prometheus_client import REGISTRY

from answers.models import Answer, Conversation
from answers.pipeline import lifecycle
from tests.fixtures.answers import QUESTION
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.waiting import await_until

pytestmark = [pytest.mark.usefixtures("corpus", "openai_settings"), pytest.mark.django_db(transaction=True)]

LIMIT = 2
URL = "/api/answers/"


@pytest.fixture
def held(settings: Any, stub_openai: StubOpenAIServer) -> Iterator[threading.Event]:
    """ANSWERS_MAX_GENERATING=2, and a provider that holds every answer until the gate is set."""
    settings.ANSWERS_MAX_GENERATING = LIMIT
    gate = threading.Event()
    stub_openai.set_default(Reply(pieces=["Walruses like ", "carpentry [1]."], gate=gate))
    yield gate
    gate.set()


async def post(client: AsyncClient, *, stream: bool, key: str | None = None) -> Any:
    headers = {"Idempotency-Key": key} if key else {}
    return await client.post(
        URL, {"question": QUESTION, "stream": stream}, content_type="application/json", headers=headers
    )


def refused_count(reason: str) -> float:
    return REGISTRY.get_sample_value("answers_asks_refused_total", {"reason": reason}) or 0.0


async def stored() -> tuple[int, int]:
    return await Answer.objects.acount(), await Conversation.objects.acount()


async def fill_to_the_limit(client: AsyncClient, stub: StubOpenAIServer) -> asyncio.Task[Any]:
    """Two answers generating, held at the provider: one on the JSON path (its request waiting), one SSE."""
    json_ask = asyncio.create_task(post(client, stream=False))
    accepted = await post(client, stream=True)
    assert accepted.status_code == 202, accepted.content
    await await_until(lambda: len(stub.requests) == LIMIT, within=30, what="both answers at the provider")
    return json_ask


async def test_past_the_limit_a_question_is_refused_on_both_paths_and_nothing_is_stored(
    held: threading.Event, stub_openai: StubOpenAIServer
) -> None:
    client = AsyncClient()
    json_ask = await fill_to_the_limit(client, stub_openai)
    before = await stored()
    counted = refused_count("busy")

    sessions = await Session.objects.acount()
    for stream in (False, True):
        # A new anonymous client, with a key: not even a session is made for a question not taken.
        refused = await post(AsyncClient(), stream=stream, key=f"retry-{stream}")
        assert refused.status_code == 503, refused.content
        assert refused["Retry-After"] == "5"
        body = refused.json()
        assert body["detail"].startswith("The server is answering as many questions as it can")
        assert "id" not in body
        assert "sessionid" not in refused.cookies
    assert await stored() == before == (LIMIT, LIMIT)
    assert await Session.objects.acount() == sessions
    assert len(stub_openai.requests) == LIMIT  # the provider was never asked
    assert refused_count("busy") == counted + 2  # what /metrics reports (answers_asks_refused_total)

    held.set()
    assert (await json_ask).status_code == 201
    await lifecycle.wait_for_background()
    # Room again: the same key is a new question (nothing was kept of the refused one), accepted.
    again = await post(client, stream=True, key="retry-True")
    assert again.status_code == 202, again.content
    assert "Idempotent-Replayed" not in again
    await lifecycle.wait_for_background()
    assert await Answer.objects.filter(status="done").acount() == LIMIT + 1


async def test_the_form_refuses_past_the_limit_with_503_keeping_the_question(
    held: threading.Event, stub_openai: StubOpenAIServer
) -> None:
    client = AsyncClient()
    json_ask = await fill_to_the_limit(client, stub_openai)

    refused = await client.post("/ask/", {"question": "Where do walruses keep their teacups?"})

    assert refused.status_code == 503
    assert refused["Retry-After"] == "5"
    page = refused.content.decode()
    assert "The server is answering as many questions as it can" in page
    assert "Where do walruses keep their teacups?" in page  # the form keeps what was typed
    assert await stored() == (LIMIT, LIMIT)
    held.set()
    assert (await json_ask).status_code == 201
    await lifecycle.wait_for_background()


async def test_a_question_that_ends_before_generating_frees_its_place(
    held: threading.Event, stub_openai: StubOpenAIServer
) -> None:
    client = AsyncClient()
    # A follow-up to no conversation is refused after it was admitted (404): its place is given back.
    for _ in range(LIMIT + 1):
        missing = await client.post(
            URL,
            {"question": QUESTION, "conversation": "00000000-0000-4000-8000-000000000000"},
            content_type="application/json",
        )
        assert missing.status_code == 404, missing.content
    assert lifecycle.generating() == 0

    json_ask = await fill_to_the_limit(client, stub_openai)
    assert lifecycle.generating() == LIMIT
    held.set()
    assert (await json_ask).status_code == 201
    await lifecycle.wait_for_background()
    assert lifecycle.generating() == 0


async def test_a_stopping_process_refuses_new_questions_with_503_on_both_paths(settings: Any) -> None:
    client = AsyncClient()
    lifecycle.begin_shutdown()
    try:
        for stream in (False, True):
            refused = await post(client, stream=stream)
            assert refused.status_code == 503, refused.content
            assert refused["Retry-After"] == "10"
            assert refused.json()["detail"].startswith("The server is stopping and takes no new questions")
        form = await client.post("/ask/", {"question": QUESTION})
        assert (form.status_code, form["Retry-After"]) == (503, "10")
    finally:
        lifecycle._shutting_down = False
    assert await sync_to_async(Answer.objects.count)() == 0
