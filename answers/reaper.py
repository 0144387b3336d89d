"""The stale-answer reaper: storage fails the answers a dead process left in flight, then the
publisher of each one's delivery path tells its listeners (`error`).

Above both paths: answers.pipeline.store stores and knows no publisher; the publishers
(answers.pipeline.publisher.JSON, answers.sse.publish.SSE) know no reaper. Run by
`manage.py reap_stale_answers` and at server start (answers.server).
"""

from __future__ import annotations

from datetime import timedelta

from asgiref.sync import async_to_sync

from answers.pipeline.publisher import JSON, Publisher
from answers.pipeline.store import STALE_MESSAGE, Reaped, answer_reap_stale
from answers.sse.publish import SSE

# Each delivery path's publisher, by the Answer.Delivery value stored with the answers it serves.
PUBLISHERS: dict[str, Publisher] = {publisher.delivery: publisher for publisher in (JSON, SSE)}


def publisher_for(delivery: str) -> Publisher:
    """The publisher of a stored delivery; one no path serves has no listeners (JSON's: silent)."""
    return PUBLISHERS.get(delivery, JSON)


def reap_stale(*, older_than: timedelta | None = None) -> list[Reaped]:
    """Fail in-flight answers silent for `older_than` (ANSWERS_STALE_AFTER) and tell their listeners."""
    reaped = answer_reap_stale(older_than=older_than)
    if reaped:
        async_to_sync(_tell_listeners)(reaped)
    return reaped


async def _tell_listeners(reaped: list[Reaped]) -> None:
    for answer in reaped:
        await publisher_for(answer.delivery).error(answer.answer_id, STALE_MESSAGE)
