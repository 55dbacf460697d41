"""Se's two steps: sign codes written with the vectors, Hamming ranking, exact re-rank.

Run on the engine of the suite (SQLite and PostgreSQL in CI): the code ranking is SQL on
each (bit_count over bit varying on PostgreSQL, a registered function on SQLite).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories import services
from memories.bulk import insert_rows
from memories.models import Classification, Memory
from recall import stages, vectorcodes
from recall.embeddings import embed_pending
from recall.models import EmbeddingCode
from tests.recall.fixtures.helpers import make_recall, requires_numpy

pytestmark = [pytest.mark.django_db, requires_numpy]
np = pytest.importorskip("numpy")

MODEL = "test-vectors-v1"
DIM = 384


def unit(vector):
    vector = np.asarray(vector, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def clustered(rng, clusters: int, per_cluster: int, noise: float = 1.0):
    """Unit vectors around random centres, and the centres."""
    centres = rng.standard_normal((clusters, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    offsets = rng.standard_normal((clusters * per_cluster, DIM)).astype(np.float32)
    offsets *= noise / np.linalg.norm(offsets, axis=1, keepdims=True)
    vectors = np.repeat(centres, per_cluster, axis=0) + offsets
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), centres


def store(namespace, vectors, *, model: str = MODEL, **fields) -> list[int]:
    """Memories with these vectors and their codes, written in bulk; their ids."""
    now = timezone.now()
    names = ["namespace_id", "content", "search_text", "created_at", "embedding"]
    names += ["embedding_model", *fields]
    rows = [
        (namespace.pk, f"vector {i}", f"vector {i}", now, unit(v).tobytes(), model)
        + tuple(fields.values())
        for i, v in enumerate(vectors)
    ]
    ids = insert_rows(Memory, names, rows, ids=True)
    vectorcodes.write_codes(
        (memory_id, namespace.pk, model, row[4]) for memory_id, row in zip(ids, rows, strict=True)
    )
    return ids


def give_vector(memory: Memory, vector, *, model: str = MODEL) -> None:
    blob = unit(vector).tobytes()
    Memory.objects.filter(pk=memory.pk).update(embedding=blob, embedding_model=model)
    vectorcodes.write_codes([(memory.pk, memory.namespace_id, model, blob)])


def filters_for(*namespaces, ceiling=Classification.RESTRICTED, **more) -> stages.RecallFilters:
    return stages.RecallFilters(
        namespace_ids=tuple(n.pk for n in namespaces), ceiling=ceiling, now=timezone.now(), **more
    )


def search(query, filters, *, limit=5, rerank=10, model=MODEL, threshold=-1.0):
    return stages.embedding_search(
        query, filters, model=model, threshold=threshold, limit=limit, rerank=rerank
    )


def exact(namespace_vectors: dict[int, np.ndarray], query, limit: int) -> list[int]:
    ids = list(namespace_vectors)
    matrix = np.stack([unit(namespace_vectors[i]) for i in ids])
    order = np.argsort(-(matrix @ unit(query)), kind="stable")[:limit]
    return [ids[i] for i in order]


# --- codes -------------------------------------------------------------------------------


def test_a_sign_code_has_one_bit_per_dimension_set_where_the_component_is_positive():
    vector = [0.5, -1.0, 0.0, 2.0, -0.1, 0.3, 0.2, -3.0, 1.0]
    assert vectorcodes.sign_code(vector) == bytes([0b10010110, 0b10000000])
    assert vectorcodes.sign_code(np.asarray(vector) * 7) == vectorcodes.sign_code(vector)
    blobs = [np.asarray(vector, dtype=np.float32).tobytes(), b"", b"\x00\x01"]
    assert vectorcodes.sign_codes(blobs) == [vectorcodes.sign_code(vector), None, None]
    assert len(vectorcodes.sign_code(np.ones(384))) == 48


def test_codes_round_trip_through_the_database(namespace, make_memory):
    memory = make_memory("round trip")
    code = bytes(range(48))
    EmbeddingCode.objects.create(memory=memory, namespace=namespace, model=MODEL, code=code)
    assert EmbeddingCode.objects.get(memory=memory).code == code


def test_embed_pending_writes_a_code_with_each_vector(make_memory):
    car = make_memory("My car needs new tyres before winter")
    dog = make_memory("The dog chases the postman")
    assert embed_pending(provider="fake") == 2
    for memory in (car, dog):
        memory.refresh_from_db()
        code = EmbeddingCode.objects.get(memory=memory)
        assert (code.model, code.namespace_id) == ("fake-v1", memory.namespace_id)
        assert code.code == vectorcodes.sign_code(np.frombuffer(memory.embedding, np.float32))


def test_the_backfill_writes_a_code_with_each_vector(make_memory):
    from recall.backfill import embeddings_backfill

    class Embedder:
        model = "backfill-v1"

        def embed_texts(self, texts):
            return [[1.0, -2.0, 3.0] for _ in texts]

    memory = make_memory("to embed")
    embeddings_backfill(embedder=Embedder())
    code = EmbeddingCode.objects.get(memory=memory)
    assert (code.model, code.code) == ("backfill-v1", bytes([0b10100000]))


def test_imported_vectors_get_their_codes(user, namespace, make_memory):
    from memories.importer import namespace_import
    from memories.transfer import namespace_export

    memory = make_memory("exported with its vector")
    give_vector(memory, [1.0, -1.0, 1.0, -1.0])
    lines = list(namespace_export(namespace=namespace, ceiling=Classification.RESTRICTED))
    copy = services.namespace_create(owner=user, name="Copy")
    result = namespace_import(namespace=copy, lines=lines)
    code = EmbeddingCode.objects.get(memory_id=result.memories[memory.pk])
    assert (code.namespace_id, code.model, code.code) == (copy.pk, MODEL, bytes([0b10100000]))


def test_sync_codes_adds_missing_codes_and_drops_stale_ones(namespace, make_memory):
    vector = unit([1.0, -1.0, 1.0])
    missing = make_memory("a vector written without its code")
    Memory.objects.filter(pk=missing.pk).update(embedding=vector.tobytes(), embedding_model=MODEL)
    changed = make_memory("a vector that will be cleared")
    give_vector(changed, vector)
    services.memory_update(memory=changed, changes={"content": "new words: the vector is cleared"})
    other_model = make_memory("re-embedded by another model")
    give_vector(other_model, vector)
    Memory.objects.filter(pk=other_model.pk).update(embedding_model="other-v2")

    assert vectorcodes.sync_codes() == 2
    assert vectorcodes.sync_codes() == 0
    codes = {c.memory_id: c.model for c in EmbeddingCode.objects.all()}
    assert codes == {missing.pk: MODEL, other_model.pk: "other-v2"}


# --- the two steps -----------------------------------------------------------------------


def test_the_two_steps_find_the_exact_nearest_neighbours(namespace):
    rng = np.random.default_rng(3)
    vectors, centres = clustered(rng, clusters=40, per_cluster=10)
    ids = store(namespace, vectors)
    by_id = dict(zip(ids, vectors, strict=True))
    filters = filters_for(namespace)
    for centre in centres[:10]:
        query = unit(centre + 0.8 * unit(rng.standard_normal(DIM)))
        # keep = 50 of 400 memories: the codes' ranking prunes, the cosine ranks.
        hits = search(query, filters, limit=5, rerank=10)
        assert [memory_id for memory_id, _ in hits] == exact(by_id, query, 5)
        for memory_id, score in hits:
            assert score == pytest.approx(float(unit(by_id[memory_id]) @ query), abs=1e-5)


def test_the_threshold_and_the_limit_apply_to_the_exact_cosine(namespace):
    ids = store(namespace, [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 0, 1]])
    hits = search([1, 0, 0, 0], filters_for(namespace), limit=3, threshold=0.6)
    assert [memory_id for memory_id, _ in hits] == ids[:2]
    assert [round(score, 3) for _, score in hits] == [1.0, 0.707]
    assert len(search([1, 0, 0, 0], filters_for(namespace), limit=2)) == 2


def test_hidden_memories_never_leak_even_when_their_codes_are_nearest(namespace, user, make_memory):
    """The nearest codes all belong to memories the filters hide, more of them than the
    first step looks at: the filtered fallback must still find the visible ones."""
    rng = np.random.default_rng(5)
    query = unit(rng.standard_normal(DIM))
    near = [unit(query + 0.3 * unit(rng.standard_normal(DIM))) for _ in range(60)]
    far = [unit(rng.standard_normal(DIM)) for _ in range(5)]
    hidden = set()
    hidden |= set(store(namespace, near[:10], classification=Classification.RESTRICTED))
    hidden |= set(store(namespace, near[10:20], status=Memory.Status.FORGOTTEN))
    hidden |= set(store(namespace, near[20:30], status=Memory.Status.ARCHIVED))
    hidden |= set(store(namespace, near[30:40], storage=Memory.Storage.COLD))
    past = timezone.now() - timedelta(days=1)
    hidden |= set(store(namespace, near[40:50], expires_at=past))
    other = services.namespace_create(owner=user, name="Other")
    hidden |= set(store(other, near[50:60]))
    visible = store(namespace, far)

    filters = filters_for(namespace, ceiling=Classification.CONFIDENTIAL)
    found = [memory_id for memory_id, _ in search(query, filters, limit=3, rerank=1)]
    assert len(found) == 3 and set(found) <= set(visible)
    assert not hidden & {m for m, _ in search(query, filters, limit=100, rerank=10)}
    # Each filter on its own lets its memories through again.
    both = filters_for(namespace, other)
    assert hidden & {m for m, _ in search(query, both, limit=100)}


def test_topic_tier_and_time_filters_apply(namespace, make_memory):
    query = unit(np.arange(1, 9, dtype=np.float32))
    on_topic = make_memory("on topic", topic="cars", tier="core")
    off_topic = make_memory("off topic", topic="dogs")
    for memory in (on_topic, off_topic):
        give_vector(memory, query)
    found = search(query, filters_for(namespace, topic="cars"))
    assert [m for m, _ in found] == [on_topic.pk]
    assert [m for m, _ in search(query, filters_for(namespace, tier="core"))] == [on_topic.pk]
    later = timezone.now() + timedelta(hours=1)
    assert search(query, filters_for(namespace, time_start=later)) == []


def test_vectors_of_another_model_or_length_are_ignored(namespace, make_memory):
    query = unit(np.arange(1, 17, dtype=np.float32))
    same = make_memory("same model")
    give_vector(same, query)
    other_model = make_memory("other model")
    give_vector(other_model, query, model="other-v1")
    other_length = make_memory("same model name, other length")
    give_vector(other_length, np.arange(1, 33, dtype=np.float32))
    stale = make_memory("code of the old model, vector of a new one")
    give_vector(stale, query)
    Memory.objects.filter(pk=stale.pk).update(embedding_model="other-v2")

    assert [m for m, _ in search(query, filters_for(namespace))] == [same.pk]
    assert search(query, filters_for(namespace), model="missing-v1") == []


def test_se_in_the_pipeline_reads_codes(namespace, make_memory, settings):
    """The pipeline's Se goes through the codes: the same vectors without codes find nothing
    (tests/recall/test_stages.py checks what Se finds)."""
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "fake"
    settings.EMBEDDING_SIMILARITY_THRESHOLD = 0.3
    car = make_memory("My car needs new tyres before winter")
    make_memory("The dog chases the postman")
    embed_pending(provider="fake")
    recall = make_recall(namespace)
    assert [hit.memory_id for hit in recall("automobile").results] == [car.pk]

    EmbeddingCode.objects.filter(memory=car).delete()
    assert recall("automobile").results == []
    EmbeddingCode.objects.all().delete()  # no code, no Se hit: the codes are read
    assert recall("automobile").results == []
