"""The rarity table for an asker: how many of the chunks they may read hold each term of a question.

A term's weight in a question (query.term_weights, query.rare_names) is its rarity among the
chunks the asker may read, and a term none of them holds is absent (query.absent_weight), whatever
the documents closed to them hold. Over every chunk, a word only staff documents use weighs as any
rare word the corpus uses (2.0) for an anonymous asker, where a word no document uses weighs the
most (7.2 over the demo corpus): "What is zorblax payroll?" was answered from a public page on
payroll while "What is quibbleflux payroll?" was declined, which told the asker that the closed
documents say "zorblax" (issue 44). Over what the asker may read, the two are declined alike.

The engine counts over its whole index (SearchResult.doc_counts and total, answers.retrieval.backends);
this module subtracts what the asker may not read: the chunks of the documents closed to them
(answers.retrieval.access.closed_documents) and, per term, those of them holding it (readable_count
says when the subtraction is exact and when the readable chunks are counted instead). A site closes
a small share of its documents, and counting in that share is cheap; when nothing is closed to the
asker (staff, or a site whose documents are all public), the engine's table is theirs unchanged.

Cached per process, per corpus version (documents, their newest edit and the newest chunk: an
ingest, an edit, an access change and a deletion each move it, as answers.support.corpus's) and per
access level (the Reader: signed in, staff, groups: one entry per distinct set of readable
documents' rules): the closed documents, their chunk count and, per term, the closed chunks holding it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from answers.models import Chunk, Document
from answers.retrieval.access import Reader, closed_documents
from answers.retrieval.backends import PostgresFullTextBackend, SearchResult, SqliteFts5Backend
from answers.retrieval.query import fts5_quote

# Bounds on what one process keeps (a level is a distinct (signed in, staff, groups); words per level).
MAX_LEVELS = 256
MAX_TERMS_PER_LEVEL = 50_000


@dataclass(frozen=True)
class RarityTable:
    """Chunks holding each term (as the engine counts them, up to its cap) and chunks in all, over
    what one asker may read: the arguments of query.term_weights and query.rare_names."""

    doc_counts: dict[str, int]
    total: int


def readable_count(count: int, closed: int, *, cap: int) -> int | None:
    """The chunks the asker may read that hold a term, or None when the figures cannot tell.

    `count`: the engine's count over every chunk, exact below `cap` (the backend's
    common_term_docs: both engines count exactly below it, and past it SQLite stops at it and
    PostgreSQL estimates); `closed`: the closed chunks holding the term, counted up to `cap`.
    Below the cap the difference is exact. Past it, when fewer than `cap` closed chunks hold the
    term and `cap` chunks or more are left, the term is as common to the asker as the engine's
    figure, less the closed ones, says. Otherwise (a common term
    most of whose chunks are closed) None: its readable chunks are counted directly.
    """
    if count < cap:
        return max(0, count - closed)
    if closed < cap and count - closed >= cap:
        return count - closed
    return None


class _Engine:
    """The counting statements of one database vendor, over the chunks of a list of documents."""

    backend: type[SqliteFts5Backend] | type[PostgresFullTextBackend]

    @property
    def cap(self) -> int:
        """Where the engine's own counts stop being exact (read when used, as the backend reads it)."""
        return self.backend.common_term_docs

    def chunks_of(self, documents: list[int]) -> int:
        raise NotImplementedError

    def counts(self, terms: list[str], documents: list[int], *, among: bool) -> dict[str, int]:
        """Chunks holding each term, up to `cap`: among the documents' chunks, or (`among` false)
        among every other chunk."""
        raise NotImplementedError


class _Sqlite(_Engine):
    backend = SqliteFts5Backend
    # The documents' chunks as FTS5 rowids (the index holds no document id), listed once per statement.
    _CLOSED = (
        "WITH closed(id) AS (SELECT id FROM answers_chunk"
        " WHERE document_id IN (SELECT value FROM json_each(%s)))"
    )
    _ONE = (
        "(SELECT count(*) FROM (SELECT 1 FROM answers_chunk_fts WHERE answers_chunk_fts MATCH %s"
        " AND rowid {among} closed LIMIT %s))"
    )

    def chunks_of(self, documents: list[int]) -> int:
        with connection.cursor() as cursor:
            cursor.execute(self._CLOSED + " SELECT count(*) FROM closed", [_json(documents)])  # noqa: S608 - constant SQL
            return int(cursor.fetchone()[0])

    def counts(self, terms: list[str], documents: list[int], *, among: bool) -> dict[str, int]:
        one = self._ONE.format(among="IN" if among else "NOT IN")
        params: list[str | int] = [_json(documents)]
        for term in terms:
            params += [fts5_quote(term), self.cap]
        return _one_row(terms, self._CLOSED + " SELECT " + ", ".join([one] * len(terms)), params)


class _Postgres(_Engine):
    backend = PostgresFullTextBackend
    _ONE = (
        "(SELECT count(*) FROM (SELECT 1 FROM answers_chunk WHERE {among}(document_id = ANY(%s))"
        " AND search @@ plainto_tsquery('answers_english'::regconfig, %s) LIMIT %s) AS m)"
    )

    def chunks_of(self, documents: list[int]) -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM answers_chunk WHERE document_id = ANY(%s)", [documents])
            return int(cursor.fetchone()[0])

    def counts(self, terms: list[str], documents: list[int], *, among: bool) -> dict[str, int]:
        one = self._ONE.format(among="" if among else "NOT ")
        params: list[object] = []
        for term in terms:
            params += [documents, term, self.cap]
        return _one_row(terms, "SELECT " + ", ".join([one] * len(terms)), params)


def _one_row(terms: list[str], sql: str, params: list[Any]) -> dict[str, int]:
    """The counts of a statement returning one count per term, in the terms' order; `sql` is joined
    from constant fragments only (the terms and ids are bound parameters)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return dict(zip(terms, (int(n) for n in row), strict=True))


def _json(ids: list[int]) -> str:
    return "[" + ",".join(str(int(i)) for i in ids) + "]"


def _engine() -> _Engine | None:
    return {"sqlite": _Sqlite, "postgresql": _Postgres}.get(connection.vendor, lambda: None)()


@dataclass
class _Level:
    """What one access level may not read, in one version of the corpus, and its counts so far."""

    closed: list[int]  # document ids
    closed_chunks: int
    among_closed: dict[str, int] = field(default_factory=dict)  # term -> closed chunks holding it
    readable: dict[str, int] = field(default_factory=dict)  # term -> readable chunks, counted directly


def corpus_version() -> tuple[object, ...]:
    """What moves when the corpus or its access changes: documents, their newest edit (an access
    change saves the document), the newest chunk; with the database, for a process serving several."""
    documents, chunks = Document._meta.db_table, Chunk._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*), max(updated_at), (SELECT max(id) FROM {chunks}) FROM {documents}"  # noqa: S608
        )  # table names from the models only
        row = cursor.fetchone()
    return (connection.alias, connection.settings_dict["NAME"], *row)


class _Levels:
    """The closed documents and counts per access level, for one version of the corpus at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: tuple[object, ...] = ()
        self._levels: dict[Reader, _Level] = {}

    def level(self, reader: Reader, engine: _Engine) -> tuple[tuple[object, ...], _Level]:
        """The corpus's version and what `reader`'s level may not read in it."""
        version = corpus_version()
        with self._lock:
            if version != self._version:
                self._version, self._levels = version, {}
            level = self._levels.get(reader)
        if level is None:
            closed = closed_documents(reader)
            level = _Level(closed, engine.chunks_of(closed) if closed else 0)
            with self._lock:
                if version == self._version:
                    if len(self._levels) >= MAX_LEVELS:
                        self._levels.clear()
                    level = self._levels.setdefault(reader, level)
        return version, level

    def counts(
        self,
        version: tuple[object, ...],
        store: dict[str, int],
        terms: list[str],
        count: Callable[[list[str]], dict[str, int]],
    ) -> dict[str, int]:
        """The terms' counts from a level's `store`, the missing ones counted (`count`) and kept."""
        with self._lock:
            known = {t: store[t] for t in terms if t in store}
        missing = [t for t in terms if t not in known]
        if missing:
            found = count(missing)
            with self._lock:
                if version == self._version:
                    if len(store) >= MAX_TERMS_PER_LEVEL:
                        store.clear()
                    store.update(found)
            known.update(found)
        return known


_levels = _Levels()


def without_closed(
    everyone: RarityTable,
    closed: dict[str, int],
    closed_chunks: int,
    *,
    cap: int,
    count_readable: Callable[[list[str]], dict[str, int]],
) -> RarityTable:
    """The table over what an asker may read, from the engine's over every chunk (`everyone`), the
    closed chunks holding each term (`closed`, up to `cap`) and how many chunks are closed;
    `count_readable` counts the terms readable_count cannot tell (and only those)."""
    counts = {t: readable_count(n, closed[t], cap=cap) for t, n in everyone.doc_counts.items()}
    direct = count_readable([t for t, n in counts.items() if n is None])
    readable = {t: direct[t] if n is None else n for t, n in counts.items()}
    return RarityTable(readable, max(0, everyone.total - closed_chunks))


def rarity_table(reader: Reader, found: SearchResult) -> RarityTable:
    """The rarity table for this asker: the engine's (`found`, over every chunk) less the chunks
    closed to them (module docstring). Staff, and an asker to whom nothing is closed, get the
    engine's unchanged."""
    everyone = RarityTable(found.doc_counts, found.total)
    engine = _engine()
    if reader.staff or engine is None:
        return everyone
    version, level = _levels.level(reader, engine)
    if not level.closed:
        return everyone

    def count(store: dict[str, int], *, among: bool) -> Callable[[list[str]], dict[str, int]]:
        """The level's counts of terms, from its `store` or counted among (or outside) its closed chunks."""
        return lambda terms: _levels.counts(
            version, store, terms, lambda missing: engine.counts(missing, level.closed, among=among)
        )

    closed = count(level.among_closed, among=True)(list(found.doc_counts))
    return without_closed(
        everyone,
        closed,
        level.closed_chunks,
        cap=engine.cap,
        count_readable=count(level.readable, among=False),
    )
