"""CJK words inside unspaced text: search_pairs, the character pairs of search_text's CJK
runs (memories.text.cjk_pairs), taken into both engines' full-text indexes.

PostgreSQL: the generated tsvector gains the pairs ('simple' configuration, weight A like
content); PostgreSQL 15 cannot change a generated column's expression, so the column and
its namespace-keyed GIN index are made again. SQLite: the FTS5 porter table gains a third
column, so it and its triggers are made again. Rows holding CJK text are backfilled first,
and both indexes then take in every row. Text without CJK has no pairs: its search is as
before.
"""

import importlib

from django.db import migrations, models

from memories.search_triggers import sqlite_search_installer
from memories.text import CJK_CHARACTERS, cjk_pairs

_SEARCH = importlib.import_module("memories.migrations.0002_search_indexes")
_LEVEL = importlib.import_module("memories.migrations.0025_association_level")

_VECTOR = """
    ALTER TABLE memories_memory ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, coalesce(content, '')), 'A')
        || setweight(jsonb_to_tsvector('english'::regconfig, keywords, '["string"]'), 'B'){pairs}
    ) STORED
"""
_PAIRS = "\n        || setweight(to_tsvector('simple'::regconfig, coalesce(search_pairs, '')), 'A')"
_INDEX = (
    "CREATE INDEX memory_ns_search_vector_gin ON memories_memory "
    "USING GIN (namespace_id, search_vector) WITH (gin_pending_list_limit = 256)"
)
POSTGRES_FORWARD = [
    "ALTER TABLE memories_memory DROP COLUMN search_vector",
    _VECTOR.format(pairs=_PAIRS),
    _INDEX,
]
POSTGRES_BACKWARD = [
    "ALTER TABLE memories_memory DROP COLUMN search_vector",
    _VECTOR.format(pairs=""),
    _INDEX,
]

_FTS_INSERT = (
    "INSERT INTO memories_memory_fts(rowid, content, keywords, search_pairs) "
    "VALUES (new.id, new.content, new.keywords, new.search_pairs);"
)
_FTS_DELETE = (
    "INSERT INTO memories_memory_fts(memories_memory_fts, rowid, content, keywords, "
    "search_pairs) VALUES ('delete', old.id, old.content, old.keywords, old.search_pairs);"
)
_TRGM_INSERT = _SEARCH._TRGM_INSERT
_TRGM_DELETE = _SEARCH._TRGM_DELETE

# The layout of 0002's lists (memories.search_triggers reinstalls from the latest): the two
# tables, the four triggers, the two rebuilds; backward: the triggers, then the tables.
SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE memories_memory_fts USING fts5("
    "content, keywords, search_pairs, content='memories_memory', content_rowid='id', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    _SEARCH.SQLITE_FORWARD[1],  # the trigram table, unchanged
    f"CREATE TRIGGER memories_memory_search_ai AFTER INSERT ON memories_memory BEGIN "
    f"{_FTS_INSERT} {_TRGM_INSERT} END",
    f"CREATE TRIGGER memories_memory_search_ad AFTER DELETE ON memories_memory BEGIN "
    f"{_FTS_DELETE} {_TRGM_DELETE} END",
    f"CREATE TRIGGER memories_memory_fts_au AFTER UPDATE OF content, keywords, search_pairs "
    f"ON memories_memory BEGIN {_FTS_DELETE} {_FTS_INSERT} END",
    _SEARCH.SQLITE_FORWARD[5],  # the trigram table's update trigger, unchanged
    "INSERT INTO memories_memory_fts(memories_memory_fts) VALUES ('rebuild')",
    "INSERT INTO memories_memory_trgm(memories_memory_trgm) VALUES ('rebuild')",
]
SQLITE_BACKWARD = _SEARCH.SQLITE_BACKWARD


def _remake_sqlite_search(forward: list[str], backward: list[str]):
    """Drop the search triggers and the porter table, make them again from `forward`."""

    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "sqlite":
            return
        for statement in backward[:4]:  # the triggers (the table rebuild dropped them)
            schema_editor.execute(statement, params=None)
        schema_editor.execute("DROP TABLE IF EXISTS memories_memory_fts", params=None)
        schema_editor.execute(forward[0], params=None)
        for statement in forward[2:]:
            schema_editor.execute(statement, params=None)

    return run


def _on(vendor: str, statements: list[str]):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == vendor:
            for statement in statements:
                schema_editor.execute(statement, params=None)

    return run


def _backfill(apps, schema_editor):
    """The pairs of the rows whose folded text has CJK characters, in batches."""
    Memory = apps.get_model("memories", "Memory")
    rows = (
        Memory.objects.using(schema_editor.connection.alias)
        .filter(search_text__regex=f"[{CJK_CHARACTERS}]")
        .only("id", "search_text")
        .order_by("id")
    )
    batch = []
    for memory in rows.iterator(chunk_size=2000):
        memory.search_pairs = " ".join(cjk_pairs(memory.search_text))
        batch.append(memory)
        if len(batch) == 2000:
            Memory.objects.bulk_update(batch, ["search_pairs"])
            batch = []
    if batch:
        Memory.objects.bulk_update(batch, ["search_pairs"])


class Migration(migrations.Migration):
    dependencies = [("memories", "0028_field_rules_every_path")]

    operations = [
        # On SQLite adding a column rebuilds the table, which the association triggers'
        # references to it would refuse (as in 0028): dropped first, made again after.
        migrations.RunPython(
            _on("sqlite", _LEVEL.SQLITE_BACKWARD), _on("sqlite", _LEVEL.SQLITE_FORWARD)
        ),
        # Undone: the column's removal rebuilds the table again, without its triggers.
        migrations.RunPython(
            migrations.RunPython.noop, sqlite_search_installer("0002_search_indexes")
        ),
        migrations.AddField(
            model_name="memory",
            name="search_pairs",
            field=models.TextField(blank=True, default="", editable=False),
        ),
        migrations.RunPython(_backfill, migrations.RunPython.noop),
        migrations.RunPython(
            _on("postgresql", POSTGRES_FORWARD), _on("postgresql", POSTGRES_BACKWARD)
        ),
        migrations.RunPython(
            _remake_sqlite_search(SQLITE_FORWARD, SQLITE_BACKWARD),
            _remake_sqlite_search(_SEARCH.SQLITE_FORWARD, SQLITE_BACKWARD),
        ),
        migrations.RunPython(
            _on("sqlite", _LEVEL.SQLITE_FORWARD), _on("sqlite", _LEVEL.SQLITE_BACKWARD)
        ),
    ]
