"""`manage.py reap_stale_answers`: fail answers whose server stopped writing them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from answers.services import answer_reap_stale


class Command(BaseCommand):
    help = "Mark in-flight answers with no heartbeat for --minutes as failed and tell their listeners."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--minutes", type=float, default=5.0)

    def handle(self, *args: Any, **options: Any) -> None:
        reaped = answer_reap_stale(older_than=timedelta(minutes=options["minutes"]))
        for answer_id in reaped:
            self.stdout.write(f"{answer_id}: failed (stale)")
        self.stdout.write(f"reap_stale_answers: {len(reaped)} answer(s) marked failed")
