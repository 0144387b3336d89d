"""`manage.py check_support [--since DATE]`: (re)compute the support record of stored done answers."""

from __future__ import annotations

import logging
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from answers.conf import conf
from answers.management.since import add_since_argument, since_start
from answers.models import Answer
from answers.pipeline.store import answer_support
from answers.support.compute import compute_coverage, compute_support, get_support_method

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Compute again, with the configured ANSWERS_SUPPORT_METHOD and ANSWERS_SUPPORT_MIN, the support "
        "record of every done answer (or those created since a day) and store it with its counts and "
        "its coverage record."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_since_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        since = since_start(options)
        answers = Answer.objects.filter(status=Answer.Status.DONE)
        if since is not None:
            answers = answers.filter(created_at__gte=since)
        ids = list(answers.order_by("created_at", "pk").values_list("pk", flat=True))
        method = get_support_method()
        if not ids:
            self.stdout.write("No done answers to check.")
            return
        stored = 0
        failed: list[str] = []
        with tqdm(total=len(ids), unit="answer", desc=f"check_support ({method.name})", disable=None) as bar:
            for answer_id in ids:
                answer = Answer.objects.prefetch_related("sources").get(pk=answer_id)
                try:
                    record = compute_support(answer, method=method)
                    coverage = compute_coverage(answer)
                except Exception:
                    logger.exception("answer %s: support record not computed", answer_id)
                    failed.append(str(answer_id))
                else:
                    stored += answer_support(answer_id=answer_id, record=record, coverage=coverage)
                bar.update()
        self.stdout.write(
            f"Stored the support record of {stored} answer(s) ({method.name}, bar {conf.SUPPORT_MIN:g})."
        )
        if failed:
            raise CommandError(f"{len(failed)} answer(s) could not be checked: {', '.join(failed)}")
