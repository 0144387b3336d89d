"""Event retention: deleting the stored events of answers that finished ANSWERS_EVENT_RETENTION ago.

`trim()` walks the event table by primary key, a batch at a time, among events created
before the cutoff, and deletes every event of each channel whose answer finished before it
(or no longer exists). Each delete is one short statement of its own (autocommit), all of a
channel's events at once, so a reader sees a channel whole or gone, never half; rows are
locked only while their statement runs and the table never is. A streaming answer's events
are never deleted, however old. Running it again deletes nothing more: it is safe from cron.

Each channel's counter row (django-eventstream's EventCounter, about 100 bytes) is kept: it
keeps the channel's event ids increasing and names the id of the answer's last event, which
the replay from the record gives its `done` or `error` (answers.sse.replay).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone
from django_eventstream.models import Event as StoredEvent

from answers.models import Answer
from answers.sse.channels import answer_id_from_channel

FINISHED = (Answer.Status.DONE, Answer.Status.FAILED)
BATCH_SIZE = 1000


@dataclass
class Trimmed:
    events: int = 0  # rows deleted
    channels: int = 0  # answers (channels) whose events were deleted


def cutoff_for(retention_seconds: float, *, now: datetime | None = None) -> datetime:
    return (now or timezone.now()) - timedelta(seconds=retention_seconds)


def pending_events(cutoff: datetime) -> int:
    """Stored events created before the cutoff: what one trim looks at (an upper bound of what it deletes)."""
    return int(StoredEvent.objects.filter(created__lt=cutoff).count())


def trim(
    cutoff: datetime, *, batch_size: int = BATCH_SIZE, progress: Callable[[int], object] | None = None
) -> Trimmed:
    """Delete the events of every answer that finished before `cutoff`, `batch_size` rows looked at a time.

    `progress` is called with the number of old events each batch dealt with (deleted or kept).
    """
    trimmed = Trimmed()
    after = 0
    while True:
        rows = list(
            StoredEvent.objects.filter(id__gt=after, created__lt=cutoff)
            .order_by("id")
            .values_list("id", "channel")[:batch_size]
        )
        if not rows:
            return trimmed
        after = rows[-1][0]
        channels = _expired_channels({channel for _, channel in rows}, cutoff)
        deleted = 0
        if channels:
            deleted, _ = StoredEvent.objects.filter(channel__in=sorted(channels)).delete()
            trimmed.events += deleted
            trimmed.channels += len(channels)
        if progress is not None:
            kept = sum(1 for _, channel in rows if channel not in channels)
            progress(deleted + kept)


def _expired_channels(channels: set[str], cutoff: datetime) -> set[str]:
    """Those of `channels` whose answer finished before `cutoff`, or whose answer no longer exists."""
    by_answer: dict[uuid.UUID, str] = {}
    for channel in channels:
        answer_id = answer_id_from_channel(channel)
        if answer_id is not None:  # only answers' channels exist (answers.sse.channels); others are left
            by_answer[answer_id] = channel
    expired = set(by_answer.values())
    for answer_id, status, finished_at in Answer.objects.filter(id__in=list(by_answer)).values_list(
        "id", "status", "finished_at"
    ):
        if status not in FINISHED or finished_at is None or finished_at >= cutoff:
            expired.discard(by_answer[answer_id])
    return expired
