"""django-q2 task of the recall app: the embedding backfill (thin; see memories.tasks)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from config.queue import enqueue
from memories.models import BackgroundRun
from memories.tasks import run_recorded
from recall.backfill import embeddings_backfill
from recall.embeddings import embed_texts, get_provider
from recall.termstats import refresh
from recall.vectorcodes import sync_codes

# One provider call may embed a whole batch on a small CPU: far beyond a query's budget.
BATCH_TIMEOUT_SECONDS = 60.0


class ProviderEmbedder:
    """recall.embeddings' configured provider, seen through recall.backfill.Embedder."""

    def __init__(self, provider: str | None = None) -> None:
        self.provider = get_provider(provider)
        self.model = self.provider.model

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        timeout = max(settings.EMBEDDING_TIMEOUT, BATCH_TIMEOUT_SECONDS)
        return embed_texts(texts, kind="passage", provider=self.provider, timeout=timeout).tolist()


def embedding_backfill(namespace_id: int | None = None) -> dict[str, Any]:
    """Scheduled while EMBEDDING_ENABLED: give pending memories their vectors, in batches."""
    if not settings.EMBEDDING_ENABLED:
        return {"skipped": "EMBEDDING_ENABLED is off"}

    def work() -> dict[str, Any]:
        counts = embeddings_backfill(
            embedder=ProviderEmbedder(),
            namespace=namespace_id,
            batch_size=settings.EMBEDDING_BACKFILL_BATCH,
            max_batches=settings.EMBEDDING_BACKFILL_MAX_BATCHES,
            retries=settings.EMBEDDING_BACKFILL_RETRIES,
            backoff_seconds=settings.EMBEDDING_BACKFILL_BACKOFF_SECONDS,
            # Stop well inside Q_TIMEOUT, or the worker would kill the run mid-batch.
            time_budget_seconds=settings.Q_TIMEOUT / 2,
        ).counts()
        # Vectors written by any other path get the sign code Se ranks first.
        counts["codes_written"] = sync_codes(
            namespace_ids=None if namespace_id is None else [namespace_id]
        )
        return counts

    return run_recorded(BackgroundRun.Kind.EMBEDDING_BACKFILL, work, namespace_id=namespace_id)


def embedding_backfill_enqueue(*, namespace_id: int | None = None) -> None:
    """Ask the worker for a backfill pass after the current transaction commits."""
    enqueue("recall.tasks.embedding_backfill", namespace_id)


def term_stats_refresh(namespace_id: int | None = None) -> dict[str, Any]:
    """Scheduled: recompute the full-text statistics of large, changed namespaces."""
    return run_recorded(
        BackgroundRun.Kind.TERM_STATS,
        lambda: refresh(namespace=namespace_id).counts(),
        namespace_id=namespace_id,
    )
