"""`manage.py ingest PATH...` / `ingest --demo [--if-empty]`: load content; exit 1 if anything failed."""

from __future__ import annotations

import sys
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from answers.content.demo import demo_records
from answers.content.ingest import IngestReport, ingest_paths, ingest_records
from answers.models import Document


class Command(BaseCommand):
    help = (
        "Ingest .md, .txt, .html files and .json/.jsonl feeds (folders recurse), or the demo corpus. "
        "Re-ingesting a key updates it in place."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("paths", nargs="*", help="Files or folders.")
        parser.add_argument(
            "--demo", action="store_true", help="Load the demo corpus (Python reference topics)."
        )
        parser.add_argument(
            "--if-empty", action="store_true", help="With --demo: only when no document exists yet."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        paths: list[str] = options["paths"]
        if not paths and not options["demo"]:
            raise CommandError("Give one or more paths, or --demo.")
        report = IngestReport()
        if options["demo"]:
            if options["if_empty"] and Document.objects.exists():
                self.stdout.write("Documents exist already: demo corpus not loaded.")
            else:
                ingest_records(demo_records(), report)
        if paths:
            report = self._ingest_paths(paths, report)
        for problem in report.warnings:
            self.stderr.write(f"warning: {problem.where}: {problem.reason}")
        for problem in report.failures:
            self.stderr.write(f"{problem.where}: {problem.reason}")
        self.stdout.write(report.summary())
        if not report.ok:
            raise CommandError(f"{report.failed} item(s) failed.", returncode=1)

    def _ingest_paths(self, paths: list[str], before: IngestReport) -> IngestReport:
        # A progress bar only when a person watches; logs and pipes get the counts only.
        show = bool(getattr(self.stdout, "isatty", lambda: False)()) and sys.stderr.isatty()
        bar: Any = None

        def on_total(total: int) -> None:
            nonlocal bar
            if show and total > 1:
                bar = tqdm(total=total, unit="file", file=sys.stderr)

        def on_file(path: Path) -> None:
            if bar is not None:
                bar.update(1)

        try:
            report = ingest_paths(paths, on_file=on_file, on_total=on_total)
        finally:
            if bar is not None:
                bar.close()
        before.created += report.created
        before.updated += report.updated
        before.unchanged += report.unchanged
        before.skipped_files += report.skipped_files
        before.failures.extend(report.failures)
        before.warnings.extend(report.warnings)
        return before
