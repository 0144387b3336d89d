"""The answer flow: retrieve, persist, publish, generate, finalize, persist, publish (then, off
the answer's path, its support record: answers.pipeline.support). Steps 1-3 and where generation
runs are here; steps 4-7 are generate.py's.

When no retrieved source reaches the threshold and ANSWERS_NO_SOURCES is `decline` (the
default), the answer is declined: the provider is never called (no request, no cost, nothing
to answer from), and the steps that would have generated publish ANSWERS_DECLINE_TEXT instead,
through the same publisher: `references` (empty), one delta with the text, `done` with
`declined` (docs/explanation/trail.md, "Declined answers").

One `ask()` serves both delivery paths (JSON and SSE); they differ only in the
publisher passed in (answers.pipeline.publisher): whether events are published,
and whether generation goes on in the background or within the caller.
Nothing here knows about HTTP.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from collections.abc import Awaitable
from typing import Protocol

from asgiref.sync import sync_to_async

from answers import db
from answers.conf import conf
from answers.conversations.services import Asker, TurnPlan, turn_plan
from answers.models import Answer
from answers.pipeline import lifecycle, store
from answers.pipeline.generate import Started, decline, generate
from answers.pipeline.keys import Idempotency
from answers.pipeline.publisher import Publisher
from answers.providers.base import Provider
from answers.providers.prompt import build_prompt
from answers.providers.registry import get_provider
from answers.retrieval.access import Reader, reader_for_id
from answers.retrieval.pipeline import retrieve
from answers.retrieval.types import Retrieval

logger = logging.getLogger(__name__)


class Retriever(Protocol):
    """Step 1; answers.retrieval.pipeline.retrieve by default (a seam for other retrieval strategies)."""

    def __call__(self, question: str, *, min_score: float, max_sources: int, reader: Reader) -> Retrieval: ...


async def ask(
    *,
    question: str,
    asker_id: int | None,
    publisher: Publisher,
    provider: Provider | None = None,
    retriever: Retriever | None = None,
    idempotency: Idempotency | None = None,
    conversation_id: uuid.UUID | None = None,
    asker: Asker | None = None,
    origin: str = Answer.Origin.READER,
) -> Answer:
    """Answer a question. In the request (JSON): the finished (done or failed) answer, sources loaded.

    In the background (SSE): the answer as soon as it and its sources exist and
    `references` is published; generation goes on whether or not anyone listens.

    `idempotency` is stored with the answer: IntegrityError when another request
    created the answer for that key first (answers.pipeline.idempotency.ask_once replays it).

    `conversation_id`: ask a follow-up in that conversation (step 0: checked for `asker`, then the
    standalone question); without it the answer starts a new conversation. Raises
    answers.conversations.services.ConversationRefused for a follow-up that may not be asked;
    answers.pipeline.lifecycle.NotAdmitted, before anything is stored, when this process takes no
    new ask (it is stopping, or generating ANSWERS_MAX_GENERATING answers already).

    `origin`: who asks, stored with the answer: a reader, or an evaluation run (answers.evaluation),
    whose answers no reader's page, conversation or the health page shows.
    """
    # Before anything is read or stored: a process stopping, or generating as many answers as it
    # may (ANSWERS_MAX_GENERATING), refuses the ask here (lifecycle.NotAdmitted), never later.
    # An evaluation run bounds itself (`evaluate --concurrency`): the readers' limit is not its.
    limit = conf.MAX_GENERATING if origin == Answer.Origin.READER else 0
    admission = lifecycle.admit(limit=limit)
    try:
        provider = provider or get_provider()
        asker = asker or Asker(user_id=asker_id)
        plan = await turn_plan(
            question=question, conversation_id=conversation_id, asker=asker, provider=provider
        )
        # Steps 1-3 in one trip to a worker thread, which gives its database connection back after.
        # A burst of questions takes database connections a few at a time, each given back
        # before the provider writes: hundreds in flight never exceed max_connections. Those
        # waiting their turn hold no thread either: the request's (started by its middleware) is
        # given back, and started again for the trip.
        db.release_request_thread()
        async with db.semaphore("pipeline", conf.PIPELINE_DB_WORKERS):
            started = await sync_to_async(db.releasing(_start))(
                question=question,
                asker_id=asker_id,
                publisher=publisher,
                provider=provider,
                retriever=retriever or retrieve,
                idempotency=idempotency,
                plan=plan,
                origin=origin,
            )
    except BaseException:
        admission.end()  # refused (a follow-up), a duplicate key, a failure: no generation to count
        raise
    return await _finish(started, provider=provider, publisher=publisher, admission=admission)


def _start(
    *,
    question: str,
    asker_id: int | None,
    publisher: Publisher,
    provider: Provider,
    retriever: Retriever,
    idempotency: Idempotency | None,
    plan: TurnPlan,
    origin: str,
) -> Started:
    """Steps 1-3: retrieve, persist the answer and its sources, publish `references`."""
    started_at = time.monotonic()
    min_score, max_sources = conf.MIN_SCORE, conf.MAX_SOURCES
    # Only what the asker may read is retrieved (docs/reference/access.md); a follow-up
    # retrieves on its standalone question, and its prompt carries the marker-free history.
    reader = reader_for_id(asker_id)
    retrieval = retriever(
        plan.standalone_question or question, min_score=min_score, max_sources=max_sources, reader=reader
    )
    retrieval_ms = (time.monotonic() - started_at) * 1000
    declined = not retrieval.sources and conf.NO_SOURCES == "decline"
    prompt = build_prompt(
        question,
        retrieval.sources,
        native_citations=provider.native_citations,
        history=plan.prompt_history(),
        standalone=plan.standalone_question,
    )
    answer = store.answer_create(
        question=question,
        asker_id=asker_id,
        delivery=publisher.delivery,
        provider=provider,
        prompt=prompt,
        retrieval=retrieval,
        min_score=min_score,
        max_sources=max_sources,
        retrieval_ms=retrieval_ms,
        idempotency=idempotency,
        declined=declined,
        plan=plan,
        origin=origin,
    )
    publisher.references(answer.id, retrieval.sources)
    return Started(answer=answer, prompt=prompt, started_at=started_at, declined=declined)


async def _finish(
    started: Started, *, provider: Provider, publisher: Publisher, admission: lifecycle.Admission
) -> Answer:
    """Steps 4-7, in the background (the answer as created is returned) or within the caller.

    Either way generation runs in a task of its own, tracked (answers.pipeline.lifecycle): a
    stopping server fails it as `shutdown` and its caller still answers (a JSON ask: 503 with
    the answer's id) instead of being cancelled with it.
    """
    loop = asyncio.get_running_loop()
    generation = (
        decline(started=started, publisher=publisher)
        if started.declined
        else generate(started=started, provider=provider, publisher=publisher)
    )
    if publisher.background:
        # A client that disconnects does not stop it; in a fresh context, because the request's
        # (asgiref's executor for its thread) ends with the 202.
        background = loop.create_task(_outliving_deletion(generation), context=contextvars.Context())
        lifecycle.track(started.answer_id, background, admission)
        return started.answer
    # Within the request, which waits for it without a thread of its own: under the project's
    # handler (answers.handler) requests share a pool; under Django's stock one, the thread the
    # request was given is given back now (and started again for the response's synchronous
    # parts). The copied context keeps the request's executor, or a caller's own sync thread
    # (`async_to_sync(...)`: tests, management commands) for the generation's database work.
    task = loop.create_task(generation, context=contextvars.copy_context())
    lifecycle.track(started.answer_id, task, admission)
    current = asyncio.current_task()
    assert current is not None
    lifecycle.responding(current)
    db.release_request_thread()
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if current.cancelling():
            # The client went away: the answer is stored as failed (cancelled) with the text that
            # arrived, before the request ends.
            task.cancel()
            await asyncio.wait([task])
        raise


async def _outliving_deletion(generation: Awaitable[Answer]) -> Answer | None:
    """A background generation: an answer deleted meanwhile ends it (its listeners told), quietly."""
    try:
        return await generation
    except store.AnswerDeleted as exc:
        logger.info("answer %s was deleted while it was being written", exc.answer_id)
        return None
