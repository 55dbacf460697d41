"""Duplicates (issue 15, item 2): a namespace does not store the same text twice; the write
answers with the memory that holds it, counted as a use, and never with one the caller
could not see."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from memories import services
from memories.models import Classification, Memory, MemoryEvent
from tests.support.api import create

pytestmark = pytest.mark.django_db


def test_a_second_copy_answers_200_with_the_first_counted_as_a_use(writer, namespace):
    first = create(writer, namespace, "The deploy window is Tuesday 10:00.")
    assert first.status_code == 201 and first.json()["deduplicated"] is False

    again = create(writer, namespace, "  the DEPLOY window is   tuesday 10:00. ")
    assert again.status_code == 200
    body = again.json()
    assert body["deduplicated"] is True
    assert body["id"] == first.json()["id"]
    assert body["use_count"] == 1
    assert Memory.objects.filter(namespace=namespace).count() == 1
    touched = MemoryEvent.objects.filter(memory_ref=body["id"], kind=MemoryEvent.Kind.TOUCHED)
    assert touched.count() == 1


def test_accents_and_case_are_one_text_but_other_words_are_not(namespace):
    original = services.memory_create(namespace=namespace, content="Café crème at noon")
    same = services.memory_create(namespace=namespace, content="cafe CREME at noon")
    other = services.memory_create(namespace=namespace, content="Café crème at nine")
    assert same.pk == original.pk and same.deduplicated
    assert other.pk != original.pk and not other.deduplicated


def test_a_forgotten_memory_is_no_answer(namespace):
    old = services.memory_create(namespace=namespace, content="Parking is on level 3.")
    services.memory_forget(memory=old, reason="moved")
    new = services.memory_create(namespace=namespace, content="Parking is on level 3.")
    assert new.pk != old.pk and not new.deduplicated


def test_a_namespace_with_dedupe_off_stores_every_copy(writer, user):
    plain = services.namespace_create(owner=user, name="Log", dedupe="off")
    assert create(writer, plain, "tick").status_code == 201
    assert create(writer, plain, "tick").status_code == 201
    assert Memory.objects.filter(namespace=plain).count() == 2


def test_the_api_sets_and_shows_the_namespace_setting(writer, namespace):
    assert writer.get(f"/api/v1/namespaces/{namespace.slug}").json()["dedupe"] == "exact"
    changed = writer.patch(f"/api/v1/namespaces/{namespace.slug}", {"dedupe": "off"}, format="json")
    assert changed.status_code == 200 and changed.json()["dedupe"] == "off"
    bad = writer.patch(f"/api/v1/namespaces/{namespace.slug}", {"dedupe": "fuzzy"}, format="json")
    assert bad.status_code == 400 and "dedupe" in bad.json()["error"]["fields"]


def test_bulk_reports_each_duplicate_and_counts_its_uses(writer, namespace):
    existing = services.memory_create(namespace=namespace, content="Known fact.")
    items = [
        {"content": "New fact."},
        {"content": "known FACT."},
        {"content": "New fact."},  # a copy of an item of the same request
        {"content": "Another new fact."},
        {"content": "Known fact."},
    ]
    response = writer.post(
        "/api/v1/memories/bulk", {"namespace": namespace.slug, "memories": items}, format="json"
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert [item["deduplicated"] for item in body] == [False, True, True, False, True]
    assert body[1]["id"] == body[4]["id"] == existing.pk
    assert body[2]["id"] == body[0]["id"]
    assert Memory.objects.filter(namespace=namespace).count() == 3
    existing.refresh_from_db()
    assert existing.use_count == 2
    assert Memory.objects.get(pk=body[0]["id"]).use_count == 1
    counted = MemoryEvent.objects.get(memory_ref=existing.pk, kind=MemoryEvent.Kind.TOUCHED)
    assert counted.after == {"use_count": 2, "deduplicated": 2}


def test_a_duplicate_never_reveals_a_memory_above_the_callers_ceiling(
    user, namespace, make_token, api
):
    secret_memory = services.memory_create(
        namespace=namespace,
        content="The merger closes in March.",
        classification=Classification.RESTRICTED,
    )
    _, secret = make_token(user, ceiling=Classification.INTERNAL)
    low = api(secret)

    response = create(low, namespace, "The merger closes in March.")
    assert response.status_code == 201
    body = response.json()
    assert body["id"] != secret_memory.pk and body["deduplicated"] is False
    assert body["classification"] == "internal"
    bulk = low.post(
        "/api/v1/memories/bulk",
        {"namespace": namespace.slug, "memories": [{"content": "The merger closes in March."}]},
        format="json",
    ).json()
    # The bulk item is the caller's own memory of that text, never the restricted one.
    assert bulk[0]["id"] == body["id"] and bulk[0]["deduplicated"] is True
    secret_memory.refresh_from_db()
    assert secret_memory.use_count == 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite writers are serialised")
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_copies_store_one_memory(user):
    namespace = services.namespace_create(owner=user, name="Race")
    barrier = threading.Barrier(2, timeout=10)
    results: list = []

    def write() -> None:
        try:
            barrier.wait()
            results.append(services.memory_create(namespace=namespace, content="same text"))
        finally:
            connection.close()

    threads = [threading.Thread(target=write) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(m.deduplicated for m in results) == [False, True]
    assert len({m.pk for m in results}) == 1
    assert Memory.objects.filter(namespace=namespace).count() == 1


def test_a_fact_said_again_after_it_was_superseded_is_stored_anew(writer, namespace):
    """Paris, then Berlin (superseding Paris), then Paris again: the third write is the
    current fact, not the superseded memory answering as a duplicate."""
    paris = create(writer, namespace, "Ada lives in Paris.").json()
    create(writer, namespace, "Ada lives in Berlin.", supersedes=[paris["id"]])
    again = create(writer, namespace, "Ada lives in Paris.")
    assert again.status_code == 201, again.json()
    assert again.json()["id"] != paris["id"] and again.json()["deduplicated"] is False
    assert again.json()["superseded"] is False
    bulk = writer.post(
        "/api/v1/memories/bulk",
        {"namespace": namespace.slug, "memories": [{"content": "ada lives in paris."}]},
        format="json",
    ).json()
    assert bulk[0]["id"] == again.json()["id"] and bulk[0]["deduplicated"] is True


def _clone(memory: Memory, copies: int, namespace_id: int) -> None:
    """`copies` rows like `memory` in a namespace, each with a key of its own, in one
    statement (fast enough to grow a namespace past what the statistics say)."""
    columns = [f.column for f in Memory._meta.concrete_fields if f.column != "id"]
    picked = {
        "namespace_id": "%s",
        "content_key": "md5(g::text) || md5(g::text)",
    }
    select = ", ".join(picked.get(c, c) for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO memories_memory ({', '.join(columns)}) SELECT {select} "
            "FROM memories_memory, generate_series(1, %s) AS g WHERE id = %s",
            [namespace_id, copies, memory.pk],
        )


def test_the_duplicate_check_reads_the_key_whatever_the_statistics_say(user):
    """The check must look the text up by its key. Led by the namespace, PostgreSQL could
    take any index of the namespace, and did when its statistics said the namespace was
    small: a new namespace filling faster than ANALYZE runs had every create read all of
    it (memory_ns_tier_status, thousands of rows)."""
    from memories.services.duplicates import live_duplicates

    big = services.namespace_create(owner=user, name="Big")
    small = services.namespace_create(owner=user, name="Small")
    seed = services.memory_create(namespace=big, content="A note.")
    statements = []

    def keep(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    if connection.vendor == "postgresql":
        _clone(seed, 3000, big.pk)
        services.memory_create(namespace=small, content="A small note.")
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memories_memory")  # small holds one memory, it says
        _clone(seed, 3000, small.pk)  # and now 3,001
    wanted = services.memory_create(namespace=small, content="The one to find.")
    with connection.execute_wrapper(keep):
        found = live_duplicates([(small.pk, wanted.content_key)], ceiling=Classification.RESTRICTED)
    assert [m.pk for m in found.values()] == [wanted.pk]
    sql, params = statements[0]
    explain = "EXPLAIN " if connection.vendor == "postgresql" else "EXPLAIN QUERY PLAN "
    with connection.cursor() as cursor:
        cursor.execute(explain + sql, params)
        plan = " ".join(str(row) for row in cursor.fetchall())
    assert "memory_content_key_ns" in plan, plan
