"""Reinstall the SQLite full-text triggers after a migration that rebuilds memories_memory.

Django applies some schema changes on SQLite (AddField with a default, AlterField...) by
creating a new table, copying the rows and renaming it, which drops the table's triggers.
Every such migration ends with `reinstall_sqlite_search()` (a no-op on PostgreSQL, where the
tsvector is a generated column and survives).
"""

from __future__ import annotations

import importlib

from django.db import migrations


def _reinstall(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    search = importlib.import_module("memories.migrations.0002_search_indexes")
    for statement in search.SQLITE_BACKWARD[:4]:  # the triggers
        schema_editor.execute(statement, params=None)
    for statement in search.SQLITE_FORWARD[2:]:  # triggers again, then 'rebuild' both tables
        schema_editor.execute(statement, params=None)


def reinstall_sqlite_search() -> migrations.RunPython:
    return migrations.RunPython(_reinstall, migrations.RunPython.noop)
