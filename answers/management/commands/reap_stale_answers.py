"""`manage.py reap_stale_answers`: fail answers whose server stopped writing them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from answers.conf import conf
from answers.reaper import reap_stale


class Command(BaseCommand):
    help = (
        "Mark in-flight answers with no heartbeat for ANSWERS_STALE_AFTER seconds (or --seconds) "
        "as failed and publish `error` to their listeners. Run it every minute or so (cron, a "
        "systemd timer); servers also run it when they start."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--seconds", type=float, default=None, help="Override ANSWERS_STALE_AFTER for this run."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        seconds = options["seconds"] if options["seconds"] is not None else conf.STALE_AFTER
        if seconds <= 0:
            raise CommandError("--seconds must be positive.")
        reaped = reap_stale(older_than=timedelta(seconds=seconds))
        for answer in reaped:
            self.stdout.write(f"{answer.answer_id}: failed (stale)")
        self.stdout.write(f"reap_stale_answers: {len(reaped)} answer(s) marked failed")
