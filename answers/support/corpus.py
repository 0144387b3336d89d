"""The corpus statistics the lexical support score weighs words by: chunks per word, from the search index.

The full-text index already knows how many chunks hold a word: SQLite FTS5
counts matches in the index (the retrieval backend's own `doc_counts`), and on
PostgreSQL the same is counted on the GIN-indexed tsvector. Both apply the
index's stemming, so "statements" is counted as "statement" is. Counts are
capped (at CAP): past a few thousand chunks a word is common, and counting
further costs time for no change that matters to a weight.

Counts are kept per process until the corpus changes (its chunk count, newest
chunk id or latest document edit moves: an ingest adds chunks, an edit replaces
them): consecutive answers share most of their words, and a look-up then costs
two aggregate queries.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from django.db import connection
from django.db.models import Count, Max

from answers.models import Chunk, Document
from answers.retrieval.backends import SqliteFts5Backend
from answers.support.lexical import Idf

CAP = SqliteFts5Backend.common_term_docs
_BATCH = 100  # words per statement: well inside every engine's limits on parameters


def _postgres_counts(words: list[str]) -> dict[str, int]:
    one = (
        "(SELECT count(*) FROM (SELECT 1 FROM answers_chunk"
        " WHERE search @@ plainto_tsquery('answers_english'::regconfig, %s) LIMIT %s) AS m)"
    )
    params: list[str | int] = []
    for word in words:
        params += [word, CAP]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join([one] * len(words)), params)
        row = cursor.fetchone()
    return dict(zip(words, (int(n) for n in row), strict=True))


def doc_counts(words: Iterable[str]) -> dict[str, int]:
    """How many chunks hold each word (up to CAP); empty on a database without a search index."""
    distinct = list(dict.fromkeys(words))
    count: Callable[[list[str]], dict[str, int]]
    if connection.vendor == "sqlite":
        count = SqliteFts5Backend().doc_counts
    elif connection.vendor == "postgresql":
        count = _postgres_counts
    else:
        return {}
    counts: dict[str, int] = {}
    for i in range(0, len(distinct), _BATCH):
        counts.update(count(distinct[i : i + _BATCH]))
    return counts


class _Counts:
    """Chunk counts per word for one version of the corpus (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: tuple[object, ...] = ()
        self._counts: dict[str, int] = {}

    def get(self, version: tuple[object, ...], words: list[str]) -> dict[str, int]:
        with self._lock:
            if version != self._version:
                self._version, self._counts = version, {}
            known = {w: self._counts[w] for w in words if w in self._counts}
        missing = [w for w in words if w not in known]
        if missing:
            found = doc_counts(missing)
            with self._lock:
                if version == self._version:
                    self._counts.update(found)
            known.update(found)
        return known


_counts = _Counts()


def corpus_idf(words: Iterable[str]) -> Idf:
    """The weights of `words` in the site's corpus (uniform when there is no corpus or index)."""
    distinct = list(dict.fromkeys(words))
    corpus = Chunk.objects.aggregate(documents=Count("id"), newest=Max("id"))
    documents = int(corpus["documents"])
    if not documents or not distinct or connection.vendor not in ("sqlite", "postgresql"):
        return Idf()
    # Chunk ids alone could come back (a rolled-back transaction resets SQLite's sequence);
    # the newest document edit cannot.
    edited = Document.objects.aggregate(edited=Max("updated_at"))["edited"]
    version = (connection.alias, connection.settings_dict["NAME"], documents, corpus["newest"], edited)
    return Idf(documents=documents, counts=_counts.get(version, distinct))
