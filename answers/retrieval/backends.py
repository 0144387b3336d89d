"""The search backends: SQLite FTS5 and PostgreSQL full-text search, picked by the database vendor.

Both index a chunk's document title, heading and text (created by migration
0002_search_index) and return the best candidates with the engine's own score
(higher is better). User text reaches them only as bound parameters, one
quoted term at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from answers.retrieval.query import MatchPlan, capped_rarity, fts5_match, fts5_quote, plan_match


@dataclass(frozen=True)
class Candidate:
    """One chunk the engine matched, with its raw engine score (higher is better)."""

    chunk_id: int
    document_id: int
    ordinal: int
    title: str
    url: str
    heading: str
    text: str
    raw_score: float


@dataclass(frozen=True)
class SearchResult:
    """The candidates, the match plan, and the corpus statistics the reranker weighs terms by.

    `doc_counts`: chunks holding each term (through the engine's own stemming), counted up to
    the backend's `rarity_cap`: a term in more chunks weighs as one in that many would (it is
    common either way, and counting further costs time). `total`: chunks in the corpus.
    """

    candidates: list[Candidate]
    plan: MatchPlan
    doc_counts: dict[str, int] = field(default_factory=dict)
    total: int = 0


class SearchBackend(Protocol):
    name: str

    def search(
        self, terms: list[str], *, limit: int, subjects: frozenset[str] = frozenset()
    ) -> SearchResult: ...


class NoSearchBackend(LookupError):
    """The database has no full-text index this app knows how to use."""


_COLUMNS = "c.id, c.document_id, c.ordinal, d.title, d.url, c.heading, c.text"


def _candidates(rows: list[tuple[int, int, int, str, str, str, str, float]]) -> list[Candidate]:
    return [Candidate(*row[:7], raw_score=float(row[7])) for row in rows]


class SqliteFts5Backend:
    """FTS5 external-content table; `rank` is bm25 weighted title 10 : heading 4 : text 1.

    Candidates are ordered by the rule PostgreSQL's are (PostgresFullTextBackend): the
    rarity-weighted sum of the question's terms a chunk holds first, the engine's score
    (bm25, divided by the best match's) breaking ties. bm25 alone under-ranks a chunk that
    holds what the question is about when the question's words are common: for "How does
    the for statement work?" every chunk of every page titled "The ... statement" outranks
    the for statement's own opening section, which then never reached the reranker (only
    its last section did, and the answer quoted that). FTS5 cannot weigh terms in its rank, so
    bm25's best `rescored` x limit matches are ordered here, each term looked up in the index
    for those rows (the engine's own matching, as PostgreSQL's `@@`).
    """

    name = "sqlite-fts5"
    # A term in at least this many chunks is common (see query.MatchPlan).
    common_term_docs = 2000
    # When every term is common, bm25 is computed for at most this many matching rows.
    max_ranked_matches = 10000
    # bm25's best rescored x limit matches are ordered by the terms they hold (class docstring).
    rescored = 2

    def doc_counts(self, terms: list[str]) -> dict[str, int]:
        """How many chunks hold each term, counted only up to common_term_docs (cheap in FTS5)."""
        return self._counts(terms)[0]

    def _counts(self, terms: list[str]) -> tuple[dict[str, int], int]:
        """(chunks per term up to common_term_docs, chunks in the corpus), in one statement."""
        one = (
            "(SELECT count(*) FROM (SELECT 1 FROM answers_chunk_fts"
            " WHERE answers_chunk_fts MATCH %s LIMIT %s))"
        )
        params: list[str | int] = []
        for term in terms:
            params += [fts5_quote(term), self.common_term_docs]
        with connection.cursor() as cursor:
            sql = "SELECT (SELECT count(*) FROM answers_chunk), " + ", ".join([one] * len(terms))  # noqa: S608
            cursor.execute(sql, params)  # only constant SQL fragments are joined
            total, *row = cursor.fetchone()
        return dict(zip(terms, (int(n) for n in row), strict=True)), int(total)

    def search(self, terms: list[str], *, limit: int, subjects: frozenset[str] = frozenset()) -> SearchResult:
        counts, total = self._counts(terms)
        plan = plan_match(terms, counts, common_docs=self.common_term_docs, subjects=subjects)
        if plan.all_required:
            # Every term is common: score a bounded number of rows (rowid order).
            inner = """
                SELECT rowid AS id, -bm25(answers_chunk_fts, 10.0, 4.0, 1.0) AS score
                FROM answers_chunk_fts WHERE answers_chunk_fts MATCH %s LIMIT %s
            """
            params: list[str | int] = [fts5_match(terms, plan), self.max_ranked_matches]
        else:
            # MATCH ... ORDER BY rank LIMIT stays in its own subquery: FTS5 then
            # ranks inside the index instead of materialising every match.
            inner = """
                SELECT rowid AS id, -rank AS score
                FROM answers_chunk_fts WHERE answers_chunk_fts MATCH %s
                ORDER BY rank LIMIT %s
            """
            params = [fts5_match(terms, plan), limit * self.rescored]
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT m.id, m.score FROM ({inner}) AS m ORDER BY m.score DESC, m.id LIMIT %s",  # noqa: S608
                [*params, limit * self.rescored],
            )  # only constant SQL fragments are interpolated
            matches = [(int(i), float(score)) for i, score in cursor.fetchall()]
            best = self._by_terms_held(cursor, matches, terms, counts, total, every=plan.all_required)[:limit]
            if not best:
                return SearchResult([], plan, counts, total)
            marks = ", ".join(["%s"] * len(best))
            cursor.execute(
                f"SELECT {_COLUMNS} FROM answers_chunk AS c"  # noqa: S608 - constant fragments only
                f" JOIN answers_document AS d ON d.id = c.document_id WHERE c.id IN ({marks})",
                [i for i, _ in best],
            )
            rows = {row[0]: row for row in cursor.fetchall()}
        found = _candidates([(*rows[i], score) for i, score in best if i in rows])
        return SearchResult(found, plan, counts, total)

    @staticmethod
    def _by_terms_held(
        cursor: CursorWrapper,
        matches: list[tuple[int, float]],
        terms: list[str],
        counts: dict[str, int],
        total: int,
        *,
        every: bool = False,
    ) -> list[tuple[int, float]]:
        """(chunk id, raw score) of the matches, ordered by the rarity-weighted terms each holds (as
        FTS5 matches them, one query a term over these rows), then bm25 (class docstring); the raw
        score is that sum plus bm25 divided by the best match's, as PostgreSQL's is. `every`: the
        match required every term (query.MatchPlan.all_required), so each row holds them all and
        the sum needs no lookup."""
        if not matches:
            return []
        ids = [i for i, _ in matches]
        marks = ", ".join(["%s"] * len(ids))
        weights = {term: capped_rarity(counts.get(term, 0), total) for term in terms}
        held = dict.fromkeys(ids, sum(weights.values()) if every else 0.0)
        for term, weight in [] if every else weights.items():
            cursor.execute(
                "SELECT rowid FROM answers_chunk_fts"  # noqa: S608 - constant fragments only
                f" WHERE answers_chunk_fts MATCH %s AND rowid IN ({marks})",
                [fts5_quote(term), *ids],
            )
            for (i,) in cursor.fetchall():
                held[int(i)] += weight
        top = max(score for _, score in matches)
        scored = [(i, held[i] + (score / top if top > 0 else 0.0)) for i, score in matches]
        return sorted(scored, key=lambda pair: (-pair[1], pair[0]))


class PostgresFullTextBackend:
    """Stored tsvector (title A, heading B, text C) with a GIN index, ranked by rarity, then ts_rank_cd.

    ts_rank_cd counts a term's occurrences (weighted by field) but not its rarity: a chunk
    repeating the question's common words ("list", "item") outranks one holding its rare
    ones, and the reranker never sees the latter among the candidates. So a matching chunk
    is ranked first by the rarity-weighted sum of the question's terms it holds (each term's
    query.capped_rarity, rarity capped at query.RARITY_CAP: the weights the reranker starts from, and the
    inverse document frequency bm25 gives SQLite's order), then by ts_rank_cd (normalised to
    0..1, so it only breaks ties). Both are computed on the same rows, the matches.
    """

    name = "postgresql-fts"
    # ts_rank_cd reads (and decompresses) every row it ranks: ~20-30 us a row here.
    # A term in at least this many chunks (estimated from ANALYZE's lexeme
    # statistics) is common, see query.MatchPlan ...
    common_term_docs = 500
    # ... and when every term is common, at most this many matching rows are ranked.
    max_ranked_matches = 2000
    # From this many rows on, the corpus's size is the planner's estimate rather than a count.
    estimated_total_from = 50000

    def doc_counts(self, terms: list[str]) -> dict[str, int]:
        """Estimated chunks per term from pg_stats (most common lexemes); 0 when not among them."""
        sql = """
            WITH stats AS (
                SELECT s.most_common_elems::text::text[] AS elems, s.most_common_elem_freqs AS freqs
                FROM pg_stats AS s
                WHERE s.schemaname = current_schema() AND s.tablename = 'answers_chunk'
                  AND s.attname = 'search'
            ),
            lexemes AS (
                SELECT t.term, x.lexeme
                FROM unnest(%s::text[]) AS t(term),
                     unnest(to_tsvector('answers_english'::regconfig, t.term)) AS x
            )
            SELECT l.term, max(st.freqs[array_position(st.elems, l.lexeme)]) * (
                SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'answers_chunk'::regclass
            )
            FROM lexemes AS l CROSS JOIN stats AS st
            GROUP BY l.term
        """
        with connection.cursor() as cursor:
            cursor.execute(sql, [terms])
            found = {term: int(n or 0) for term, n in cursor.fetchall()}
        return {term: found.get(term, 0) for term in terms}

    def rarity_counts(self, terms: list[str], estimated: dict[str, int]) -> tuple[dict[str, int], int]:
        """(chunks per term, chunks in the corpus) for the reranker's weights.

        A term among the statistics' most common lexemes keeps its estimate; any other is
        counted on the GIN index, up to common_term_docs (cheap: such a term is rare, or the
        count stops there). The corpus's size is the planner's estimate on a big table, an
        exact count on a small one (where the estimate may not exist yet and counting is cheap).
        """
        exact = [t for t in terms if estimated.get(t, 0) < self.common_term_docs]
        one = (
            "(SELECT count(*) FROM (SELECT 1 FROM answers_chunk"
            " WHERE search @@ plainto_tsquery('answers_english'::regconfig, %s) LIMIT %s) AS m)"
        )
        params: list[str | int] = []
        for term in exact:
            params += [term, self.common_term_docs]
        total = """
            (SELECT CASE WHEN reltuples >= %s THEN reltuples::bigint
                    ELSE (SELECT count(*) FROM answers_chunk) END
             FROM pg_class WHERE oid = 'answers_chunk'::regclass)
        """
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT " + ", ".join([total] + [one] * len(exact)), [self.estimated_total_from, *params]
            )
            size, *row = cursor.fetchone()
        counts = dict(estimated)
        counts.update(zip(exact, (int(n) for n in row), strict=True))
        return counts, int(size or 0)

    def search(self, terms: list[str], *, limit: int, subjects: frozenset[str] = frozenset()) -> SearchResult:
        counts, total = self.rarity_counts(terms, self.doc_counts(terms))
        plan = plan_match(terms, counts, common_docs=self.common_term_docs, subjects=subjects)
        # One plainto_tsquery per term: each term is a bound parameter and
        # plainto_tsquery treats its input as plain words, never as operators.
        one = "plainto_tsquery('answers_english'::regconfig, %s)"
        required = (" && " if plan.all_required else " || ").join([one] * len(plan.required))
        every = " || ".join([one] * len(terms))
        held = " + ".join([f"%s * (c.search @@ {one})::int"] * len(terms))
        rarities = [capped_rarity(counts.get(t, 0), total) for t in terms]
        sql = f"""
            WITH q AS (SELECT ({required}) AS required, ({every}) AS every),
            matches AS (
                SELECT c.id, ({held}) + ts_rank_cd(c.search, q.every, 32) AS score
                FROM answers_chunk AS c, q
                WHERE c.search @@ q.required
                LIMIT %s
            ),
            best AS (SELECT id, score FROM matches ORDER BY score DESC, id LIMIT %s)
            SELECT {_COLUMNS}, best.score
            FROM best
            JOIN answers_chunk AS c ON c.id = best.id
            JOIN answers_document AS d ON d.id = c.document_id
            ORDER BY best.score DESC, c.id
        """  # noqa: S608 - only constant SQL fragments are interpolated
        with connection.cursor() as cursor:
            held_params = [p for weight, term in zip(rarities, terms, strict=True) for p in (weight, term)]
            cursor.execute(sql, [*plan.required, *terms, *held_params, self.max_ranked_matches, limit])
            return SearchResult(_candidates(cursor.fetchall()), plan, counts, total)


def backend_for(conn: BaseDatabaseWrapper | None = None) -> SearchBackend:
    """The backend for the connection's database vendor."""
    vendor = (conn or connection).vendor
    if vendor == "sqlite":
        return SqliteFts5Backend()
    if vendor == "postgresql":
        return PostgresFullTextBackend()
    raise NoSearchBackend(f"No full-text search backend for the {vendor!r} database.")
