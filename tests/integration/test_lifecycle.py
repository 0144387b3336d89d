"""Nothing stays `streaming`: heartbeats, the stale-answer reaper, and stopping with answers in flight."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import threading
import weakref
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.utils import timezone

from answers import server
from answers.models import Answer
from answers.pipeline import flow, lifecycle, store
from answers.retrieval.pipeline import retrieve
from answers.server import ServerLifecycle
from answers.sse.channels import channel_for
from answers.sse.publish import SSE
from answers.sse.storage import AnswerEventStorage
from tests.fixtures.answers import QUESTION
from tests.fixtures.clock import MOMENT, FakeClock
from tests.fixtures.providers import Reply
from tests.fixtures.waiting import await_until

pytestmark = pytest.mark.usefixtures("corpus", "openai_settings")


def event_types(answer_id) -> list[str]:
    return [e.type for e in AnswerEventStorage().get_events(channel_for(answer_id), 0, limit=1000)]


def last_event(answer_id) -> dict:
    events = AnswerEventStorage().get_events(channel_for(answer_id), 0, limit=1000)
    return {"type": events[-1].type, **json.loads(events[-1].data)}


def make_stale(answer_id, seconds: float) -> None:
    Answer.objects.filter(id=answer_id).update(
        status="streaming", heartbeat_at=timezone.now() - timedelta(seconds=seconds)
    )


@pytest.mark.django_db
def test_the_reaper_fails_silent_answers_and_tells_their_listeners(answer_factory, settings):
    settings.ANSWERS_STALE_AFTER = 30
    silent = answer_factory(text="Done [1].")
    beating = answer_factory(text="Done [1].")
    make_stale(silent.id, 60)
    make_stale(beating.id, 5)
    Answer.objects.filter(id=silent.id).update(delivery="sse")

    call_command("reap_stale_answers", stdout=(out := __import__("io").StringIO()))

    silent.refresh_from_db()
    beating.refresh_from_db()
    assert (silent.status, silent.error_kind) == ("failed", "stale")
    assert silent.finished_at is not None
    assert beating.status == "streaming"  # beat 5 s ago: alive
    assert f"{silent.id}: failed (stale)" in out.getvalue()
    assert last_event(silent.id) == {"type": "error", "detail": silent.error_message}


@pytest.mark.django_db
def test_the_reaper_takes_a_heartbeat_older_than_stale_after_and_not_one_a_moment_younger(
    answer_factory, settings
):
    settings.ANSWERS_STALE_AFTER = 30
    clock = FakeClock()
    older = answer_factory(text="Done [1].")
    younger = answer_factory(text="Done [1].")
    Answer.objects.filter(id=older.id).update(status="streaming", heartbeat_at=clock.now())
    clock.advance(MOMENT)
    Answer.objects.filter(id=younger.id).update(status="streaming", heartbeat_at=clock.now())

    clock.advance(30)  # `older` beat 30 s and a moment ago, `younger` exactly 30 s ago
    reaped = store.answer_reap_stale(clock=clock.now)

    assert [r.answer_id for r in reaped] == [older.id]
    older.refresh_from_db()
    younger.refresh_from_db()
    assert (older.status, older.error_kind, older.finished_at) == ("failed", "stale", clock.now())
    assert younger.status == "streaming"
    clock.advance(MOMENT)  # a moment later `younger` is stale too
    assert [r.answer_id for r in store.answer_reap_stale(clock=clock.now)] == [younger.id]


@pytest.mark.django_db(transaction=True)
async def test_a_long_generation_keeps_beating_and_is_never_reaped(settings, stub_openai):
    # Stale after 3 s: a beat every 0.75 s; the provider is silent for 4.5 s before its first piece.
    # (Shorter, a busy CI machine can delay one beat past the stale mark.)
    settings.ANSWERS_STALE_AFTER = 3
    settings.ANSWERS_PROVIDER_TIMEOUT = 20  # the silence is the model thinking, not a timeout
    stub_openai.set_default(Reply(pieces=["Patience [1]."], delay_s=4.5))

    accepted = await flow.ask(question=QUESTION, asker_id=None, publisher=SSE)
    reaped = []

    async def reap_until_finished() -> bool:
        # The reaper runs every 0.25 s (pacing, not a wait) for as long as the answer is in flight.
        reaped.extend(await sync_to_async(store.answer_reap_stale)())
        return (await Answer.objects.aget(id=accepted.id)).status not in ("pending", "streaming")

    await await_until(reap_until_finished, within=30, what="the long generation to end", every=0.25)
    await lifecycle.wait_for_background()

    assert reaped == []
    answer = await Answer.objects.aget(id=accepted.id)
    assert answer.status == "done"
    assert answer.final_text == "Patience [1]."


@pytest.mark.django_db(transaction=True)
async def test_server_start_reaps_what_a_dead_process_left(answer_factory, settings):
    settings.ANSWERS_STALE_AFTER = 30
    left = await sync_to_async(answer_factory)(text="Done [1].")
    await sync_to_async(make_stale)(left.id, 120)

    async def django_app(scope, receive, send):  # never reached by lifespan messages
        raise AssertionError("lifespan must not reach Django")

    # As project/asgi.py builds it when a server imports it (before its event loop runs).
    await sync_to_async(lambda: ServerLifecycle(django_app))()

    assert (await Answer.objects.aget(id=left.id)).status == "failed"


async def _lifespan(app: ServerLifecycle, *messages: str) -> list[str]:
    inbox: asyncio.Queue[dict] = asyncio.Queue()
    for message in messages:
        inbox.put_nowait({"type": f"lifespan.{message}"})
    sent: list[str] = []

    async def send(message: dict) -> None:
        sent.append(message["type"])

    await app({"type": "lifespan"}, inbox.get, send)
    return sent


@pytest.mark.django_db(transaction=True)
async def test_lifespan_shutdown_lets_answers_finish_within_the_grace_period(settings, stub_openai):
    settings.ANSWERS_SHUTDOWN_GRACE = 5
    stub_openai.set_default(Reply(pieces=["Almost ", "there [1]."], delay_s=0.2))
    app = ServerLifecycle(None, reap=False)
    accepted = await flow.ask(question=QUESTION, asker_id=None, publisher=SSE)

    sent = await _lifespan(app, "startup", "shutdown")

    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    answer = await Answer.objects.aget(id=accepted.id)
    assert answer.status == "done"
    assert (await sync_to_async(event_types)(answer.id))[-1] == "done"


@pytest.mark.django_db(transaction=True)
async def test_lifespan_shutdown_fails_what_cannot_finish_and_publishes_error(settings, stub_openai):
    settings.ANSWERS_SHUTDOWN_GRACE = 0.3
    stub_openai.set_default(Reply(pieces=["Started [1] ", "but never finished"], hang_after=1, hang=30))
    app = ServerLifecycle(None, reap=False)
    accepted = await flow.ask(question=QUESTION, asker_id=None, publisher=SSE)
    await await_until(  # the first piece arrives (its delta is stored)
        sync_to_async(lambda: "delta" in event_types(accepted.id)), within=20, what="the first delta"
    )

    try:
        await _lifespan(app, "startup", "shutdown")
        answer = await Answer.objects.aget(id=accepted.id)
        assert answer.status == "failed"
        assert answer.error_kind == "shutdown"
        assert answer.raw_text == "Started [1] "
        event = await sync_to_async(last_event)(answer.id)
        assert event == {"type": "error", "detail": answer.error_message}
        assert await Answer.objects.filter(status__in=["pending", "streaming"]).acount() == 0
    finally:
        lifecycle._shutting_down = False


class HeldRetrieval:
    """Retrieval (in its worker thread) held until `release`: an ask admitted, its answer not yet created."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, question: str, *, min_score: float, max_sources: int, reader: Any) -> Any:
        self.entered.set()
        self.release.wait(60)
        return retrieve(question, min_score=min_score, max_sources=max_sources, reader=reader)


@pytest.mark.django_db(transaction=True)
async def test_an_ask_admitted_before_the_stop_but_started_after_its_grace_is_failed_as_shutdown(stub_openai):
    """Issue 44: an ask still in its first steps when the stop began was missed by it, and its answer,
    created afterwards, stayed `streaming`."""
    stub_openai.set_default(Reply(pieces=["Never ", "sent"], hang=60))
    retrieval = HeldRetrieval()
    asking = asyncio.create_task(
        flow.ask(question=QUESTION, asker_id=None, publisher=SSE, retriever=retrieval)
    )
    await asyncio.to_thread(retrieval.entered.wait, 60)

    stopping = asyncio.create_task(lifecycle.shutdown(grace=0))
    await await_until(lifecycle.is_shutting_down, within=20, what="the stop to begin")
    retrieval.release.set()  # the answer is created now, past the grace
    accepted = await asking
    interrupted = await stopping

    assert interrupted == [accepted.id]
    answer = await Answer.objects.aget(id=accepted.id)
    assert (answer.status, answer.error_kind) == ("failed", "shutdown")
    assert await sync_to_async(event_types)(answer.id) == ["references", "error"]
    assert stub_openai.requests == []  # never started generating


class Node:
    """An object in a reference cycle: only the garbage collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_the_server_freezes_what_it_loaded_at_start_and_still_collects_what_comes_after():
    """Full collections skip the start-up heap (the URLconf, the views; see bench/NOTES.md)."""
    try:
        frozen = server.freeze_startup_heap()

        assert frozen > 10_000  # the process's modules, classes and URLconf, at least
        assert "answers.api.views" in sys.modules  # the views are loaded before the freeze
        garbage = Node()
        gone = weakref.ref(garbage)
        del garbage
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
