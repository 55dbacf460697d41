"""Autovacuum analyses the tables a namespace grows every AUTOANALYZE_ROWS changed rows
(memories migration 0024, review 0007): on PostgreSQL the tables carry the setting, and
taking the migrations back restores the server's defaults."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from config.db import AUTOANALYZE_ROWS, autoanalyze_every

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL storage setting"),
]

TABLES = [
    *importlib.import_module("memories.migrations.0024_analyze_every_few_thousand_rows").TABLES,
    *importlib.import_module("review.migrations.0007_analyze_every_few_thousand_rows").TABLES,
]


def options(table: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [table])
        return set(cursor.fetchone()[0] or ())


def test_the_growing_tables_are_analysed_every_few_thousand_rows():
    assert {"memories_memory", "review_card"} <= set(TABLES)
    wanted = {
        "autovacuum_analyze_scale_factor=0",
        f"autovacuum_analyze_threshold={AUTOANALYZE_ROWS}",
    }
    for table in TABLES:
        assert wanted <= options(table), table


def test_taking_the_setting_back_restores_the_defaults():
    class Editor:  # what RunPython hands the function
        connection = connection

        @staticmethod
        def quote_name(name):
            return connection.ops.quote_name(name)

        @staticmethod
        def execute(sql):
            with connection.cursor() as cursor:
                cursor.execute(sql)

    autoanalyze_every(["memories_memory"], reset=True)(None, Editor)
    assert not any(o.startswith("autovacuum_analyze") for o in options("memories_memory"))
    autoanalyze_every(["memories_memory"])(None, Editor)
    assert f"autovacuum_analyze_threshold={AUTOANALYZE_ROWS}" in options("memories_memory")
