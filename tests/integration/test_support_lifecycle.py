"""The support record is computed off the answer's path: a stop waits for it within its grace,
then gives up on it (the answer stays done, its record null)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from answers.models import Answer
from answers.pipeline import flow, lifecycle
from answers.sse.publish import SSE
from tests.fixtures.answers import QUESTION, GatedSupportMethod

pytestmark = [pytest.mark.usefixtures("corpus", "openai_settings"), pytest.mark.django_db(transaction=True)]


@pytest.fixture
def gated(settings):
    settings.ANSWERS_SUPPORT_METHOD = "tests.fixtures.answers.GatedSupportMethod"
    GatedSupportMethod.gate = asyncio.Event()
    yield GatedSupportMethod.gate
    GatedSupportMethod.gate = None
    lifecycle._shutting_down = False


async def done_with_support_in_flight() -> tuple[Answer, asyncio.Task[None]]:
    """An SSE answer, done and published, its support record held by the gate."""
    accepted = await flow.ask(question=QUESTION, asker_id=None, publisher=SSE)
    generation = lifecycle.in_flight(accepted.id)
    assert generation is not None
    answer = await generation
    assert answer.status == "done"
    support = lifecycle.after_done(answer.id)
    assert support is not None
    return answer, support


async def test_the_answer_is_done_before_its_support_record_and_a_stop_waits_for_it(gated):
    answer, support = await done_with_support_in_flight()
    stored = await Answer.objects.aget(id=answer.id)
    assert stored.status == "done"
    assert stored.support is None  # done and published, the record still being computed

    stopping = asyncio.create_task(lifecycle.shutdown(grace=60))
    await asyncio.sleep(0)  # one turn of the loop: the stop is now waiting
    assert not stopping.done()
    assert not support.done()

    gated.set()
    assert await stopping == []
    assert support.done()
    stored = await Answer.objects.aget(id=answer.id)
    assert stored.support["method"] == "gated"
    assert stored.unsupported_count is not None


async def test_a_stop_gives_up_on_a_record_after_the_grace_and_leaves_it_null(gated, caplog):
    answer, support = await done_with_support_in_flight()

    with caplog.at_level(logging.WARNING, logger="answers.pipeline.lifecycle"):
        assert await lifecycle.shutdown(grace=0.2) == []

    assert support.cancelled()
    stored = await Answer.objects.aget(id=answer.id)
    assert (stored.status, stored.support, stored.unsupported_count) == ("done", None, None)
    assert "1 support record(s) not computed in time, left null" in caplog.text
