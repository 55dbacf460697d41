"""No index of Engram's tables is a leading part of another B-tree index of the same table:
such an index answers nothing the longer one does not, and costs every insert a write
(a foreign key's own index, when a composite index already leads with its column, was one
per memory, event, card, use and link). Unique indexes enforce a rule and are kept."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection

pytestmark = pytest.mark.django_db

APPS = ("memories", "review", "recall")
# Kept on purpose, each with its reason where it is declared.
EXEMPT = {"memories_association_source_id_bb39c4cb"}  # Association.source: recall's plan


def _btree_indexes(table: str) -> dict[str, tuple[list[str], bool]]:
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, table)
    return {
        name: (info["columns"], bool(info["unique"] or info["primary_key"]))
        for name, info in found.items()
        if info["index"]
        and info["columns"]
        and all(info["columns"])
        # SQLite reports "idx" for every index; PostgreSQL names the access method.
        and info.get("type") in ("btree", "idx")
        # PostgreSQL's companion of a text column's index, for LIKE (another operator class).
        and not name.endswith("_like")
    }


def _tables() -> list[str]:
    return sorted(
        {
            model._meta.db_table
            for label in APPS
            for model in apps.get_app_config(label).get_models()
            if model._meta.managed
        }
    )


def test_the_check_sees_indexes_on_this_engine():
    indexes = _btree_indexes("memories_memory")
    assert any(columns[:2] == ["namespace_id", "status"] for columns, _ in indexes.values())


@pytest.mark.parametrize("table", _tables())
def test_no_index_is_a_prefix_of_another(table):
    indexes = _btree_indexes(table)
    redundant = [
        (name, other)
        for name, (columns, unique) in indexes.items()
        if not unique and name not in EXEMPT
        for other, (longer, _) in indexes.items()
        if other != name and len(longer) >= len(columns) and longer[: len(columns)] == columns
    ]
    assert not redundant, f"{table}: an index another already covers: {redundant}"
