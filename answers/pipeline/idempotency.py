"""Idempotency-Key: a retried request gets the answer its first attempt created, not a second one.

Above the flow: it calls flow.ask() and replays; the key itself (keys.py) is what the flow stores.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass

from asgiref.sync import sync_to_async
from django.db import IntegrityError

from answers import selectors
from answers.conf import conf
from answers.conversations.services import Asker
from answers.models import Answer
from answers.pipeline import flow, lifecycle
from answers.pipeline.keys import Idempotency
from answers.pipeline.publisher import Publisher
from answers.pipeline.store import run_db
from answers.providers.base import Provider


class IdempotencyConflict(Exception):
    """An Idempotency-Key was used before for a different request."""

    def __init__(self, answer_id: uuid.UUID) -> None:
        super().__init__("This Idempotency-Key was already used for a different question.")
        self.answer_id = answer_id


@dataclass(frozen=True)
class Asked:
    """What asking returned: the answer, and whether it is a first attempt's (a replay)."""

    answer: Answer
    replayed: bool = False


async def ask_once(
    *,
    idempotency: Idempotency | None,
    question: str,
    asker_id: int | None,
    publisher: Publisher,
    provider: Provider | None = None,
    retriever: flow.Retriever | None = None,
    conversation_id: uuid.UUID | None = None,
    asker: Asker | None = None,
) -> Asked:
    """flow.ask(), once per key: a retry gets the first attempt's answer (finished first when
    generation runs within the request), or IdempotencyConflict for a different request.

    Without a key, simply flow.ask().
    """
    if idempotency is not None:
        existing = await sync_to_async(_answer_for_key)(idempotency)
        if existing is not None:
            return await _replay(existing, question=question, publisher=publisher)
    try:
        answer = await flow.ask(
            question=question,
            asker_id=asker_id,
            publisher=publisher,
            provider=provider,
            retriever=retriever,
            idempotency=idempotency,
            conversation_id=conversation_id,
            asker=asker,
        )
    except IntegrityError:
        # A concurrent retry with the same key created the answer first.
        existing = await sync_to_async(_answer_for_key)(idempotency) if idempotency else None
        if existing is None:
            raise
        return await _replay(existing, question=question, publisher=publisher)
    return Asked(answer)


def _answer_for_key(idempotency: Idempotency) -> Answer | None:
    return Answer.objects.filter(idempotency_scope=idempotency.scope, idempotency_key=idempotency.key).first()


async def _replay(existing: Answer, *, question: str, publisher: Publisher) -> Asked:
    """The first attempt's answer, for a retry: finished first when the caller waits for generation."""
    if existing.question != question or existing.delivery != publisher.delivery:
        raise IdempotencyConflict(existing.id)
    answer = existing if publisher.background else await _wait_finished(existing)
    return Asked(answer, replayed=True)


async def _wait_finished(answer: Answer) -> Answer:
    """Wait for an in-flight answer: its task when this process runs it, else the database."""
    deadline = time.monotonic() + conf.PROVIDER_TIMEOUT + conf.STALE_AFTER
    while answer.status in (Answer.Status.PENDING, Answer.Status.STREAMING) and time.monotonic() < deadline:
        task = lifecycle.in_flight(answer.id)
        if task is not None:
            await asyncio.wait([task], timeout=max(0.0, deadline - time.monotonic()))
        else:
            await asyncio.sleep(0.2)
        answer = await sync_to_async(Answer.objects.get)(id=answer.id)
    # As the JSON path returns an answer: with its sources.
    return await run_db(selectors.answer_trail_get, answer_id=answer.id) or answer
