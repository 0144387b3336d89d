"""`manage.py embed [--all]`: store vectors for chunks that lack one from the configured model."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from answers.conf import conf
from answers.retrieval.dense import PgvectorMissing
from answers.retrieval.embeddings import (
    BATCH_DEADLINE,
    BATCH_SIZE,
    EmbeddingsUnavailable,
    embed_chunks,
    stale_chunk_ids,
)


class Command(BaseCommand):
    help = (
        "Embed the chunks that have no vector from ANSWERS_EMBEDDING_MODEL (new, changed, or embedded by "
        "another model); with --all, every chunk."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--all", action="store_true", help="Re-embed every chunk.")
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="Texts per request.")
        parser.add_argument(
            "--deadline",
            type=float,
            default=BATCH_DEADLINE,
            help="Seconds one batch may take, retries included, before embed gives up.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if conf.EMBEDDINGS == "none":
            raise CommandError("ANSWERS_EMBEDDINGS is 'none': retrieval is lexical, nothing to embed.")
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        ids = stale_chunk_ids(everything=options["all"])
        model = conf.EMBEDDING_MODEL
        if not ids:
            self.stdout.write(f"Every chunk has a vector from {model}.")
            return
        stored = 0
        with tqdm(total=len(ids), unit="chunk", desc=f"embed ({model})", disable=None) as bar:
            try:
                stored = embed_chunks(
                    ids, batch_size=options["batch_size"], deadline=options["deadline"], progress=bar.update
                )
            except (EmbeddingsUnavailable, PgvectorMissing) as exc:
                done = bar.n
                raise CommandError(f"{exc} ({done} of {len(ids)} chunks embedded; run embed again)") from None
        self.stdout.write(f"Embedded {stored} chunks with {model}.")
