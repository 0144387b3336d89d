"""`manage.py trim_events`: which stored events go, in batches, and what stays (answers.sse.retention)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_eventstream.models import Event as StoredEvent
from django_eventstream.models import EventCounter

from answers.failures import ErrorKind
from answers.models import Answer
from answers.sse.channels import channel_for
from answers.sse.publish import send_all

DAY = timedelta(days=1)


def with_events(answer_id: uuid.UUID, deltas: int = 3) -> str:
    """The events the SSE path stores for an answer, through the real storage."""
    channel = channel_for(answer_id)
    events = [("references", {"references": []})]
    events += [("delta", {"text": f"piece {i} ", "display": f"piece {i} "}) for i in range(deltas)]
    send_all(channel, [*events, ("done", {"text": "", "references": [], "fallback": True, "html": ""})])
    return channel


def finished(answer: Answer, ago: timedelta) -> None:
    when = timezone.now() - ago
    Answer.objects.filter(id=answer.id).update(finished_at=when)
    StoredEvent.objects.filter(channel=channel_for(answer.id)).update(created=when - timedelta(seconds=5))


def trim(**options: object) -> str:
    out = StringIO()
    call_command("trim_events", stdout=out, **options)
    return out.getvalue()


@pytest.mark.django_db
def test_trim_deletes_the_events_of_answers_finished_before_the_retention_and_nothing_else(
    answer_factory: Callable[..., Answer],
) -> None:
    old_done = answer_factory(text="Old [1].")
    old_failed = answer_factory(text="Old, cut", fail_kind=ErrorKind.UPSTREAM)
    recent = answer_factory(text="Recent [1].")
    streaming = answer_factory(text="Still going [1].")
    for answer in (old_done, old_failed, recent, streaming):
        with_events(answer.id, deltas=4)
    finished(old_done, 8 * DAY)
    finished(old_failed, 8 * DAY)
    finished(recent, DAY)
    # Asked long ago and still streaming (its process stalled, say): never trimmed, however old.
    finished(streaming, 9 * DAY)
    Answer.objects.filter(id=streaming.id).update(status=Answer.Status.STREAMING, finished_at=None)
    deleted_answer = uuid.uuid4()  # events of an answer deleted since (admin): nobody can read them
    with_events(deleted_answer)
    StoredEvent.objects.filter(channel=channel_for(deleted_answer)).update(created=timezone.now() - 8 * DAY)
    kept_counters = EventCounter.objects.count()

    said = trim(batch_size=2)

    remaining = set(StoredEvent.objects.values_list("channel", flat=True))
    assert remaining == {channel_for(recent.id), channel_for(streaming.id)}
    assert StoredEvent.objects.filter(channel=channel_for(recent.id)).count() == 7  # 0, references, 4, done
    assert "trim_events: 20 event(s) of 3 answer(s)" in said, said
    assert EventCounter.objects.count() == kept_counters, "the channels' last ids stay"
    assert "trim_events: 0 event(s) of 0 answer(s)" in trim(), "nothing more on a second run"


@pytest.mark.django_db
def test_the_retention_setting_decides_what_is_due(
    answer_factory: Callable[..., Answer], settings: object
) -> None:
    answer = answer_factory(text="A day old [1].")
    with_events(answer.id)
    finished(answer, DAY)
    assert "0 event(s)" in trim()  # the default: a week
    settings.ANSWERS_EVENT_RETENTION = 3600  # type: ignore[attr-defined]
    assert "6 event(s) of 1 answer(s)" in trim()
    assert not StoredEvent.objects.exists()


@pytest.mark.django_db
def test_a_batch_size_under_one_is_refused() -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--batch-size"):
        trim(batch_size=0)
