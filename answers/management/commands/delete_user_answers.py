"""`manage.py delete_user_answers USERNAME`: delete a user's answers before deleting the user."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from answers.conversations.erasure import ReviewedAnswers, user_answers_delete


class Command(BaseCommand):
    help = (
        "Delete every answer a user asked (their conversations, sources and readers' feedback with them), "
        "before deleting the user: a deleted user's answers are otherwise kept, staff-only, and admin "
        "deletes no answer. Answers with QA reviews are kept unless --include-reviewed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--include-reviewed",
            action="store_true",
            help="Also delete answers QA reviewed, with their reviews (part of the audit record).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Say what would be deleted; delete nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        user = user_model._default_manager.filter(**{user_model.USERNAME_FIELD: options["username"]}).first()
        if user is None:
            raise CommandError(f"No user is named {options['username']!r}.")
        try:
            deleted = user_answers_delete(
                user=user, include_reviewed=options["include_reviewed"], dry_run=options["dry_run"]
            )
        except ReviewedAnswers as exc:
            raise CommandError(
                f"{exc.count} of {options['username']}'s answers have QA reviews (the audit record): "
                "nothing was deleted. Pass --include-reviewed to delete them with their reviews."
            ) from None
        verb = "Would delete" if options["dry_run"] else "Deleted"
        self.stdout.write(
            f"{verb} {deleted.answers} answer(s) in {deleted.conversations} conversation(s) and "
            f"{deleted.reviews} review(s) of {options['username']}."
        )
        if not options["dry_run"]:
            # Nobody reads them (a stream needs its answer); trim_events deletes them once they are old.
            self.stdout.write(
                "Their stored events go with `manage.py trim_events` once ANSWERS_EVENT_RETENTION has passed."
            )
