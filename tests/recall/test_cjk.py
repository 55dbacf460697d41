"""Chinese and Japanese words inside unspaced text (docs/recall.md, "Languages written
without spaces"): both engines' tokenizers take a whole run as one word, so the runs are
also indexed, and queried, as overlapping character pairs (memories.text.cjk_pairs)."""

from __future__ import annotations

import pytest
from django.db import connection

from memories import services
from memories.models import Memory
from memories.text import cjk_pairs, fold
from recall.stages.query import analyse_query
from tests.memories.test_search_indexes import _porter_ids

pytestmark = pytest.mark.django_db

TEXTS = {
    "tokyo": "東京タワーに行った",
    "beijing": "我去过北京和上海。",
    "sushi": "昨日は寿司を食べた",
    "english": "We walked along the river in Tokyo.",
    "seoul": "서울에 갔다",
}


def test_pairs_of_the_runs_only():
    assert cjk_pairs("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert cjk_pairs(fold("ｶﾀｶﾅ and 北京, 猫")) == ["カタ", "タカ", "カナ", "北京"]
    assert cjk_pairs("plain english, 서울에 갔다, 1234") == []


def test_a_query_run_brings_its_pairs():
    terms = analyse_query("東京タワー?").terms
    assert terms == ["東京タワー", "東京", "京タ", "タワ", "ワー"]
    assert analyse_query("Tokyo tower").terms == ["tokyo", "tower"]


@pytest.fixture
def stored(user):
    namespace = services.namespace_create(owner=user, name="cjk", mode="agent_memory")
    return namespace, {
        key: services.memory_create(namespace=namespace, content=text)
        for key, text in TEXTS.items()
    }


@pytest.mark.parametrize(
    "query, expected",
    [
        ("東京", "tokyo"),  # two characters inside a run: the case this is for
        ("東京タワー", "tokyo"),
        ("北京", "beijing"),
        ("上海はどこ", "beijing"),  # a pair of the query's run is a pair of the memory's
        ("寿司", "sushi"),
        ("tokyo river", "english"),
        ("서울", "seoul"),  # Korean is spaced: found by its words, as before
    ],
)
def test_recall_finds_a_word_inside_unspaced_text(user, stored, make_token, api, query, expected):
    namespace, memories = stored
    _, secret = make_token(user, namespaces=[namespace])
    response = api(secret).post("/api/v1/recall", {"query": query}, format="json")
    assert response.status_code == 200, response.json()
    ids = [hit["memory_id"] for hit in response.json()["results"]]
    assert ids and ids[0] == memories[expected].pk, (query, response.json()["results"])


def test_an_edit_reindexes_the_pairs(stored):
    _, memories = stored
    memory = memories["sushi"]
    services.memory_update(
        memory=memory, changes={"content": "今日はラーメンを食べた"}, actor=None, source="api"
    )
    memory.refresh_from_db()
    assert "ラー" in memory.search_pairs.split() and "寿司" not in memory.search_pairs
    assert _porter_ids("ラー") == {memory.pk}
    assert _porter_ids("寿司") == set()
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:  # raises if the index disagrees with the rows
            cursor.execute(
                "INSERT INTO memories_memory_fts(memories_memory_fts, rank) "
                "VALUES ('integrity-check', 1)"
            )


def test_english_text_has_no_pairs(stored):
    _, memories = stored
    assert Memory.objects.get(pk=memories["english"].pk).search_pairs == ""


@pytest.mark.django_db(transaction=True)
def test_the_migration_backfills_the_pairs_of_existing_rows(user):
    """Rows written before migration 0029 get their pairs, and both indexes take them in."""
    from django.db.migrations.executor import MigrationExecutor

    namespace = services.namespace_create(owner=user, name="old", mode="agent_memory")
    memory = services.memory_create(namespace=namespace, content="東京タワーに行った")
    executor = MigrationExecutor(connection)
    latest = [node for node in executor.loader.graph.leaf_nodes() if node[0] == "memories"]
    executor.migrate([("memories", "0028_field_rules_every_path")])
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(latest)
    assert Memory.objects.get(pk=memory.pk).search_pairs.split()[:2] == ["東京", "京タ"]
    assert _porter_ids("東京") == {memory.pk}
