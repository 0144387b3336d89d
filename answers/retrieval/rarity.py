"""The rarity table for an asker: how many of the chunks they may read hold each term of a question.

A term's weight in a question (query.term_weights, query.rare_names) is its rarity among the
chunks the asker may read, and a term none of them holds is absent (query.absent_weight), whatever
the documents closed to them hold. Over every chunk, a word only staff documents use weighs as any
rare word the corpus uses (2.0) for an anonymous asker, where a word no document uses weighs the
most (7.2 over the demo corpus): "What is zorblax payroll?" was answered from a public page on
payroll while "What is quibbleflux payroll?" was declined, which told the asker that the closed
documents say "zorblax" (issue 44). Over what the asker may read, the two are declined alike.

The engine counts over its whole index (SearchResult.doc_counts and total, answers.retrieval.backends);
this module makes of that the counts over the chunks the asker may read (all but those of the
documents closed to them, answers.retrieval.access.closed_documents), each only as exact as the
term's weight needs (readable_table): a term more chunks hold than are closed is held by a readable
one, and one weighing RARITY_CAP weighs that for any count; only a term that closed chunks alone
may hold is looked for among the readable ones (one is enough), and only a common one of those is
counted. When nothing is closed to the asker (staff, or a site whose documents are all public), the
engine's table is theirs unchanged, at the cost of one indexed query; when little is, mostly so.

Cached per process, per version of the corpus (corpus_version: an ingest, an edit, an access change
or a deletion moves it) and per access level (the Reader: signed in, staff, groups; one entry per
distinct one): the closed documents, their chunks and, per term, its count.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from answers.models import Chunk, Document
from answers.retrieval.access import Reader, closed_documents
from answers.retrieval.backends import PostgresFullTextBackend, SearchResult, SqliteFts5Backend
from answers.retrieval.query import RARITY_CAP, fts5_quote, rarity

# Bounds on what one process keeps: levels (distinct (signed in, staff, groups)), terms per level.
MAX_LEVELS = 64
MAX_TERMS_PER_LEVEL = 50_000
_BATCH = 500  # document ids per query reading their chunks


@dataclass(frozen=True)
class RarityTable:
    """Chunks holding each term and chunks in all, over what one asker may read: the arguments of
    query.term_weights and query.rare_names. A count is that of the chunks holding the term where it
    changes the term's weight, else one that weighs the same (readable_table)."""

    doc_counts: dict[str, int]
    total: int


def readable_count(count: int, counted: int, *, cap: int, share: float) -> int:
    """The readable chunks holding a common term, from the engine's count over every chunk (`count`)
    and the readable chunks holding it, counted up to `cap` (`counted`): exact below it; past it the
    term is common to the asker too, as common as the engine's figure (SQLite's stops at the cap,
    PostgreSQL's is an estimate) scaled to the readable share of the chunks (`share`) says."""
    if counted < cap:
        return counted
    return max(cap, round(count * share))


def readable_table(
    everyone: RarityTable,
    closed_chunks: int,
    *,
    cap: int,
    count: Callable[[list[str], int], dict[str, int]],
) -> RarityTable:
    """The table over what an asker may read, from the engine's over every chunk (`everyone`: its
    counts exact below `cap`) and the number of chunks closed to them (C); `count(terms, limit)`
    counts the readable chunks holding each term, up to `limit`.

    Each count is exact where it changes the term's weight, and only there:
    - a term no chunk holds needs nothing;
    - a term more chunks hold than are closed (exactly counted: below `cap`) is held by a readable
      one; any other is looked for in one readable chunk (`limit` 1), and without one it is absent;
    - a term rare enough over every chunk that its weight is RARITY_CAP's (query.capped_rarity)
      weighs that for any count from one to the engine's: the engine's stands;
    - a common term held by n > C chunks is held by n - C to n readable ones: the engine's count
      scaled to the readable share of the chunks, within those bounds; held by fewer, all of them
      may be closed: it is counted, up to `cap` (readable_count).
    """
    closed = closed_chunks
    total = max(0, everyone.total - closed)
    share = total / everyone.total if everyone.total else 1.0
    held = {t: n for t, n in everyone.doc_counts.items() if n > 0}
    found = count([t for t, n in held.items() if not closed < n < cap], 1)
    held = {t: n for t, n in held.items() if found.get(t, 1)}
    common = {t: n for t, n in held.items() if rarity(n, total) < RARITY_CAP}
    counted = count([t for t, n in common.items() if n <= closed], cap)
    readable = {**dict.fromkeys(everyone.doc_counts, 0), **held}
    for t, n in common.items():
        scaled = min(n, max(n - closed, round(n * share)))
        readable[t] = readable_count(n, counted[t], cap=cap, share=share) if t in counted else scaled
    return RarityTable(readable, total)


@dataclass
class _Level:
    """What one access level may not read, in one version, and the terms counted for it so far."""

    documents: list[int]  # closed to the level
    closed_chunks: int  # theirs
    chunks: frozenset[int] = frozenset()  # their ids, where the engine looks them up here (SQLite)
    array: str = ""  # the documents as a PostgreSQL array literal, written once (not per statement)
    counted: dict[tuple[str, int], int] = field(default_factory=dict)  # (term, limit) -> readable chunks


class _Sqlite:
    """FTS5 holds no document id: a term's matches (rowids: chunk ids) are read in order and looked
    up in the level's closed chunks here, until `limit` readable ones are found. A set of thousands
    of ids built in SQL for each term costs ten times what reading a doclist does."""

    cap_of = SqliteFts5Backend

    @staticmethod
    def level(documents: list[int]) -> _Level:
        chunks = frozenset(i for batch in _chunks(documents) for i in batch.values_list("id", flat=True))
        return _Level(documents, len(chunks), chunks=chunks)

    def counts(self, terms: list[str], level: _Level, limit: int) -> dict[str, int]:
        return {term: self._count(term, level, limit) for term in terms}

    @staticmethod
    def _count(term: str, level: _Level, limit: int) -> int:
        found = 0
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT rowid FROM answers_chunk_fts WHERE answers_chunk_fts MATCH %s", [fts5_quote(term)]
            )
            batch = 8  # a rare term's first match is mostly readable: read a few, then more
            while found < limit and (rows := cursor.fetchmany(batch)):
                found += sum(chunk not in level.chunks for (chunk,) in rows)
                batch = min(batch * 4, 2048)
        return min(found, limit)


class _Postgres:
    """The chunk rows hold their document: the GIN index finds the matches, the filter reads them.
    Every term in one statement; the closed ids pass through a sub-select, so that the planner
    estimates no selectivity per id (milliseconds for a thousand of them, each time)."""

    cap_of = PostgresFullTextBackend
    _ONE = (
        "(SELECT count(*) FROM (SELECT 1 FROM answers_chunk, closed WHERE NOT (document_id = ANY(closed.ids))"
        " AND search @@ plainto_tsquery('answers_english'::regconfig, %s) LIMIT %s) AS m)"
    )

    @staticmethod
    def level(documents: list[int]) -> _Level:
        closed = sum(batch.count() for batch in _chunks(documents))
        return _Level(documents, closed, array="{" + ",".join(map(str, documents)) + "}")

    def counts(self, terms: list[str], level: _Level, limit: int) -> dict[str, int]:
        if not terms:
            return {}
        params: list[Any] = [level.array]
        for term in terms:
            params += [term, limit]
        with connection.cursor() as cursor:
            cursor.execute(
                "WITH closed AS (SELECT ARRAY(SELECT unnest(%s::bigint[])) AS ids) SELECT "
                + ", ".join([self._ONE] * len(terms)),
                params,
            )  # only constant SQL fragments are joined
            row = cursor.fetchone()
        return dict(zip(terms, (int(n) for n in row), strict=True))


_Engine = _Sqlite | _Postgres


def _engine() -> _Engine | None:
    if connection.vendor == "sqlite":
        return _Sqlite()
    if connection.vendor == "postgresql":
        return _Postgres()
    return None


def corpus_version(total: int) -> tuple[object, ...]:
    """What moves when what is closed to someone, or what they may read, changes: the newest edit of a
    document (an access change or an edit saves it), the newest chunk (an ingest or a changed text
    adds chunks) and the engine's chunk count `total` (a deletion; on a large PostgreSQL table an
    estimate, which follows a deletion at its next ANALYZE); with the database, for a process
    serving several. One query on two indexes."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT max(updated_at) FROM {Document._meta.db_table}),"  # noqa: S608
            f" (SELECT max(id) FROM {Chunk._meta.db_table})"
        )  # table names from the models only
        row = cursor.fetchone()
    return (connection.alias, connection.settings_dict["NAME"], total, *row)


def _chunks(documents: list[int]) -> Iterator[QuerySet[Chunk]]:
    """The documents' chunks, a few hundred documents a query (inside every engine's parameter limit)."""
    for start in range(0, len(documents), _BATCH):
        yield Chunk.objects.filter(document_id__in=documents[start : start + _BATCH])


class _Levels:
    """The levels of one version at a time, each with its closed documents and counts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: tuple[object, ...] = ()
        self._levels: dict[Reader, _Level] = {}

    def level(self, reader: Reader, total: int, engine: _Engine) -> tuple[tuple[object, ...], _Level]:
        """The version (`total`: the engine's chunk count) and what `reader`'s level may not read in it."""
        version = corpus_version(total)
        with self._lock:
            if version != self._version:
                self._version, self._levels = version, {}
            level = self._levels.get(reader)
        if level is None:
            documents = closed_documents(reader)
            level = engine.level(documents) if documents else _Level([], 0)
            with self._lock:
                if version == self._version:
                    if len(self._levels) >= MAX_LEVELS:
                        self._levels.clear()
                    level = self._levels.setdefault(reader, level)
        return version, level

    def counted(
        self,
        version: tuple[object, ...],
        level: _Level,
        terms: list[str],
        limit: int,
        count: Callable[[list[str]], dict[str, int]],
    ) -> dict[str, int]:
        """The level's counts of the terms up to `limit`, the missing ones counted and kept."""
        with self._lock:
            known = {t: level.counted[t, limit] for t in terms if (t, limit) in level.counted}
        found = count([t for t in terms if t not in known])
        if found:
            with self._lock:
                if version == self._version:
                    if len(level.counted) >= MAX_TERMS_PER_LEVEL:
                        level.counted.clear()
                    level.counted.update(((t, limit), n) for t, n in found.items())
        return {**known, **found}


_levels = _Levels()


def rarity_table(reader: Reader, found: SearchResult) -> RarityTable:
    """The rarity table for this asker: the engine's (`found`, over every chunk) less what is closed
    to them (module docstring). Staff, and an asker to whom nothing is closed, get the engine's."""
    everyone = RarityTable(found.doc_counts, found.total)
    engine = _engine()
    if reader.staff or engine is None:
        return everyone
    version, level = _levels.level(reader, found.total, engine)
    if not level.closed_chunks:  # closed documents without chunks close nothing
        return everyone
    cap = engine.cap_of.common_term_docs  # read when used, as the backend reads it

    def count(terms: list[str], limit: int) -> dict[str, int]:
        return _levels.counted(
            version, level, terms, limit, lambda missing: engine.counts(missing, level, limit)
        )

    return readable_table(everyone, level.closed_chunks, cap=cap, count=count)
