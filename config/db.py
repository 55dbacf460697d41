"""The database engine, asked one way: every app's vendor-specific SQL branches on these.

Engram runs on PostgreSQL in production and SQLite as the embedded default; other
backends are not supported. Pass `conn` for a schema editor's or another alias's
connection; the default is Django's default connection.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection as default_connection


def vendor(conn: Any = None) -> str:
    """ "postgresql" or "sqlite" (Django's name for the engine)."""
    return (conn or default_connection).vendor


def is_postgres(conn: Any = None) -> bool:
    return vendor(conn) == "postgresql"


def is_sqlite(conn: Any = None) -> bool:
    return vendor(conn) == "sqlite"


def pick(*, postgres: Any, sqlite: Any, conn: Any = None) -> Any:
    """The engine's own form of a value, e.g. an SQL fragment written both ways."""
    return postgres if is_postgres(conn) else sqlite


def lock_keys(keys: Iterable[str], conn: Any = None) -> None:
    """Hold a lock on each key until the transaction ends: writers that would otherwise
    both pass a check before either inserts (two turns of one session, two copies of one
    text) take their turns. PostgreSQL transaction advisory locks, taken in one order so
    two writers never deadlock; SQLite runs one writing transaction at a time (IMMEDIATE),
    so there is nothing to take. A hash collision only makes two writers wait."""
    ordered = sorted(set(keys))
    if not ordered or not is_postgres(conn):
        return
    with (conn or default_connection).cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) "
            "FROM (SELECT k FROM unnest(%s::text[]) AS k ORDER BY k OFFSET 0) AS ordered",
            [ordered],
        )


def foreign_key_indexes(fields: Iterable[tuple[str, str]], *, drop: bool):
    """A migration's RunPython function that drops (or, `drop` False, creates) the index
    Django gives each foreign key (`app_label.Model`, field name), by the name Django gives
    it, with plain SQL: an index change through AlterField makes SQLite copy the whole table,
    which would lose the triggers the search tables hang on."""

    def run(apps, schema_editor) -> None:
        qn = schema_editor.quote_name
        for label, name in fields:
            opts = apps.get_model(label)._meta
            column = opts.get_field(name).column
            index = schema_editor._create_index_name(opts.db_table, [column], suffix="")
            if drop:
                schema_editor.execute(f"DROP INDEX IF EXISTS {qn(index)}")
            else:
                schema_editor.execute(
                    f"CREATE INDEX IF NOT EXISTS {qn(index)} ON {qn(opts.db_table)} ({qn(column)})"
                )

    return run


# Autovacuum analyses a table every this many changed rows (autoanalyze_every).
AUTOANALYZE_ROWS = 5_000


def autoanalyze_every(tables: Iterable[str], *, reset: bool = False):
    """A migration's RunPython function: on PostgreSQL, autovacuum analyses each table once
    AUTOANALYZE_ROWS rows have changed rather than a tenth of the table (`reset`: back to
    the server's defaults). Per-namespace statements rely on the statistics' count of a
    namespace's rows; at the default a large table keeps estimating a namespace that is
    filling fast at one row, and every index led by the namespace then looks as good as
    any other (memories migration 0024)."""

    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        for table in tables:
            if reset:
                change = "RESET (autovacuum_analyze_scale_factor, autovacuum_analyze_threshold)"
            else:
                change = (
                    "SET (autovacuum_analyze_scale_factor = 0, "
                    f"autovacuum_analyze_threshold = {AUTOANALYZE_ROWS})"
                )
            schema_editor.execute(f"ALTER TABLE {schema_editor.quote_name(table)} {change}")

    return run
