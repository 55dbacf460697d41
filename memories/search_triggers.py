"""Reinstall the SQLite full-text triggers after a migration that rebuilds memories_memory.

Django applies some schema changes on SQLite (AddField with a default, AlterField...) by
creating a new table, copying the rows and renaming it, which drops the table's triggers.
Every such migration ends with `reinstall_sqlite_search()` (a no-op on PostgreSQL, where the
tsvector is a generated column and survives).
"""

from __future__ import annotations

import importlib

from django.db import migrations

# The migration whose SQLITE_FORWARD/SQLITE_BACKWARD lists hold the current search tables
# and triggers. A migration made before it reinstalls the ones of its own time (the table
# then had their columns) by naming its module.
LATEST = "0029_cjk_pairs"


def sqlite_search_installer(module: str):
    """The migration step that remakes the search triggers of `module`'s time, then rebuilds."""

    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor != "sqlite":
            return
        search = importlib.import_module(f"memories.migrations.{module}")
        for statement in search.SQLITE_BACKWARD[:4]:  # the triggers
            schema_editor.execute(statement, params=None)
        for statement in search.SQLITE_FORWARD[2:]:  # triggers again, then 'rebuild' both
            schema_editor.execute(statement, params=None)

    return run


def reinstall_sqlite_search(module: str = LATEST) -> migrations.RunPython:
    return migrations.RunPython(sqlite_search_installer(module), migrations.RunPython.noop)
