"""An answer deleted (in admin) while it is written: its listeners hear `error`, its asker an answer.

Before, generation ended in `Answer.DoesNotExist` and no event: a listener stayed on keep-alives
for good, and a JSON ask got a bare 500.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async

from answers.models import Answer
from answers.pipeline import flow, lifecycle, store
from answers.pipeline.publisher import JSON
from answers.sse.channels import channel_for
from answers.sse.publish import SSE
from answers.sse.storage import AnswerEventStorage
from tests.fixtures.answers import QUESTION, GatedProvider, fixed_retriever, sources_for

# The generation's database work runs on a thread of its own (as in production): committed data.
pytestmark = pytest.mark.django_db(transaction=True)


def stored_events(answer_id) -> list[tuple[str, dict]]:
    events = AnswerEventStorage().get_events(channel_for(answer_id), 0, limit=1000)
    return [(e.type, json.loads(e.data)) for e in events]


@pytest.mark.parametrize("rest", [["sip tea."], []], ids=["more-text-after", "nothing-after"])
async def test_deleting_a_streaming_answer_ends_its_stream_with_error(corpus, rest):
    provider = GatedProvider(pieces=["Walruses [1] ", *rest])
    answer = await flow.ask(
        question=QUESTION,
        asker_id=None,
        publisher=SSE,
        provider=provider,
        retriever=fixed_retriever(sources_for(corpus)),
    )
    await provider.first_sent.wait()

    await Answer.objects.filter(id=answer.id).adelete()
    provider.gate.set()
    await lifecycle.wait_for_background()

    events = await sync_to_async(stored_events)(answer.id)
    assert events[0][0] == "references"
    assert events[-1] == ("error", {"detail": store.DELETED_MESSAGE})
    assert "done" not in [kind for kind, _ in events]
    assert not await Answer.objects.filter(id=answer.id).aexists()


async def test_deleting_an_answer_a_json_ask_waits_for_tells_the_asker(corpus):
    provider = GatedProvider(pieces=["Walruses [1] ", "sip tea."])
    asking = asyncio.create_task(
        flow.ask(
            question=QUESTION,
            asker_id=None,
            publisher=JSON,
            provider=provider,
            retriever=fixed_retriever(sources_for(corpus)),
        )
    )
    await provider.first_sent.wait()
    answer_id = await Answer.objects.values_list("id", flat=True).aget()

    await Answer.objects.filter(id=answer_id).adelete()
    provider.gate.set()

    with pytest.raises(store.AnswerDeleted) as raised:
        await asking
    assert raised.value.answer_id == answer_id  # the API answers it as a 404 with this id
