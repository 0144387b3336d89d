# Full-text search index over chunks, one per database vendor.
#
# The Chunk model stays vendor-neutral; the index lives beside it in SQL:
# - SQLite: an FTS5 external-content table (porter/unicode61) over the chunk's
#   title, heading and text, kept in sync by triggers; `rank` is bm25 with the
#   title weighted over the heading over the body.
# - PostgreSQL: a stored generated tsvector column `search` (title A, heading B,
#   text C) with a GIN index, in the text search configuration `answers_english`:
#   English stemming without a stopword list, so words such as "with", "if" or
#   "in" (keywords a technical site's readers ask about) stay searchable.
# Any other vendor gets neither and retrieval reports that it has no backend.
#
# Note for later migrations: SQLite rebuilds a table on most ALTERs, which drops
# its triggers; a migration that alters answers_chunk on SQLite must re-run
# SQLITE_TRIGGERS (and `rebuild` the FTS table).
from django.db import migrations, models

SQLITE_CREATE = [
    """
    CREATE VIRTUAL TABLE answers_chunk_fts USING fts5(
        title, heading, text,
        content='answers_chunk', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2'
    )
    """,
    # The weights used by `ORDER BY rank`: title, heading, text.
    "INSERT INTO answers_chunk_fts(answers_chunk_fts, rank) VALUES('rank', 'bm25(10.0, 4.0, 1.0)')",
]
SQLITE_TRIGGERS = [
    """
    CREATE TRIGGER answers_chunk_fts_ai AFTER INSERT ON answers_chunk BEGIN
        INSERT INTO answers_chunk_fts(rowid, title, heading, text)
        VALUES (new.id, new.title, new.heading, new.text);
    END
    """,
    """
    CREATE TRIGGER answers_chunk_fts_ad AFTER DELETE ON answers_chunk BEGIN
        INSERT INTO answers_chunk_fts(answers_chunk_fts, rowid, title, heading, text)
        VALUES ('delete', old.id, old.title, old.heading, old.text);
    END
    """,
    """
    CREATE TRIGGER answers_chunk_fts_au AFTER UPDATE ON answers_chunk BEGIN
        INSERT INTO answers_chunk_fts(answers_chunk_fts, rowid, title, heading, text)
        VALUES ('delete', old.id, old.title, old.heading, old.text);
        INSERT INTO answers_chunk_fts(rowid, title, heading, text)
        VALUES (new.id, new.title, new.heading, new.text);
    END
    """,
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS answers_chunk_fts_ai",
    "DROP TRIGGER IF EXISTS answers_chunk_fts_ad",
    "DROP TRIGGER IF EXISTS answers_chunk_fts_au",
    "DROP TABLE IF EXISTS answers_chunk_fts",
]

POSTGRES_CREATE = [
    "CREATE TEXT SEARCH DICTIONARY answers_english_stem (TEMPLATE = snowball, Language = english)",
    "CREATE TEXT SEARCH CONFIGURATION answers_english (COPY = pg_catalog.english)",
    "ALTER TEXT SEARCH CONFIGURATION answers_english ALTER MAPPING REPLACE english_stem WITH answers_english_stem",
    """
    ALTER TABLE answers_chunk ADD COLUMN search tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('answers_english'::regconfig, coalesce(title, '')), 'A')
        || setweight(to_tsvector('answers_english'::regconfig, coalesce(heading, '')), 'B')
        || setweight(to_tsvector('answers_english'::regconfig, coalesce(text, '')), 'C')
    ) STORED
    """,
    "CREATE INDEX answers_chunk_search_gin ON answers_chunk USING gin (search)",
]
POSTGRES_DROP = [
    "DROP INDEX IF EXISTS answers_chunk_search_gin",
    "ALTER TABLE answers_chunk DROP COLUMN IF EXISTS search",
    "DROP TEXT SEARCH CONFIGURATION IF EXISTS answers_english",
    "DROP TEXT SEARCH DICTIONARY IF EXISTS answers_english_stem",
]


def _run(schema_editor, statements):
    for sql in statements:
        schema_editor.execute(sql)


def copy_titles(apps, schema_editor):
    schema_editor.execute(
        "UPDATE answers_chunk SET title = "
        "(SELECT d.title FROM answers_document d WHERE d.id = answers_chunk.document_id)"
    )


def create_index(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        _run(schema_editor, SQLITE_CREATE + SQLITE_TRIGGERS)
        # Index the rows that existed before this migration.
        schema_editor.execute("INSERT INTO answers_chunk_fts(answers_chunk_fts) VALUES('rebuild')")
    elif vendor == "postgresql":
        _run(schema_editor, POSTGRES_CREATE)


def drop_index(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        _run(schema_editor, SQLITE_DROP)
    elif vendor == "postgresql":
        _run(schema_editor, POSTGRES_DROP)


class Migration(migrations.Migration):
    dependencies = [("answers", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="title",
            field=models.CharField(blank=True, max_length=500),
        ),
        migrations.RunPython(copy_titles, migrations.RunPython.noop, elidable=True),
        migrations.RunPython(create_index, drop_index),
    ]
