"""Embedding backfill: batches, retries with backoff, nothing lost on provider errors."""

from __future__ import annotations

from array import array

import pytest

from memories.models import BackgroundRun, Memory
from recall.backfill import BackfillError, embeddings_backfill, pending_embeddings

pytestmark = pytest.mark.django_db


class FakeEmbedder:
    """Vectors from text length; fails the first `failures` calls."""

    def __init__(self, model: str = "fake-1", failures: int = 0) -> None:
        self.model = model
        self.failures = failures
        self.calls: list[list[str]] = []

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.failures:
            self.failures -= 1
            raise ConnectionError("provider unreachable")
        return [[float(len(t)), 1.0, 0.5] for t in texts]


def vector(memory: Memory) -> list[float]:
    memory.refresh_from_db()
    return list(array("f", bytes(memory.embedding)))


def test_it_embeds_pending_live_memories_in_batches(remember):
    memories = [remember(f"memory number {n}") for n in range(5)]
    forgotten = remember("gone", status=Memory.Status.FORGOTTEN)
    embedder = FakeEmbedder()

    report = embeddings_backfill(embedder=embedder, batch_size=2)

    assert (report.embedded, report.batches) == (5, 3)
    assert [len(call) for call in embedder.calls] == [2, 2, 1]
    assert vector(memories[0]) == [float(len("memory number 0")), 1.0, 0.5]
    assert Memory.objects.get(pk=memories[4].pk).embedding_model == "fake-1"
    assert Memory.objects.get(pk=forgotten.pk).embedding is None
    assert not pending_embeddings(model="fake-1").exists()
    assert embeddings_backfill(embedder=embedder).embedded == 0


def test_vectors_of_another_model_are_replaced(remember):
    memory = remember("switching models")
    embeddings_backfill(embedder=FakeEmbedder("old"))

    report = embeddings_backfill(embedder=FakeEmbedder("new"))

    assert report.embedded == 1
    assert Memory.objects.get(pk=memory.pk).embedding_model == "new"


def test_max_batches_bounds_a_run(remember):
    for n in range(5):
        remember(f"m{n}")

    report = embeddings_backfill(embedder=FakeEmbedder(), batch_size=2, max_batches=1)

    assert report.embedded == 2
    assert pending_embeddings(model="fake-1").count() == 3


def test_provider_errors_are_retried_with_exponential_backoff(remember):
    remember("flaky")
    waits: list[float] = []

    report = embeddings_backfill(
        embedder=FakeEmbedder(failures=2), retries=3, backoff_seconds=1.5, sleep=waits.append
    )

    assert report.embedded == 1 and report.retries == 2
    assert waits == [1.5, 3.0]
    assert report.errors == ["ConnectionError: provider unreachable"] * 2


def test_when_retries_run_out_the_run_fails_and_no_memory_is_lost(remember):
    done = remember("first batch")
    stuck = remember("second batch")
    embedder = FakeEmbedder()
    original = embedder.embed_texts

    def fail_on_second(texts):
        if "second batch" in texts:
            raise TimeoutError("timed out")
        return original(texts)

    embedder.embed_texts = fail_on_second
    waits: list[float] = []

    with pytest.raises(BackfillError, match="failed 3 times") as raised:
        embeddings_backfill(
            embedder=embedder, batch_size=1, retries=2, backoff_seconds=1, sleep=waits.append
        )

    assert raised.value.counts["embedded"] == 1 and raised.value.counts["retries"] == 2
    assert waits == [1, 2]
    stuck.refresh_from_db()
    assert stuck.embedding is None and stuck.content == "second batch"
    assert Memory.objects.get(pk=done.pk).embedding is not None
    assert list(pending_embeddings(model="fake-1")) == [stuck]


@pytest.mark.parametrize(
    "bad",
    [[[1.0, 2.0]], [[1.0], [2.0, 3.0]], [[float("nan")], [1.0]], [[], []]],
    ids=["too few", "ragged", "nan", "empty"],
)
def test_unusable_vectors_count_as_provider_errors(remember, bad):
    remember("a")
    remember("b")

    class Bad(FakeEmbedder):
        def embed_texts(self, texts):
            return bad

    with pytest.raises(BackfillError):
        embeddings_backfill(embedder=Bad(), retries=0)
    assert Memory.objects.filter(embedding__isnull=False).count() == 0


def test_a_memory_edited_while_it_was_embedded_is_left_for_the_next_run(remember):
    memory = remember("before the edit")
    embedder = FakeEmbedder()
    original = embedder.embed_texts

    def edit_meanwhile(texts):
        Memory.objects.filter(pk=memory.pk).update(content="after the edit")
        return original(texts)

    embedder.embed_texts = edit_meanwhile

    report = embeddings_backfill(embedder=embedder)

    assert (report.embedded, report.skipped_changed) == (0, 1)
    assert Memory.objects.get(pk=memory.pk).embedding is None


# --- The task, through recall.embeddings' providers --------------------------------------


def test_the_task_does_nothing_without_an_embedding_provider(remember, settings):
    from recall.tasks import embedding_backfill

    settings.EMBEDDING_ENABLED = False
    remember("no vectors wanted")

    assert embedding_backfill() == {"skipped": "EMBEDDING_ENABLED is off"}
    assert not BackgroundRun.objects.exists()


def test_the_task_embeds_with_the_configured_provider_and_records_the_run(remember, settings):
    import numpy as np

    from recall import embeddings
    from recall.tasks import embedding_backfill

    class Provider:
        name = "bg-test"
        model = "bg-test-model"

        def embed(self, texts, *, kind, timeout):
            assert kind == "passage"
            return np.array([[3.0, 4.0] for _ in texts])

    embeddings.register_provider("bg-test", Provider)
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "bg-test"
    memory = remember("to embed")

    counts = embedding_backfill()

    assert counts["embedded"] == 1
    assert vector(memory) == pytest.approx([0.6, 0.8])  # recall.embeddings normalises
    run = BackgroundRun.objects.get()
    assert (run.kind, run.status, run.counts["embedded"]) == ("embedding_backfill", "ok", 1)


def test_a_provider_that_keeps_failing_is_reported_on_the_run(remember, settings):
    from recall import embeddings
    from recall.tasks import embedding_backfill

    class Down:
        name = "bg-down"
        model = "bg-down-model"

        def embed(self, texts, *, kind, timeout):
            raise OSError("connection refused")

    embeddings.register_provider("bg-down", Down)
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "bg-down"
    settings.EMBEDDING_BACKFILL_RETRIES = 1
    settings.EMBEDDING_BACKFILL_BACKOFF_SECONDS = 0
    memory = remember("waits for the provider")

    with pytest.raises(BackfillError):
        embedding_backfill()

    run = BackgroundRun.objects.get()
    assert run.status == "failed" and "connection refused" in run.error
    assert run.counts["retries"] == 1
    assert Memory.objects.get(pk=memory.pk).embedding is None
