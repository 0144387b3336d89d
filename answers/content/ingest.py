"""The ingest flow shared by `manage.py ingest` and the demo corpus: read, validate, store, report."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from answers.content.readers import PARSERS, SUFFIXES, Problem, Record, UnreadableSource, feed_fields
from answers.content.storage import document_store
from answers.content.validation import InvalidDocument, clean_document
from answers.retrieval.embeddings import BATCH_DEADLINE, EmbedOutcome, embed_missing


@dataclass
class IngestReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped_files: int = 0
    failures: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    document_ids: list[int] = field(default_factory=list)  # every document stored or found unchanged
    embeddings: EmbedOutcome | None = None  # set by embed_ingested

    @property
    def failed(self) -> int:
        return len(self.failures)

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        counts = (("created", self.created), ("updated", self.updated), ("unchanged", self.unchanged))
        return ", ".join(f"{name} {n}" for name, n in (*counts, ("failed", self.failed)))


def collect_files(paths: Iterable[str | Path], report: IngestReport) -> list[Path]:
    """The files to read: named files as given, folders recursively (unknown suffixes skipped)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                if child.suffix.lower() in PARSERS:
                    files.append(child)
                else:
                    report.skipped_files += 1
        elif path.is_file():
            if path.suffix.lower() in PARSERS:
                files.append(path)
            else:
                report.failures.append(
                    Problem(str(path), f"unsupported file type (use {', '.join(SUFFIXES)})")
                )
        else:
            report.failures.append(Problem(str(path), "no such file or folder"))
    return files


def ingest_record(record: Record, report: IngestReport, access: object = None) -> None:
    """Store one record, counting it in the report; a bad record is reported, never raised.

    `access` (`ingest --access`) applies to records that set none of their own.
    """
    try:
        raw = record.fields
        if "item" in raw:
            if isinstance(raw["item"], InvalidDocument):
                raise raw["item"]
            raw = feed_fields(raw["item"])
        if access is not None and raw.get("access") is None:
            raw = {**raw, "access": access}
        clean = clean_document(**raw)
        document, created, changed = document_store(clean=clean)
    except InvalidDocument as exc:
        report.failures.append(Problem(record.where, str(exc)))
        return
    report.document_ids.append(document.pk)
    for name, message in clean.warnings.items():
        report.warnings.append(Problem(record.where, f"{name}: {message}"))
    if created:
        report.created += 1
    elif changed:
        report.updated += 1
    else:
        report.unchanged += 1


def ingest_records(
    records: Iterable[Record], report: IngestReport | None = None, access: object = None
) -> IngestReport:
    report = report or IngestReport()
    for record in records:
        ingest_record(record, report, access)
    return report


def embed_ingested(
    report: IngestReport,
    *,
    deadline: float = BATCH_DEADLINE,
    on_total: Callable[[int], object] | None = None,
    progress: Callable[[int], object] | None = None,
) -> EmbedOutcome:
    """After ingesting: vectors for the run's documents' chunks that have none (ANSWERS_EMBEDDINGS on).

    Unchanged documents count too, so ingesting again fills in what an unreachable
    server left out. A failure is reported in the outcome, never raised: the documents stay.
    """
    report.embeddings = embed_missing(
        report.document_ids, deadline=deadline, on_total=on_total, progress=progress
    )
    return report.embeddings


def ingest_paths(
    paths: Iterable[str | Path],
    *,
    on_file: Callable[[Path], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    access: object = None,
) -> IngestReport:
    """Ingest files and folders; failures are collected with path:line and reason, the rest goes in."""
    report = IngestReport()
    files = collect_files(paths, report)
    if on_total:
        on_total(len(files))
    for path in files:
        try:
            records = PARSERS[path.suffix.lower()](path)
        except UnreadableSource as exc:
            where = f"{path}:{exc.line}" if exc.line else str(path)
            report.failures.append(Problem(where, exc.reason))
        else:
            ingest_records(records, report, access)
        if on_file:
            on_file(path)
    return report
