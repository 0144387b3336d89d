"""The pipeline service under load and from the command line."""

from __future__ import annotations

import asyncio
import io
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.core.management.base import CommandError

from answers.models import Answer
from answers.pipeline import flow, lifecycle, store
from answers.pipeline.publisher import JSON
from answers.providers.openai_provider import OpenAIProvider
from answers.retrieval.types import RetrievedSource
from answers.sse.publish import SSE
from tests.fixtures.answers import QUESTION
from tests.fixtures.clock import FakeClock
from tests.fixtures.providers import Reply

pytestmark = pytest.mark.usefixtures("corpus", "openai_settings")


@pytest.mark.django_db(transaction=True)
async def test_a_burst_of_concurrent_asks_are_all_answered_and_persisted(stub_openai, settings):
    count = 20
    settings.ANSWERS_MAX_GENERATING = count  # all of them taken (admission: test_admission.py)

    def reply(body):
        question = body["messages"][-1]["content"]
        number = question.rsplit("#", 1)[-1].split()[0]
        return Reply(pieces=[f"Answer {number} ", "cites [2]", " then [1]."], delay_s=0.01)

    stub_openai.set_default(reply)
    provider = OpenAIProvider(base_url=stub_openai.base_url, api_key="k", model="stub-model", timeout=10)

    answers = await asyncio.gather(
        *[
            flow.ask(question=f"{QUESTION} #{i} ", asker_id=None, publisher=JSON, provider=provider)
            for i in range(count)
        ]
    )

    assert [a.status for a in answers] == ["done"] * count
    stored = await sync_to_async(list)(Answer.objects.order_by("question"))
    assert len(stored) == count
    assert {a.status for a in stored} == {"done"}
    for answer in stored:
        number = answer.question.rsplit("#", 1)[-1].strip()
        assert answer.final_text == f"Answer {number} cites [1] then [2]."
    assert await Answer.objects.filter(status__in=["pending", "streaming"]).acount() == 0


@pytest.mark.django_db(transaction=True)
async def test_sse_generation_finishes_in_the_background_with_nobody_listening(stub_openai):
    stub_openai.enqueue(Reply(pieces=["Later [4]", " and [2]."], delay_s=0.05))
    provider = OpenAIProvider(base_url=stub_openai.base_url, api_key="k", model="stub-model", timeout=10)

    answer = await flow.ask(question=QUESTION, asker_id=None, publisher=SSE, provider=provider)

    assert answer.status == "streaming"  # returned before generation ended
    await lifecycle.wait_for_background()
    done = await Answer.objects.aget(id=answer.id)
    assert done.status == "done"
    assert done.final_text == "Later [1] and [2]."


@dataclass
class SlowStoring:
    """The SSE path, each piece costing the app `per_piece` seconds (on `clock`) to store and publish:
    a process streaming hundreds of answers at once."""

    clock: FakeClock
    per_piece: float
    delivery: str = SSE.delivery
    background: bool = SSE.background

    def references(self, answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> None:
        SSE.references(answer_id, sources)

    def deltas(self, answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> SlowStoring:
        self._deltas = SSE.deltas(answer_id, sources)
        return self

    async def add(self, piece: str) -> None:
        self.clock.advance(self.per_piece)
        await self._deltas.add(piece)

    async def close(self, final_text: str | None = None) -> None:
        await self._deltas.close(final_text)

    async def done(self, answer: Answer) -> None:
        await SSE.done(answer)

    async def error(self, answer_id: uuid.UUID, message: str) -> None:
        await SSE.error(answer_id, message)


@pytest.mark.django_db(transaction=True)
async def test_an_app_slow_to_store_pieces_does_not_fail_a_provider_inside_its_deadline(stub_openai):
    # Each piece takes the app 4 s to store and publish, three pieces: 12 s of the app's time against
    # a 5 s provider deadline. The provider's own time is a few hundredths of a second between pieces
    # (so each is waited for): the answer is done.
    stub_openai.enqueue(Reply(pieces=["Zebras graze ", "on grass [1]", " all day."], delay_s=0.05))
    clock = FakeClock()
    provider = OpenAIProvider(
        base_url=stub_openai.base_url, api_key="k", model="stub-model", timeout=5, clock=clock
    )

    answer = await flow.ask(
        question=QUESTION, asker_id=None, publisher=SlowStoring(clock, per_piece=4.0), provider=provider
    )
    await lifecycle.wait_for_background()

    done = await Answer.objects.aget(id=answer.id)
    assert (done.status, done.error_kind) == ("done", "")
    assert done.raw_text == "Zebras graze on grass [1] all day."


@pytest.mark.django_db
def test_stale_in_flight_answers_are_reaped_as_failed(answer_factory):
    from datetime import timedelta

    from django.utils import timezone

    finished = answer_factory(text="Done [1].")
    stale = answer_factory(text="Done [1].")
    Answer.objects.filter(id=stale.id).update(
        status="streaming", heartbeat_at=timezone.now() - timedelta(minutes=10)
    )

    reaped = store.answer_reap_stale(older_than=timedelta(minutes=5))

    assert [r.answer_id for r in reaped] == [stale.id]
    assert Answer.objects.get(id=stale.id).status == "failed"
    assert Answer.objects.get(id=stale.id).error_kind == "stale"
    assert Answer.objects.get(id=finished.id).status == "done"


@pytest.mark.django_db
def test_the_ask_command_prints_the_answer_sources_and_dropped_ones(capsys, stub_openai):
    stub_openai.enqueue(Reply(pieces=["Teacups [3]", " and walruses [1]."]))

    call_command("ask", QUESTION)

    out = capsys.readouterr().out
    assert "Teacups [1] and walruses [2]." in out
    assert "Sources:" in out
    answer = Answer.objects.get()
    by_number = {s.original_number: s for s in answer.sources.all()}
    assert f"[1] {by_number[3].title} <{by_number[3].url}>" in out
    assert f"[2] {by_number[1].title}" in out
    assert "Dropped" in out
    assert f"was [2] {by_number[2].title}" in out
    assert str(answer.id) in out


class _Writes(io.StringIO):
    """A stdout that remembers each write, to see the text arrive in pieces."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


@pytest.mark.django_db
def test_the_ask_command_streams_the_display_text_with_stream(stub_openai):
    stub_openai.enqueue(Reply(pieces=["Raw [2", "] and", " [9] text", " [3][2]."]))
    out = _Writes()

    call_command("ask", QUESTION, "--stream", stdout=out)

    answer = Answer.objects.get()
    assert answer.final_text == "Raw [1] and text [2][1]."
    printed = out.getvalue()
    # The text as it will read, final numbers from the first marker: the raw text never shows.
    assert printed.startswith("Raw [1] and text [2][1].\n")
    assert printed.count("Raw [1] and text [2][1].") == 1
    assert "[9]" not in printed
    assert "[3]" not in printed.split("Sources:")[0]
    streamed = out.writes[: out.writes.index(next(w for w in out.writes if w.startswith("\n"))) + 1]
    assert len([w for w in streamed if w.strip()]) >= 3, ("printed as it is written", out.writes)
    by_number = {s.original_number: s for s in answer.sources.all()}
    assert f"[1] {by_number[2].title}" in printed
    assert f"[2] {by_number[3].title}" in printed


@pytest.mark.django_db
def test_the_ask_command_fails_loudly_on_provider_errors(capsys, stub_openai):
    stub_openai.set_default(Reply(status=500))

    with pytest.raises(CommandError, match="failed"):
        call_command("ask", QUESTION)
    assert Answer.objects.get().status == "failed"
