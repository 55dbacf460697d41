"""Full-text and trigram search structures, chosen by database vendor.

PostgreSQL: a stored generated tsvector (English stemming; content weighted A, keywords B)
with a GIN index, and pg_trgm GIN indexes on the folded search fields.
SQLite: external-content FTS5 tables (porter for stemmed match, trigram for fuzzy match)
kept in step with memories_memory by triggers.

Neither structure is part of Django's model state; the recall stages query them with SQL.
"""

from django.db import migrations

POSTGRES_FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    """
    ALTER TABLE memories_memory ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, coalesce(content, '')), 'A')
        || setweight(jsonb_to_tsvector('english'::regconfig, keywords, '["string"]'), 'B')
    ) STORED
    """,
    "CREATE INDEX memory_search_vector_gin ON memories_memory USING GIN (search_vector)",
    "CREATE INDEX memory_search_text_trgm ON memories_memory USING GIN (search_text gin_trgm_ops)",
    "CREATE INDEX memory_search_original_trgm ON memories_memory "
    "USING GIN (search_original gin_trgm_ops)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS memory_search_original_trgm",
    "DROP INDEX IF EXISTS memory_search_text_trgm",
    "DROP INDEX IF EXISTS memory_search_vector_gin",
    "ALTER TABLE memories_memory DROP COLUMN IF EXISTS search_vector",
]

_FTS_INSERT = (
    "INSERT INTO memories_memory_fts(rowid, content, keywords) "
    "VALUES (new.id, new.content, new.keywords);"
)
_FTS_DELETE = (
    "INSERT INTO memories_memory_fts(memories_memory_fts, rowid, content, keywords) "
    "VALUES ('delete', old.id, old.content, old.keywords);"
)
_TRGM_INSERT = (
    "INSERT INTO memories_memory_trgm(rowid, search_text, search_original) "
    "VALUES (new.id, new.search_text, new.search_original);"
)
_TRGM_DELETE = (
    "INSERT INTO memories_memory_trgm(memories_memory_trgm, rowid, search_text, "
    "search_original) VALUES ('delete', old.id, old.search_text, old.search_original);"
)

SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE memories_memory_fts USING fts5("
    "content, keywords, content='memories_memory', content_rowid='id', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE memories_memory_trgm USING fts5("
    "search_text, search_original, content='memories_memory', content_rowid='id', "
    "tokenize='trigram')",
    f"CREATE TRIGGER memories_memory_search_ai AFTER INSERT ON memories_memory BEGIN "
    f"{_FTS_INSERT} {_TRGM_INSERT} END",
    f"CREATE TRIGGER memories_memory_search_ad AFTER DELETE ON memories_memory BEGIN "
    f"{_FTS_DELETE} {_TRGM_DELETE} END",
    # Only writes that touch the indexed columns re-index: counter updates stay cheap.
    f"CREATE TRIGGER memories_memory_fts_au AFTER UPDATE OF content, keywords "
    f"ON memories_memory BEGIN {_FTS_DELETE} {_FTS_INSERT} END",
    f"CREATE TRIGGER memories_memory_trgm_au AFTER UPDATE OF search_text, search_original "
    f"ON memories_memory BEGIN {_TRGM_DELETE} {_TRGM_INSERT} END",
    # Rows that existed before this migration.
    "INSERT INTO memories_memory_fts(memories_memory_fts) VALUES ('rebuild')",
    "INSERT INTO memories_memory_trgm(memories_memory_trgm) VALUES ('rebuild')",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS memories_memory_trgm_au",
    "DROP TRIGGER IF EXISTS memories_memory_fts_au",
    "DROP TRIGGER IF EXISTS memories_memory_search_ad",
    "DROP TRIGGER IF EXISTS memories_memory_search_ai",
    "DROP TABLE IF EXISTS memories_memory_trgm",
    "DROP TABLE IF EXISTS memories_memory_fts",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        statements = statements_by_vendor.get(schema_editor.connection.vendor)
        if statements is None:
            raise RuntimeError(
                f"Engram supports SQLite and PostgreSQL, not {schema_editor.connection.vendor}."
            )
        for statement in statements:
            schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("memories", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRES_FORWARD, "sqlite": SQLITE_FORWARD}),
            _run({"postgresql": POSTGRES_BACKWARD, "sqlite": SQLITE_BACKWARD}),
        ),
    ]
