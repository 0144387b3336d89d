"""`manage.py reindex [app.Model ...]`: rebuild the registered models' documents from their querysets."""

from __future__ import annotations

import sys
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from answers.content.indexing import reindex, sources_named
from answers.content.registry import registered


class Command(BaseCommand):
    help = (
        "Rebuild the documents of the models registered in answers_sources.py (all, or those named as "
        "app_label.ModelName): add and update what their querysets hold, remove the rest."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("models", nargs="*", help="app_label.ModelName of registered models.")
        parser.add_argument("--no-progress", action="store_true", help="No progress bar, even on a terminal.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            sources = sources_named(options["models"]) if options["models"] else registered()
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if not sources:
            raise CommandError("No model is registered (answers.content.register in an answers_sources.py).")
        bar: Any = None

        def on_total(total: int) -> None:
            nonlocal bar
            if not options["no_progress"]:
                bar = tqdm(total=total, unit="object", desc="reindex", file=sys.stderr)

        def progress(n: int) -> None:
            if bar is not None:
                bar.update(n)

        try:
            report = reindex(sources, on_total=on_total, progress=progress)
        finally:
            if bar is not None:
                bar.close()
        for where, reason in report.failures:
            self.stderr.write(f"{where}: {reason}")
        if report.embeddings is not None and report.embeddings.warning is not None:
            self.stderr.write(f"warning: {report.embeddings.warning}")
        self.stdout.write(report.summary())
        if report.failures:
            raise CommandError(f"{len(report.failures)} object(s) failed.", returncode=1)
