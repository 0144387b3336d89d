"""`manage.py audit_citations [--since DATE]`: re-finalize every stored raw text and report differences."""

from __future__ import annotations

import argparse
from datetime import date, datetime, time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from answers.audit import audit_answers


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date (YYYY-MM-DD)") from None


class Command(BaseCommand):
    help = (
        "Re-run strip and finalize on every done answer's raw text and compare with the stored final "
        "text, references, numbers and statuses. Prints each answer that differs; exits 1 if any does."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--since", type=_date, help="Only answers created on or after this day (YYYY-MM-DD)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        since_day: date | None = options["since"]
        since = (
            datetime.combine(since_day, time.min, tzinfo=timezone.get_current_timezone())
            if since_day is not None
            else None
        )
        checked = differing = 0
        for audit in audit_answers(since=since):
            checked += 1
            if not audit.ok:
                differing += 1
                for difference in audit.differences:
                    self.stdout.write(f"{audit.answer_id}: {difference}")
        self.stdout.write(f"audit_citations: checked {checked} answers, {differing} differ")
        if differing:
            raise CommandError(f"{differing} answers differ from their raw text", returncode=1)
