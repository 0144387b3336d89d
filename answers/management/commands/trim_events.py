"""`manage.py trim_events`: delete the stored events of answers finished ANSWERS_EVENT_RETENTION ago."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from answers.conf import conf
from answers.sse.retention import BATCH_SIZE, cutoff_for, pending_events, trim


class Command(BaseCommand):
    help = (
        "Delete the stored events of answers that finished more than ANSWERS_EVENT_RETENTION seconds "
        "ago (their events URL then replays `references` and `done`/`error` from the answer's record). "
        "Batched, safe while answers stream, and idempotent: run it from cron, e.g. daily."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--batch-size",
            type=int,
            default=BATCH_SIZE,
            help="Old events looked at per batch; each batch deletes in one short statement.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        cutoff = cutoff_for(conf.EVENT_RETENTION)
        total = pending_events(cutoff)
        # A progress bar on a terminal only (disable=None); cron gets the summary line alone.
        with tqdm(total=total, unit="event", desc="trim_events", disable=None) as bar:
            trimmed = trim(cutoff, batch_size=options["batch_size"], progress=bar.update)
        self.stdout.write(
            f"trim_events: {trimmed.events} event(s) of {trimmed.channels} answer(s) finished before "
            f"{cutoff.isoformat(timespec='seconds')} deleted"
        )
