"""PostgreSQL: full-text and trigram GIN indexes keyed by namespace first (btree_gin).

Every search is within a namespace. With the namespace in the index, a word that is
common in the whole table but rare in one namespace (the usual case with many tenants)
is found by intersecting two posting lists inside the index instead of reading every
table row that holds the word and discarding the other namespaces' rows. A search over
several namespaces uses the same indexes on the text key alone, as before. The old
single-column indexes are dropped: each write would otherwise update both. SQLite's
FTS5 tables are unchanged.
"""

from django.db import migrations

FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    "CREATE INDEX memory_ns_search_vector_gin ON memories_memory "
    "USING GIN (namespace_id, search_vector)",
    "CREATE INDEX memory_ns_search_text_trgm ON memories_memory "
    "USING GIN (namespace_id, search_text gin_trgm_ops)",
    "CREATE INDEX memory_ns_search_original_trgm ON memories_memory "
    "USING GIN (namespace_id, search_original gin_trgm_ops)",
    "DROP INDEX IF EXISTS memory_search_vector_gin",
    "DROP INDEX IF EXISTS memory_search_text_trgm",
    "DROP INDEX IF EXISTS memory_search_original_trgm",
]
BACKWARD = [
    "CREATE INDEX IF NOT EXISTS memory_search_vector_gin ON memories_memory "
    "USING GIN (search_vector)",
    "CREATE INDEX IF NOT EXISTS memory_search_text_trgm ON memories_memory "
    "USING GIN (search_text gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS memory_search_original_trgm ON memories_memory "
    "USING GIN (search_original gin_trgm_ops)",
    "DROP INDEX IF EXISTS memory_ns_search_vector_gin",
    "DROP INDEX IF EXISTS memory_ns_search_text_trgm",
    "DROP INDEX IF EXISTS memory_ns_search_original_trgm",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("memories", "0005_term_stats")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
