"""The server process's answers in flight: which new asks it takes, and how they end when it stops.

Admission (admit()): a process takes a new ask only while it is not stopping and generates fewer
than ANSWERS_MAX_GENERATING answers; otherwise the ask is refused before anything of it is
stored (NotAdmitted: the API's and the form's `503` with `Retry-After`), never failed after it
was accepted. An admitted ask counts from before its question is read until its generation ends.

At stop (SIGTERM), no new ask is taken; answers in flight get ANSWERS_SHUTDOWN_GRACE seconds to
finish; the rest, and any admitted before the stop whose generation starts after the grace,
are stored as failed (`shutdown`) with `error` published (shutdown()), so none stays
`streaming`. The server's own hooks, which call shutdown(), let open streams deliver those
last events and reap what a dead process left at start, are answers.server's.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import uuid
import weakref
from typing import Any

from answers import metrics
from answers.models import Answer

logger = logging.getLogger(__name__)


# Every generation in flight in this process, by answer: kept referenced so the event
# loop cannot drop them, awaited by idempotent retries, finished or failed on shutdown.
_in_flight: dict[uuid.UUID, asyncio.Task[Answer | None]] = {}
# Work started once an answer is done (its support record): kept referenced, waited for on
# shutdown within the same grace, and by tests (wait_for_background).
_after_done: dict[uuid.UUID, asyncio.Task[None]] = {}
_shutting_down = False
# Set once the grace is over: a generation that starts from then on is failed as it starts.
_cut = False
# Answers whose generation the stop cut short (in flight at the grace's end, or started after).
_cut_short: list[uuid.UUID] = []
# Answers whose generation ended (done or failed) since the stop began: their streams are owed
# their last event before the server closes them (answers.server).
_ended_while_stopping: set[uuid.UUID] = set()
# Requests waiting for one of those generations (JSON asks): answered before the server stops.
_responding: set[asyncio.Task[Any]] = set()
# How long a stopping server waits, past failing the generations, for their requests to respond.
RESPOND_GRACE_S = 5.0


class Refusal(enum.StrEnum):
    """Why a new ask was not taken."""

    STOPPING = "stopping"
    BUSY = "busy"


# Retry-After of a refused ask, in seconds. Stopping: long enough for a restart or for the load
# balancer to notice /healthz's 503. Busy: about what a slot takes to free up (a few seconds of a
# provider's answer), so a client coming back then is likely to be taken.
RETRY_AFTER_S = {Refusal.STOPPING: 10, Refusal.BUSY: 5}
_REFUSALS = {
    Refusal.STOPPING: "The server is stopping and takes no new questions; please ask again shortly.",
    Refusal.BUSY: "The server is answering as many questions as it can; please ask again shortly.",
}


class NotAdmitted(Exception):
    """A new ask this process does not take now; nothing of it is stored."""

    def __init__(self, reason: Refusal) -> None:
        super().__init__(_REFUSALS[reason])
        self.reason = reason
        self.message = _REFUSALS[reason]
        self.retry_after = RETRY_AFTER_S[reason]


class Admission:
    """One admitted ask, counted against ANSWERS_MAX_GENERATING until end()."""

    def __init__(self, admitted: set[Admission], loop: asyncio.AbstractEventLoop) -> None:
        self._admitted = admitted
        self.ended: asyncio.Future[None] = loop.create_future()

    def end(self) -> None:
        self._admitted.discard(self)
        if not self.ended.done():
            self.ended.set_result(None)


# Admitted asks by event loop (a server process has one): the count is the process's, and a
# test's loop takes its admissions with it when it closes.
_admitted: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[Admission]] = weakref.WeakKeyDictionary()


def _admitted_here() -> set[Admission]:
    return _admitted.setdefault(asyncio.get_running_loop(), set())


def check_admission(*, limit: int) -> None:
    """NotAdmitted now if admit() would refuse: a caller refuses before any work of its own (an
    anonymous asker's session), while admit() still decides. Every refusal is counted here."""
    refusal = None
    if _shutting_down:
        refusal = Refusal.STOPPING
    elif limit and len(_admitted_here()) >= limit:
        refusal = Refusal.BUSY
    if refusal is not None:
        # Counted, not logged: a burst past the limit would be a log line per question.
        metrics.ask_refused(refusal)
        raise NotAdmitted(refusal)


def admit(*, limit: int) -> Admission:
    """Take a new ask, or refuse it (NotAdmitted): the process is stopping, or `limit` asks (0: no
    limit) are already admitted and not ended. The caller ends the admission if the ask stops
    before its generation starts; track() ends it with the generation."""
    check_admission(limit=limit)
    admitted = _admitted_here()
    admission = Admission(admitted, asyncio.get_running_loop())
    admitted.add(admission)
    return admission


def generating() -> int:
    """Asks admitted in this process and not yet ended (steps 1-3 or generating)."""
    return len(_admitted_here())


def track(answer_id: uuid.UUID, task: asyncio.Task[Answer | None], admission: Admission) -> None:
    """A generation running in a task of its own, until it ends (and with it, its admission)."""
    _in_flight[answer_id] = task

    def ended(_: object) -> None:
        _in_flight.pop(answer_id, None)
        admission.end()
        if _shutting_down:
            _ended_while_stopping.add(answer_id)

    task.add_done_callback(ended)
    if _shutting_down and _cut:
        # Admitted before the stop, started after its grace: failed as `shutdown` as soon as it
        # starts. Cancelled on the loop's next turn, after the task's first step (queued first):
        # a task cancelled before it runs at all would never store its failure.
        task.get_loop().call_soon(task.cancel)
        _cut_short.append(answer_id)


def responding(task: asyncio.Task[Any]) -> None:
    """A request (its task) waiting for a generation to respond with: a stopping server lets it
    send its response (503 with the answer's id) before it stops."""
    _responding.add(task)
    task.add_done_callback(_responding.discard)


def in_flight(answer_id: uuid.UUID) -> asyncio.Task[Answer | None] | None:
    return _in_flight.get(answer_id)


def track_after_done(answer_id: uuid.UUID, task: asyncio.Task[None]) -> None:
    """Work on a done answer (its support record) running in a task of its own, until it ends."""
    _after_done[answer_id] = task

    def forget(_: object) -> None:
        if _after_done.get(answer_id) is task:
            del _after_done[answer_id]

    task.add_done_callback(forget)


def after_done(answer_id: uuid.UUID) -> asyncio.Task[None] | None:
    return _after_done.get(answer_id)


async def wait_for_background() -> None:
    """Wait for every generation in flight in this process, and the work started once each is done (tests)."""
    while _in_flight or _after_done:
        await asyncio.gather(*_in_flight.values(), *_after_done.values(), return_exceptions=True)


def is_shutting_down() -> bool:
    return _shutting_down


def begin_shutdown() -> None:
    """From now on, no new ask is taken, interrupted answers are failed as `shutdown`, and /healthz
    says 503."""
    global _shutting_down, _cut
    if not _shutting_down:
        _cut = False
        _cut_short.clear()
        _ended_while_stopping.clear()
    _shutting_down = True


def ended_while_stopping() -> frozenset[uuid.UUID]:
    """The answers whose generation ended in this process since the stop began."""
    return frozenset(_ended_while_stopping)


async def shutdown(*, grace: float) -> list[uuid.UUID]:
    """Let admitted asks finish within `grace` seconds, then fail the rest (stored and published).

    Returns the ids of the answers it had to fail.
    """
    begin_shutdown()
    deadline = asyncio.get_running_loop().time() + grace
    admitted = _admitted_here()
    if admitted:
        logger.info("shutdown: waiting up to %.1f s for %d answer(s) in flight", grace, len(admitted))
        await asyncio.wait([admission.ended for admission in admitted], timeout=grace)
    interrupted = await _fail_the_rest(admitted)
    if interrupted:
        logger.warning(
            "shutdown: %d answer(s) did not finish in time and were marked failed", len(interrupted)
        )
    if _responding:
        # Their JSON asks respond (done, or 503 with the id) rather than being cut by the stop.
        await asyncio.wait(set(_responding), timeout=RESPOND_GRACE_S)
    await _finish_after_done(deadline)
    return interrupted


async def _fail_the_rest(admitted: set[Admission]) -> list[uuid.UUID]:
    """The grace is over: cancel every generation in flight (each stores its failure), and fail those
    still to start (asks in their first steps) as they start, waiting up to RESPOND_GRACE_S for them.
    Returns the ids of the answers failed."""
    global _cut
    _cut = True
    running = list(_in_flight.items())
    for answer_id, task in running:
        task.cancel()
        _cut_short.append(answer_id)
    if running:
        await asyncio.gather(*(task for _, task in running), return_exceptions=True)
    starting = [admission.ended for admission in admitted]
    if starting:
        await asyncio.wait(starting, timeout=RESPOND_GRACE_S)
    return list(_cut_short)


async def _finish_after_done(deadline: float) -> None:
    """The support records being computed (answers that finished meanwhile included), until `deadline`.

    One not finished by then is cancelled: its answer keeps `support` null (check_support fills it).
    """
    pending = set(_after_done.values())
    if not pending:
        return
    _, pending = await asyncio.wait(pending, timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
        logger.warning("shutdown: %d support record(s) not computed in time, left null", len(pending))
