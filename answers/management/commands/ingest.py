"""`manage.py ingest PATH...` / `ingest --demo [--if-empty]`: load content; exit 1 if anything failed."""

from __future__ import annotations

import sys
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from answers.conf import conf
from answers.content.demo import demo_records
from answers.content.ingest import IngestReport, embed_ingested, ingest_paths, ingest_records
from answers.content.validation import InvalidDocument, parse_access
from answers.models import Document
from answers.retrieval.embeddings import BATCH_DEADLINE


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
        parser.add_argument(
            "--access",
            default=None,
            help='Who may read the documents read from PATHs: "public" (default), "signed-in", "staff", '
            "or group names separated by commas (members of any; staff always). A feed record's own "
            '"access" field wins.',
        )
        parser.add_argument(
            "--embed-deadline",
            type=float,
            default=BATCH_DEADLINE,
            help="With ANSWERS_EMBEDDINGS on: seconds one batch of vectors may take, retries included, "
            "before ingest gives up on them (the documents stay; `embed` adds the vectors later).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        paths: list[str] = options["paths"]
        if not paths and not options["demo"]:
            raise CommandError("Give one or more paths, or --demo.")
        access = None
        if options["access"] is not None:
            try:
                access = parse_access(options["access"], command_line=True).value
            except InvalidDocument as exc:
                raise CommandError(f"--access {exc.message}") from exc
        report = IngestReport()
        if options["demo"]:
            if options["if_empty"] and Document.objects.exists():
                self.stdout.write("Documents exist already: demo corpus not loaded.")
            else:
                ingest_records(demo_records(), report)
        if paths:
            report = self._ingest_paths(paths, report, access)
        for problem in report.warnings:
            self.stderr.write(f"warning: {problem.where}: {problem.reason}")
        for problem in report.failures:
            self.stderr.write(f"{problem.where}: {problem.reason}")
        self.stdout.write(report.summary())
        self._embed(report, deadline=options["embed_deadline"])
        if not report.ok:
            raise CommandError(f"{report.failed} item(s) failed.", returncode=1)

    def _watched(self) -> bool:
        """A progress bar only when a person watches; logs and pipes get the counts only."""
        return bool(getattr(self.stdout, "isatty", lambda: False)()) and sys.stderr.isatty()

    def _embed(self, report: IngestReport, *, deadline: float) -> None:
        """Vectors for the new and changed chunks (ANSWERS_EMBEDDINGS on); a failure only warns."""
        show = self._watched()
        bar: Any = None

        def on_total(total: int) -> None:
            nonlocal bar
            if show:
                bar = tqdm(total=total, unit="chunk", desc=f"embed ({conf.EMBEDDING_MODEL})", file=sys.stderr)

        def progress(n: int) -> None:
            if bar is not None:
                bar.update(n)

        try:
            outcome = embed_ingested(report, deadline=deadline, on_total=on_total, progress=progress)
        finally:
            if bar is not None:
                bar.close()
        if outcome.warning is not None:
            self.stderr.write(f"warning: {outcome.warning}")
        elif outcome.stored:
            self.stdout.write(f"Embedded {outcome.stored} chunks with {conf.EMBEDDING_MODEL}.")

    def _ingest_paths(
        self, paths: list[str], before: IngestReport, access: str | list[str] | None
    ) -> IngestReport:
        show = self._watched()
        bar: Any = None

        def on_total(total: int) -> None:
            nonlocal bar
            if show and total > 1:
                bar = tqdm(total=total, unit="file", file=sys.stderr)

        def on_file(path: Path) -> None:
            if bar is not None:
                bar.update(1)

        try:
            report = ingest_paths(paths, on_file=on_file, on_total=on_total, access=access)
        finally:
            if bar is not None:
                bar.close()
        before.created += report.created
        before.updated += report.updated
        before.unchanged += report.unchanged
        before.skipped_files += report.skipped_files
        before.failures.extend(report.failures)
        before.warnings.extend(report.warnings)
        before.document_ids.extend(report.document_ids)
        return before
