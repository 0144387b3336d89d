"""A deterministic synthetic corpus for the benchmarks, and a bulk loader into the app's tables.

    .venv/bin/python bench/corpus.py --chunks 10000     # into DATABASE_URL's database (migrated)

Zipf-distributed made-up words mixed with real English function words and the
keywords the query parser treats as weak ("with", "for", "in"...), ~120 words
a chunk, 10 chunks a document, fixed seed. Questions mix rare, mid-frequency
and common words the way real questions do. Rows are written with
`bulk_create` (the FTS5 index follows through its triggers; PostgreSQL's
tsvector is a generated column), then the engine's statistics are refreshed.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHUNKS_PER_DOCUMENT = 10
WORDS_PER_CHUNK = 120
VOCABULARY = 30000
SEED = 20261202

_FUNCTION_WORDS = [
    "the", "of", "and", "to", "a", "in", "is", "for", "with", "as", "on", "that", "by", "this", "from",
    "it", "or", "be", "are", "at", "an", "not", "which", "when", "while", "if", "else", "can", "will",
    "has", "have", "its", "their", "into", "than", "then",
]  # fmt: skip
_SYLLABLES = [
    c + v
    for c in ["b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st", "tr"]
    for v in ["a", "e", "i", "o", "u", "ai", "ou"]
]


class Corpus:
    """A deterministic synthetic corpus: made-up Zipf words among real function words."""

    def __init__(self, seed: int = SEED) -> None:
        self.rng = random.Random(seed)
        words: set[str] = set()
        while len(words) < VOCABULARY:
            words.add("".join(self.rng.choice(_SYLLABLES) for _ in range(self.rng.randint(2, 4))))
        self.words = sorted(words)
        self.rng.shuffle(self.words)
        # Zipf: the k-th word is drawn with weight 1/k.
        total = 0.0
        self.cum: list[float] = []
        for k in range(len(self.words)):
            total += 1.0 / (k + 1)
            self.cum.append(total)

    def _content_words(self, n: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cum, k=n)

    def chunk_text(self) -> str:
        sentences = []
        words_left = WORDS_PER_CHUNK
        while words_left > 0:
            n = self.rng.randint(8, 20)
            content = self._content_words(n)
            sentence = [
                w if self.rng.random() > 0.4 else f"{self.rng.choice(_FUNCTION_WORDS)} {w}" for w in content
            ]
            sentences.append(" ".join(sentence).capitalize() + ".")
            words_left -= n
        return " ".join(sentences)

    def title(self) -> str:
        return " ".join(self._content_words(self.rng.randint(2, 5))).capitalize()

    def question(self) -> str:
        """Two to four words of varied frequency, half the time with a weak keyword."""
        picks = []
        for _ in range(self.rng.randint(2, 4)):
            # Log-uniform over frequency ranks: as many very common as rare words.
            rank = int(math.exp(self.rng.uniform(math.log(3), math.log(len(self.words) - 1))))
            picks.append(self.words[rank])
        if self.rng.random() < 0.5:
            picks.insert(1, self.rng.choice(["with", "for", "in", "is", "and"]))
        return "How does the " + " ".join(picks) + " work?"


def questions(count: int, seed: int = SEED + 1) -> list[str]:
    """`count` questions over the corpus's vocabulary (independent of how many chunks were loaded)."""
    corpus = Corpus(seed=SEED)
    corpus.rng = random.Random(seed)
    return [corpus.question() for _ in range(count)]


def insert(corpus: Corpus, start_doc: int, chunks: int) -> None:
    """Append `chunks` chunks (in documents of CHUNKS_PER_DOCUMENT) numbered from document `start_doc`."""
    from django.db import transaction

    from answers.models import Chunk, Document

    step = 100_000  # one transaction per step keeps memory flat at a million chunks
    for first in range(0, chunks, step):
        count = min(step, chunks - first)
        doc0 = start_doc + first // CHUNKS_PER_DOCUMENT
        documents = [
            Document(key=f"bench:{i}", title=corpus.title(), url=f"/bench/{i}/", body="(generated)",
                     content_hash="bench")
            for i in range(doc0, doc0 + count // CHUNKS_PER_DOCUMENT)
        ]  # fmt: skip
        with transaction.atomic():
            documents = Document.objects.bulk_create(documents, batch_size=2000)
            batch: list[Chunk] = []
            for document in documents:
                for ordinal in range(CHUNKS_PER_DOCUMENT):
                    text = corpus.chunk_text()
                    batch.append(
                        Chunk(document=document, ordinal=ordinal, heading="", title=document.title,
                              text=text, start_offset=0, end_offset=len(text))
                    )  # fmt: skip
                if len(batch) >= 5000:
                    Chunk.objects.bulk_create(batch, batch_size=2000)
                    batch = []
            Chunk.objects.bulk_create(batch, batch_size=2000)


def analyze() -> None:
    """Refresh the engine's statistics (the PostgreSQL backend reads pg_stats)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE answers_chunk")
        else:
            cursor.execute("INSERT INTO answers_chunk_fts(answers_chunk_fts) VALUES('optimize')")
            cursor.execute("ANALYZE")


def demo_database() -> str:
    """Django set up (lexical retrieval only) on the database of DATABASE_URL, migrated, with the demo
    corpus loaded and the engine's statistics fresh; its vendor. The `answers` imported is the first
    on sys.path (a benchmark may put another tree's first)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
    os.environ["ANSWERS_EMBEDDINGS"] = "none"
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from answers.content.demo import load_demo_corpus

    call_command("migrate", verbosity=0, skip_checks=True)
    load_demo_corpus()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE answers_chunk")
    return str(connection.vendor)


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
    import django

    django.setup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, required=True, help="How many chunks to add.")
    parser.add_argument("--start-doc", type=int, default=0, help="First document number (bench:N keys).")
    args = parser.parse_args()
    setup_django()
    started = time.perf_counter()
    insert(Corpus(), args.start_doc, args.chunks)
    analyze()
    print(f"loaded {args.chunks:,} chunks in {time.perf_counter() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
