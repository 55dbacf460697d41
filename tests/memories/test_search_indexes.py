"""The full-text structures stay in step with memory rows on both engines."""

from __future__ import annotations

import pytest
from django.db import connection

from memories import services
from memories.models import Memory


def _porter_ids(term: str) -> set[int]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT rowid FROM memories_memory_fts WHERE memories_memory_fts MATCH %s",
                [term],
            )
        else:
            cursor.execute(
                "SELECT id FROM memories_memory "
                "WHERE search_vector @@ plainto_tsquery('english', %s)",
                [term],
            )
        return {row[0] for row in cursor.fetchall()}


def _trigram_ids(fragment: str, column: str = "search_text") -> set[int]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                f"SELECT rowid FROM memories_memory_trgm WHERE {column} MATCH %s",
                [f'"{fragment}"'],
            )
        else:
            cursor.execute(
                f"SELECT id FROM memories_memory WHERE {column} ILIKE %s", [f"%{fragment}%"]
            )
        return {row[0] for row in cursor.fetchall()}


def _assert_integrity() -> None:
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        # Raises if the external-content index disagrees with memories_memory.
        cursor.execute(
            "INSERT INTO memories_memory_fts(memories_memory_fts, rank) "
            "VALUES ('integrity-check', 1)"
        )
        cursor.execute(
            "INSERT INTO memories_memory_trgm(memories_memory_trgm, rank) "
            "VALUES ('integrity-check', 1)"
        )


@pytest.mark.django_db(transaction=True)
def test_stemmed_index_follows_create_update_and_delete(namespace):
    memory = services.memory_create(namespace=namespace, content="She was running marathons")
    assert _porter_ids("run") == {memory.pk}  # stemmed: running -> run

    services.memory_update(memory=memory, changes={"content": "She swims in the lake"})
    assert _porter_ids("run") == set()
    assert _porter_ids("swimming") == {memory.pk}
    _assert_integrity()

    services.memory_purge(memory=memory)
    assert _porter_ids("swim") == set()
    _assert_integrity()


@pytest.mark.django_db(transaction=True)
def test_keywords_are_searchable(namespace):
    memory = services.memory_create(
        namespace=namespace, content="Notes from Tuesday", keywords=["postgresql", "vacuum"]
    )
    assert _porter_ids("vacuum") == {memory.pk}
    services.memory_update(memory=memory, changes={"keywords": ["sqlite"]})
    assert _porter_ids("vacuum") == set()
    assert _porter_ids("sqlite") == {memory.pk}


@pytest.mark.django_db(transaction=True)
def test_trigram_index_matches_substrings_without_diacritics(namespace):
    memory = services.memory_create(
        namespace=namespace,
        content="The key is der Schlüssel",
        content_original="Der Schlüssel liegt auf dem Tisch",
    )
    assert _trigram_ids("schlussel") == {memory.pk}
    assert _trigram_ids("liegt auf", column="search_original") == {memory.pk}
    services.memory_update(memory=memory, changes={"content": "A door without a lock"})
    assert _trigram_ids("schlussel") == set()
    assert _trigram_ids("without") == {memory.pk}
    _assert_integrity()


@pytest.mark.django_db(transaction=True)
def test_counter_updates_do_not_disturb_the_index(namespace):
    memory = services.memory_create(namespace=namespace, content="Redis eviction policy")
    Memory.objects.filter(pk=memory.pk).update(use_count=5, recall_count=2)
    services.memory_touch(memory=memory)
    assert _porter_ids("eviction") == {memory.pk}
    _assert_integrity()


@pytest.mark.django_db
def test_postgres_ranks_content_above_keywords(namespace):
    if connection.vendor != "postgresql":
        pytest.skip("tsvector weights exist on PostgreSQL only")
    in_content = services.memory_create(namespace=namespace, content="vacuum tuning guide")
    in_keywords = services.memory_create(
        namespace=namespace, content="maintenance notes", keywords=["vacuum"]
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM memories_memory WHERE search_vector @@ plainto_tsquery('english', "
            "'vacuum') ORDER BY ts_rank(search_vector, plainto_tsquery('english', 'vacuum')) DESC"
        )
        assert [row[0] for row in cursor.fetchall()] == [in_content.pk, in_keywords.pk]


def test_the_sqlite_triggers_survive_every_migration(db):
    if connection.vendor != "sqlite":
        pytest.skip("triggers keep the FTS5 tables in step on SQLite only")
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        names = {row[0] for row in cursor.fetchall()}
    assert names >= {
        "memories_memory_search_ai",
        "memories_memory_search_ad",
        "memories_memory_fts_au",
        "memories_memory_trgm_au",
    }


def _gin_indexes() -> dict[str, tuple[str, list | None]]:
    """The GIN indexes of memories_memory: name -> (definition, storage options)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_get_indexdef(c.oid), c.reloptions FROM pg_class c "
            "JOIN pg_am a ON a.oid = c.relam JOIN pg_index i ON i.indexrelid = c.oid "
            "WHERE a.amname = 'gin' AND i.indrelid = 'memories_memory'::regclass"
        )
        return {name: (definition, options) for name, definition, options in cursor.fetchall()}


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL indexes")
def test_postgres_search_indexes_lead_with_the_namespace() -> None:
    gin = {name: definition for name, (definition, _) in _gin_indexes().items()}
    assert set(gin) == {
        "memory_ns_search_vector_gin",
        "memory_ns_search_text_trgm",
        "memory_ns_search_original_trgm",
    }
    assert all("(namespace_id, search_" in definition for definition in gin.values())


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL indexes")
def test_postgres_search_indexes_keep_short_pending_lists() -> None:
    """Searches read a GIN index's pending list in full: each is capped at 256 kB."""
    options = {name: opts for name, (_, opts) in _gin_indexes().items()}
    assert len(options) == 3
    assert all(value == ["gin_pending_list_limit=256"] for value in options.values()), options
