"""Stage Se (recall.stages.embeddings): the query embedding, the two steps (Hamming ranking
of the sign codes, exact cosine re-rank) and what the pipeline does when the provider fails.

Run on the engine of the suite (SQLite and PostgreSQL in CI): the code ranking is SQL on
each (bit_count over bit varying on PostgreSQL, a registered function on SQLite).
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from memories import services
from memories.models import Classification, Memory
from recall.embeddings import embed_pending
from recall.models import EmbeddingCode
from recall.stages.embeddings import embedding_search
from recall.stages.filters import RecallFilters
from tests.recall.fixtures.helpers import GatedProvider, ids, make_recall, requires_numpy
from tests.recall.fixtures.vectors import DIM, MODEL, give_vector, store, unit

pytestmark = [pytest.mark.django_db, requires_numpy]


def clustered(rng, clusters: int, per_cluster: int, noise: float = 1.0):
    """Unit vectors around random centres, and the centres."""
    centres = rng.standard_normal((clusters, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    offsets = rng.standard_normal((clusters * per_cluster, DIM)).astype(np.float32)
    offsets *= noise / np.linalg.norm(offsets, axis=1, keepdims=True)
    vectors = np.repeat(centres, per_cluster, axis=0) + offsets
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), centres


def filters_for(*namespaces, ceiling=Classification.RESTRICTED, **more) -> RecallFilters:
    return RecallFilters(
        namespace_ids=tuple(n.pk for n in namespaces), ceiling=ceiling, now=timezone.now(), **more
    )


def search(query, filters, *, limit=5, rerank=10, model=MODEL, threshold=-1.0):
    return embedding_search(
        query, filters, model=model, threshold=threshold, limit=limit, rerank=rerank
    )


def exact(namespace_vectors: dict[int, np.ndarray], query, limit: int) -> list[int]:
    memory_ids = list(namespace_vectors)
    matrix = np.stack([unit(namespace_vectors[i]) for i in memory_ids])
    order = np.argsort(-(matrix @ unit(query)), kind="stable")[:limit]
    return [memory_ids[i] for i in order]


# --- in the pipeline -------------------------------------------------------------------------


@requires_numpy
def test_embedding_stage_finds_what_full_text_cannot(recall, make_memory, settings):
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "fake"
    settings.EMBEDDING_SIMILARITY_THRESHOLD = 0.3
    car = make_memory("My car needs new tyres before winter")
    make_memory("The dog chases the postman")
    embed_pending(provider="fake")
    result = recall("automobile")
    assert ids(result) == [car.pk]
    assert result.results[0].stages == ["Se"]
    assert result.stage_timings["Se"]["skipped"] is False


@requires_numpy
def test_embedding_stage_is_skipped_with_a_warning_when_the_provider_is_down(
    recall, make_memory, settings
):
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "broken"
    make_memory("My car needs new tyres before winter")
    result = recall("automobile")
    assert result.stage_timings["Se"]["skipped"] is True
    assert any(w.startswith("Se skipped") for w in result.warnings)


@requires_numpy
def test_embedding_stage_is_skipped_when_the_provider_is_slow(recall, make_memory, settings):
    """The pipeline answers without the embedding: the provider is still held when it does
    (it finishes only once the gate opens, after the recall has returned)."""
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "gated"
    settings.EMBEDDING_QUERY_BUDGET_MS = 50
    make_memory("My car needs new tyres before winter")
    GatedProvider.close()
    try:
        result = recall("automobile")
        assert not GatedProvider.finished.is_set()
    finally:
        GatedProvider.gate.set()
    if GatedProvider.started.is_set():  # else the budget ran out before the thread picked it up
        assert GatedProvider.finished.wait(timeout=10)
    assert result.stage_timings["Se"]["skipped"] is True
    assert "slower than 50 ms" in result.stage_timings["Se"]["reason"]


def test_se_in_the_pipeline_reads_codes(namespace, make_memory, settings):
    """The pipeline's Se goes through the codes: the same vectors without codes find nothing
    (the tests above check what Se finds)."""
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
