"""`manage.py audit_citations [--since DATE]`: re-finalize every stored raw text and report differences."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from answers.audit import audit_answers
from answers.management.since import add_since_argument, since_start


class Command(BaseCommand):
    help = (
        "Re-run strip and finalize on every done answer's raw text and compare with the stored final "
        "text, references, numbers and statuses. Prints each answer that differs; exits 1 if any does."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_since_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        since = since_start(options)
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
