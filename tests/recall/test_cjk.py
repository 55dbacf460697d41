"""Chinese and Japanese words inside unspaced text (docs/recall.md, "Languages written
without spaces"): both engines' tokenizers take a whole run as one word, so the runs are
also indexed, and queried, as overlapping character pairs (memories.text.cjk_pairs)."""

from __future__ import annotations

import pytest
from django.db import connection

from config.db import is_postgres
from memories import services
from memories.models import Entity, Memory
from memories.text import cjk_pairs, cjk_tokens, content_key, fold
from recall import termstats
from recall.stages.filters import RecallFilters
from recall.stages.full_text import document_frequencies
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

    namespace = services.namespace_create(owner=user, name="old", mode="agent_memory")
    memory = services.memory_create(namespace=namespace, content="東京タワーに行った")
    _migrate_again_from("0028_field_rules_every_path")
    assert Memory.objects.get(pk=memory.pk).search_pairs.split()[:2] == ["東京", "京タ"]
    assert _porter_ids("東京") == {memory.pk}


# A single character (猫) at every place it can stand, and a memory without it.
CATS = {
    "end": "我的猫",  # the run's last character: no pair starts with it
    "start": "猫が好き",
    "middle": "一只猫在睡觉",
    "alone": "I have a 猫.",  # a run of one
    "glued": "Tokyo猫cafe",  # a run of one inside a Latin word
    "dog": "我的狗",
}


def test_every_cjk_character_begins_an_index_token():
    assert cjk_tokens("東京タワー") == ["東京", "京タ", "タワ", "ワー", "ー"]
    assert cjk_tokens(fold("我的猫 and ｶﾀ, 猫")) == ["我的", "的猫", "猫", "カタ", "タ", "猫"]
    assert cjk_tokens("plain english, 서울에 갔다") == []


def test_a_single_cjk_character_is_a_query_word():
    assert analyse_query("猫").terms == ["猫"]
    assert analyse_query("a 猫?").terms == ["猫"]  # other one-character words stay noise


@pytest.fixture
def cats(namespace, make_memory):
    return {key: make_memory(text) for key, text in CATS.items()}


@pytest.mark.parametrize(
    "query, expected",
    [
        ("猫", {"end", "start", "middle", "alone", "glued"}),
        ("狗", {"dog"}),
        ("的", {"end", "dog"}),
    ],
)
def test_recall_finds_a_single_character_wherever_it_stands(recall, cats, query, expected):
    result = recall(query, limit=10)
    found = {hit.memory_id for hit in result.results if "Sf" in hit.stages}
    assert found == {cats[key].pk for key in expected}, result.stage_timings["Sf"]
    # The explanation says how it matched: as a prefix, not as the word.
    assert f'FTS matches on "{query}"*' in result.stage_timings["Sf"]["detail"]


def test_recall_finds_a_single_character_through_the_api(user, stored, make_token, api):
    namespace, memories = stored
    _, secret = make_token(user, namespaces=[namespace])
    response = api(secret).post("/api/v1/recall", {"query": "寿"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["results"][0]["memory_id"] == memories["sushi"].pk


@pytest.mark.parametrize("way", ["scanned", "indexed", "statistics"])
def test_a_single_characters_count_is_every_memory_holding_it(namespace, cats, way):
    """Sf's document frequency of a one-character term counts its prefix matches, on every
    way PostgreSQL counts (a small namespace's rows, the index, stored statistics: which
    count whole lexemes, and 猫 is one only in two of the five)."""
    if way != "scanned" and not is_postgres():
        pytest.skip("SQLite counts from FTS5 one way")
    filters = RecallFilters(namespace_ids=(namespace.pk,), ceiling=3, now=cats["dog"].created_at)
    if way == "statistics":
        termstats.refresh(force=True, min_memories=1, min_documents=1)
    n_cap = 5 if way == "indexed" else 2000
    df, _ = document_frequencies(["猫", "狗"], filters, cap=100, n_cap=n_cap)
    assert df == {"猫": 5, "狗": 1}


def test_kana_keep_their_voicing_marks(namespace, make_memory):
    """が is not か: かき (persimmon) and がき (brat) are two words and two memories."""
    assert fold("がき") == "がき" and fold("ｶﾞｷ") == "ガキ" and fold("ガ") == "ガ"
    assert content_key("がきが来た") != content_key("かきが来た")
    brat = make_memory("がきが来た")
    persimmon = make_memory("かきを食べた")
    assert brat.pk != persimmon.pk
    assert _porter_ids("がき") == {brat.pk}
    assert _porter_ids("かき") == {persimmon.pk}


def test_recall_tells_voiced_kana_apart(recall, namespace, make_memory):
    brat = make_memory("がきが来た")
    persimmon = make_memory("かきを食べた")
    result = recall("がき", limit=10)
    found = {hit.memory_id for hit in result.results if "Sf" in hit.stages}
    assert brat.pk in found and persimmon.pk not in found


@pytest.mark.django_db(transaction=True)
def test_the_migration_rederives_the_search_fields_of_cjk_rows(user):
    """Rows derived by the rules before migration 0032 (pairs only, voicing folded away) get
    the run's last character and their voiced kana back; other rows are not rewritten."""

    namespace = services.namespace_create(owner=user, name="old", mode="agent_memory")
    cat = services.memory_create(namespace=namespace, content="我的猫")
    kana = services.memory_create(namespace=namespace, content="がきが来た")
    english = services.memory_create(namespace=namespace, content="plain words")
    Memory.objects.filter(pk=cat.pk).update(search_pairs="我的 的猫")
    Memory.objects.filter(pk=kana.pk).update(
        search_text="かきか来た",
        search_pairs="かき きか か来 来た",
        content_key=content_key("かきか来た"),
    )
    english_before = Memory.objects.filter(pk=english.pk).values().get()
    entity = services.entity_get_or_create(namespace=namespace, name="ガキ大将")
    Entity.objects.filter(pk=entity.pk).update(name="カキ大将")  # folded by the old rule
    _migrate_again_from("0031_half_lives_in_order")
    assert Memory.objects.get(pk=cat.pk).search_pairs == "我的 的猫 猫"
    rederived = Memory.objects.get(pk=kana.pk)
    assert rederived.search_text == "がきが来た"
    assert rederived.content_key == content_key("がきが来た")
    assert "がき" in rederived.search_pairs.split()
    assert _porter_ids("猫") == {cat.pk}
    assert Memory.objects.filter(pk=english.pk).values().get() == english_before
    assert Entity.objects.get(pk=entity.pk).name == "ガキ大将"


@pytest.mark.parametrize("query", ["猫", "睡觉"])
def test_the_search_page_says_a_word_inside_unspaced_text_matched(ada_client, user, query):
    """The page explained a hit on a word inside a run as "not found" at relevance 0 (its
    matching knew words only as whole runs): it is the word, an exact match."""
    from django.urls import reverse

    namespace = services.namespace_create(owner=user, name="cats", mode="personal")
    cat = services.memory_create(namespace=namespace, content="我的猫在睡觉")
    response = ada_client.get(reverse("search"), {"q": query})
    assert response.status_code == 200
    [row] = [row for row in response.context["rows"] if row["hit"].memory_id == cat.pk]
    body = response.content.decode()
    assert f"{query}: exact" in body and f"not found: {query}" not in body
    assert "<mark" in str(row["content"])


def _migrate_again_from(migration: str) -> None:
    """The memories app taken back to `migration`, then forward to its latest again."""
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    latest = [node for node in executor.loader.graph.leaf_nodes() if node[0] == "memories"]
    executor.migrate([("memories", migration)])
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(latest)
