"""Near-duplicates (issue 15, item 2): stored and linked under dedupe "exact", refused like
an exact copy under "near", never compared with what the writer cannot see."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.utils import timezone

from memories import services
from memories.models import Association, Classification, Memory, MemoryEvent, MemorySketch
from memories.near_duplicates import (
    BANDS,
    numbers,
    shape,
    similarity,
    sketch_keys,
    sketch_keys_many,
    trigram_similarity,
    trigrams,
)
from memories.selectors import near_duplicates_of, superseded_by
from memories.signatures import simhash
from memories.sweep import sweep_run
from tests.support.api import create

PARIS = "User lives in Paris."
PARIS_AGAIN = "The user lives in Paris."
BERLIN = "User lives in Berlin."


def near(a: str, b: str) -> float | None:
    return similarity(
        shape(a),
        shape(b),
        simhash(a),
        simhash(b),
        trigram_threshold=0.7,
        signature_threshold=0.75,
    )


# --- The rule ----------------------------------------------------------------------------------


def test_trigrams_are_of_the_folded_text_with_its_word_boundaries():
    assert trigrams("Ab") == frozenset({" ab", "ab "})
    assert trigrams("CAFÉ  au lait") == trigrams("cafe au lait")
    assert trigram_similarity(trigrams("same"), trigrams("same")) == 1.0
    assert trigram_similarity(trigrams("abc"), frozenset()) == 0.0


def test_the_docs_examples():
    assert near(PARIS, PARIS_AGAIN) == pytest.approx(0.8333, abs=1e-3)
    assert near(PARIS, BERLIN) is None  # most trigrams differ
    # Lexical: word order is barely seen (a known limit, docs/api.md).
    assert near("The dog bites the man", "The man bites the dog") is not None


def test_texts_stating_other_numbers_are_other_facts():
    assert numbers("Room 101 at 10am, 2026-05-01") == {"101", "10am", "2026", "05", "01"}
    assert (
        near("Meeting room 101 is booked for Tuesday", "Meeting room 102 is booked for Tuesday")
        is None
    )
    assert near("Meeting room 101 is booked for Tuesday", "Meeting room 101 is booked on Tuesday")


def test_a_negation_is_not_a_near_duplicate_but_a_contradiction():
    assert near("The project uses PostgreSQL", "The project does not use PostgreSQL") is None
    assert near("We don't deploy on Fridays", "We do deploy on Fridays") is None
    assert near("We don't deploy on Fridays.", "We don't deploy on Fridays!")


def test_both_measures_must_agree():
    grams = shape(PARIS)
    agree = {"trigram_threshold": 0.7, "signature_threshold": 0.75}
    assert similarity(grams, grams, bytes(32), bytes(32), **agree) == 1.0
    assert similarity(grams, grams, bytes(32), b"\xff" * 32, **agree) is None
    assert similarity(grams, shape(BERLIN), bytes(32), bytes(32), **agree) is None


def test_sketch_keys_are_stable_across_processes_and_releases():
    # Stored keys must stay comparable with new ones: a change to the hashing is a migration.
    keys = sketch_keys(trigrams(PARIS))
    assert len(keys) == BANDS == len(set(keys))
    assert all(-(2**63) <= key < 2**63 for key in keys)
    assert keys[:3] == [-7655946217281339091, 152803662558451496, -7308633618991311194]


def test_near_duplicates_share_a_key_and_many_at_once_equals_one_by_one():
    texts = [PARIS, PARIS_AGAIN, BERLIN, "Thanks, Nate! Your support means a lot.", "x" * 400]
    one_by_one = [sketch_keys(trigrams(text)) for text in texts]
    assert sketch_keys_many([trigrams(text) for text in texts] * 7) == one_by_one * 7
    assert set(one_by_one[0]) & set(one_by_one[1])
    assert sketch_keys_many([frozenset()]) == [[]]


# --- The write path ----------------------------------------------------------------------------


def near_links(memory_id: int) -> list[tuple[int, int, float]]:
    return list(
        Association.objects.filter(source_id=memory_id, kind=services.NEAR_DUPLICATE)
        .order_by("target_id")
        .values_list("source_id", "target_id", "weight")
    )


@pytest.mark.django_db
def test_a_near_duplicate_is_stored_and_linked_to_the_older(writer, namespace, committed):
    with committed():
        first = create(writer, namespace, PARIS).json()
    with committed():
        response = create(writer, namespace, PARIS_AGAIN)
        # The request answers before the worker compares (dedupe "exact").
        assert near_links(response.json()["id"]) == []
        assert not MemorySketch.objects.filter(memory_id=response.json()["id"]).exists()
    assert response.status_code == 201
    second = response.json()
    assert second["deduplicated"] is False
    [(source, target, weight)] = near_links(second["id"])
    assert (source, target) == (second["id"], first["id"])
    assert weight == pytest.approx(0.8333, abs=1e-3)
    with committed():
        other = create(writer, namespace, BERLIN).json()
    assert near_links(other["id"]) == []
    with committed():
        room = create(writer, namespace, "The user lives in Paris, room 12.").json()
    with committed():
        room_b = create(writer, namespace, "The user lives in Paris, room 14.").json()
    assert room_b["deduplicated"] is False and near_links(room_b["id"]) == []
    assert room["id"] != room_b["id"]
    assert MemorySketch.objects.filter(memory_id=other["id"]).count() == BANDS


@pytest.mark.django_db
def test_bulk_links_near_duplicates_stored_and_within_the_request(writer, namespace, committed):
    with committed():
        stored = services.memory_create(namespace=namespace, content=PARIS)
    items = [
        {"content": PARIS_AGAIN},
        {"content": "Unrelated: the deploy window is Tuesday."},
        {"content": "The user lives in Paris now."},  # near item 0 (0.73), not PARIS (0.60)
    ]
    with committed():
        response = writer.post(
            "/api/v1/memories/bulk", {"namespace": namespace.slug, "memories": items}, format="json"
        )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert [item["deduplicated"] for item in body] == [False, False, False]
    assert [t for _s, t, _w in near_links(body[0]["id"])] == [stored.pk]
    assert near_links(body[1]["id"]) == []
    assert [t for _s, t, _w in near_links(body[2]["id"])] == [body[0]["id"]]


@pytest.mark.django_db
def test_dedupe_near_answers_with_the_most_similar_memory_as_a_use(writer, user):
    ns = services.namespace_create(owner=user, name="Strict", dedupe="near")
    first = create(writer, ns, PARIS).json()
    response = create(writer, ns, PARIS_AGAIN)
    assert response.status_code == 200
    body = response.json()
    assert body["deduplicated"] is True and body["id"] == first["id"]
    assert body["use_count"] == 1
    assert Memory.objects.filter(namespace=ns).count() == 1
    assert create(writer, ns, BERLIN).status_code == 201

    items = [
        {"content": "User lives in Paris!"},  # near the stored one
        {"content": "Standup is at 9:30 every weekday."},
        {"content": "Standup is at 9:30 on every weekday."},  # near the item before
        {"content": "standup is at 9:30 every weekday."},  # exact copy of item 1
    ]
    bulk = writer.post(
        "/api/v1/memories/bulk", {"namespace": ns.slug, "memories": items}, format="json"
    ).json()
    assert [item["deduplicated"] for item in bulk] == [True, False, True, True]
    assert bulk[0]["id"] == first["id"]
    assert bulk[2]["id"] == bulk[3]["id"] == bulk[1]["id"]
    assert Memory.objects.filter(namespace=ns).count() == 3
    assert Memory.objects.get(pk=first["id"]).use_count == 2
    assert Memory.objects.get(pk=bulk[1]["id"]).use_count == 2


@pytest.mark.django_db
def test_a_request_answered_by_a_near_duplicate_of_its_own_copy(writer, user):
    """An item that copies an earlier item which itself is a near-duplicate of a stored
    memory is answered by the stored memory, not by a memory never written."""
    ns = services.namespace_create(owner=user, name="Strict", dedupe="near")
    stored = services.memory_create(namespace=ns, content=PARIS)
    items = [{"content": PARIS_AGAIN}, {"content": PARIS_AGAIN}]
    bulk = writer.post(
        "/api/v1/memories/bulk", {"namespace": ns.slug, "memories": items}, format="json"
    ).json()
    assert [(item["id"], item["deduplicated"]) for item in bulk] == [(stored.pk, True)] * 2
    stored.refresh_from_db()
    assert stored.use_count == 2


@pytest.mark.django_db
def test_nothing_is_compared_with_what_the_writer_cannot_see(user, make_token, api):
    ns = services.namespace_create(owner=user, name="Strict", dedupe="near")
    hidden = services.memory_create(
        namespace=ns, content=PARIS, classification=Classification.RESTRICTED
    )
    _, secret = make_token(user, ceiling=Classification.INTERNAL)
    low = api(secret)
    response = create(low, ns, PARIS_AGAIN)
    assert response.status_code == 201 and response.json()["id"] != hidden.pk
    assert near_links(response.json()["id"]) == []
    hidden.refresh_from_db()
    assert hidden.use_count == 0


@pytest.mark.django_db
def test_forgotten_superseded_and_off_are_not_compared(writer, user, namespace, committed):
    with committed():
        old = services.memory_create(namespace=namespace, content=PARIS)
        services.memory_forget(memory=old, reason="wrong")
    with committed():
        assert near_links(create(writer, namespace, PARIS_AGAIN).json()["id"]) == []

    plain = services.namespace_create(owner=user, name="Log", dedupe="off")
    with committed():
        services.memory_create(namespace=plain, content=PARIS)
    with committed():
        again = create(writer, plain, PARIS_AGAIN).json()
    assert near_links(again["id"]) == []
    assert MemorySketch.objects.filter(memory_id=again["id"]).count() == BANDS


@pytest.mark.django_db
def test_a_changed_text_is_compared_again(namespace, committed):
    with committed():
        paris = services.memory_create(namespace=namespace, content=PARIS)
        other = services.memory_create(namespace=namespace, content="Lunch is at noon.")
    assert near_links(other.pk) == []
    services.memory_update(memory=other, changes={"content": PARIS_AGAIN})
    assert [t for _s, t, _w in near_links(other.pk)] == [paris.pk]
    services.memory_update(memory=other, changes={"content": "Lunch is at one."})
    assert near_links(other.pk) == []
    assert not Association.objects.filter(target=other, kind=services.NEAR_DUPLICATE).exists()


@pytest.mark.django_db
def test_a_refused_bulk_writes_no_sketch(writer, namespace, nothing_written):
    items = [{"content": PARIS}, {"content": ""}]
    with nothing_written():
        response = writer.post(
            "/api/v1/memories/bulk",
            {"namespace": namespace.slug, "memories": items},
            format="json",
        )
    assert response.status_code == 400


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite writers are serialised")
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_near_copies_store_one_memory_under_dedupe_near(user):
    namespace = services.namespace_create(owner=user, name="Race", dedupe="near")
    barrier = threading.Barrier(2, timeout=10)
    results: list = []

    def write(text: str) -> None:
        try:
            barrier.wait()
            results.append(services.memory_create(namespace=namespace, content=text))
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(text,)) for text in (PARIS, PARIS_AGAIN)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(m.deduplicated for m in results) == [False, True]
    assert Memory.objects.filter(namespace=namespace).count() == 1
    assert MemoryEvent.objects.filter(kind=MemoryEvent.Kind.TOUCHED).count() == 1


# --- Merging -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_merge_keeps_every_member_and_its_history(namespace, committed):
    with committed():
        paris = services.memory_create(namespace=namespace, content=PARIS)
        again = services.memory_create(namespace=namespace, content=PARIS_AGAIN)
        now_ = services.memory_create(namespace=namespace, content="The user lives in Paris now.")
        secret = services.memory_create(
            namespace=namespace,
            content="User lives in Paris!",
            classification=Classification.RESTRICTED,
        )
    Memory.objects.filter(pk=again.pk).update(use_count=3, recall_count=2, strength=1.5)
    merged = services.near_duplicates_merge(keep=paris, actor=None, source="dashboard")
    # The restricted member is above the kept one's level: nothing of it flows down.
    assert sorted(m.pk for m in merged) == [again.pk, now_.pk]
    paris.refresh_from_db()
    assert (paris.use_count, paris.recall_count, paris.strength) == (3, 2, 1.5)
    assert paris.valid_until is None
    for member in (again, now_):
        member.refresh_from_db()
        assert member.valid_until is not None and member.status == Memory.Status.ACTIVE
        event = MemoryEvent.objects.get(memory=member, kind=MemoryEvent.Kind.MERGED)
        assert event.after["merged_into"] == paris.pk and event.source == "dashboard"
        assert MemoryEvent.objects.filter(memory=member, kind="created").exists()
        assert Association.objects.filter(source=paris, target=member, kind="supersedes").exists()
        assert superseded_by(member, ceiling=Classification.RESTRICTED) == paris.pk
    kept = MemoryEvent.objects.get(memory=paris, kind=MemoryEvent.Kind.MERGED)
    assert sorted(kept.after["merged"]) == [again.pk, now_.pk]
    secret.refresh_from_db()
    assert secret.valid_until is None
    assert Memory.objects.current(timezone.now()).filter(namespace=namespace).count() == 2
    assert services.near_duplicates_merge(keep=paris) == []  # nothing left to merge


@pytest.mark.django_db
def test_a_merge_leaves_out_a_member_that_already_replaces_the_kept_one(namespace, committed):
    """The merge added `supersedes` links without the cycle check every other path runs:
    a member that replaced the kept memory ended up replaced by it, a cycle."""
    with committed():
        paris = services.memory_create(namespace=namespace, content=PARIS)
        again = services.memory_create(namespace=namespace, content=PARIS_AGAIN)
        now_ = services.memory_create(namespace=namespace, content="The user lives in Paris now.")
    # `again` replaces `now_` (a link made by hand: both stay current).
    services.association_create(source=again, target=now_, kind="supersedes")
    ceiling = Classification.RESTRICTED
    # The page's list and the merge agree: `again` is not taken into `now_`.
    assert [m.pk for m in near_duplicates_of(now_, ceiling=ceiling)] == [paris.pk]
    merged = services.near_duplicates_merge(keep=now_)
    assert [m.pk for m in merged] == [paris.pk]
    again.refresh_from_db()
    assert again.valid_until is None
    assert not Association.objects.filter(source=now_, target=again, kind="supersedes").exists()


@pytest.mark.django_db
def test_the_sweep_merges_groups_where_the_namespace_refuses_near_duplicates(user):
    ns = services.namespace_create(owner=user, name="Was exact")
    weak = services.memory_create(namespace=ns, content=PARIS)
    strong = services.memory_create(namespace=ns, content=PARIS_AGAIN)
    third = services.memory_create(namespace=ns, content="The user lives in Paris now.")
    Memory.objects.filter(pk=strong.pk).update(strength=1.8)
    other = services.namespace_create(owner=user, name="Still exact")
    services.memory_create(namespace=other, content=PARIS)
    services.memory_create(namespace=other, content=PARIS_AGAIN)

    assert sweep_run(namespace=ns).merged == 0  # exact: groups are shown once, kept
    ns.dedupe = "near"
    ns.save(update_fields=["dedupe"])
    dry = sweep_run(dry_run=True)
    assert dry.merged == 2 and MemoryEvent.objects.filter(kind="merged").count() == 0
    report = sweep_run()
    assert report.merged == 2
    current = Memory.objects.current(timezone.now())
    assert list(current.filter(namespace=ns).values_list("pk", flat=True)) == [strong.pk]
    assert {weak.pk, third.pk} <= set(Memory.objects.values_list("pk", flat=True))
    assert current.filter(namespace=other).count() == 2
    assert sweep_run().merged == 0


# --- The worker's half -------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_worker_indexes_once_whatever_runs_twice(namespace):
    first = services.memory_create(namespace=namespace, content=PARIS)
    second = services.memory_create(namespace=namespace, content=PARIS_AGAIN)
    ids = [first.pk, second.pk]
    assert services.near_index_pending(ids, ceiling=Classification.RESTRICTED) == 2
    assert services.near_index_pending(ids, ceiling=Classification.RESTRICTED) == 0
    assert MemorySketch.objects.filter(memory_id__in=ids).count() == 2 * BANDS
    assert near_links(second.pk) == [(second.pk, first.pk, pytest.approx(0.8333, abs=1e-3))]


@pytest.mark.django_db
def test_the_worker_compares_only_with_what_the_writer_could_see(namespace):
    hidden = services.memory_create(
        namespace=namespace, content=PARIS, classification=Classification.RESTRICTED
    )
    services.near_index_pending([hidden.pk], ceiling=Classification.RESTRICTED)
    low = services.memory_create(namespace=namespace, content=PARIS_AGAIN)
    services.near_index_pending([low.pk], ceiling=Classification.INTERNAL)
    assert near_links(low.pk) == []


@pytest.mark.django_db
def test_the_sweep_indexes_what_a_lost_task_left(namespace):
    paris = services.memory_create(namespace=namespace, content=PARIS)
    again = services.memory_create(namespace=namespace, content=PARIS_AGAIN)
    forgotten = services.memory_create(namespace=namespace, content="Lunch is at noon.")
    services.memory_forget(memory=forgotten, reason="wrong")
    assert sweep_run(dry_run=True).sketched == 2
    assert not MemorySketch.objects.exists()
    report = sweep_run()
    assert report.sketched == 2
    assert [t for _s, t, _w in near_links(again.pk)] == [paris.pk]
    assert not MemorySketch.objects.filter(memory=forgotten).exists()
    assert sweep_run().sketched == 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite writers are serialised")
@pytest.mark.django_db(transaction=True)
def test_two_workers_indexing_at_once_still_link_across_their_batches(user):
    """Without the namespace's lock each would compare before the other's sketches are
    committed, and the pair between them would never be linked."""
    namespace = services.namespace_create(owner=user, name="Race")
    first = services.memory_create(namespace=namespace, content=PARIS)
    second = services.memory_create(namespace=namespace, content=PARIS_AGAIN)
    MemorySketch.objects.all().delete()  # as if both were still queued
    Association.objects.all().delete()
    barrier = threading.Barrier(2, timeout=10)

    def index(memory_id: int) -> None:
        try:
            barrier.wait()
            services.near_index_pending([memory_id], ceiling=Classification.RESTRICTED)
        finally:
            connection.close()

    threads = [threading.Thread(target=index, args=(pk,)) for pk in (first.pk, second.pk)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    links = Association.objects.filter(kind=services.NEAR_DUPLICATE)
    assert {frozenset(pair) for pair in links.values_list("source_id", "target_id")} == {
        frozenset({first.pk, second.pk})
    }
