"""django-q2 tasks of the review app: thin, recorded, retried (see memories.tasks)."""

from __future__ import annotations

from typing import Any

from config.queue import enqueue
from memories.models import BackgroundRun
from memories.tasks import run_recorded
from review.services.optimize import DEFAULT_SOURCES, namespace_optimize_run
from review.webhooks import review_due_webhooks_run
from review.worker import simulated_recall_run


def simulated_recall(namespace_id: int | None = None) -> dict[str, Any]:
    """Scheduled: the simulated recall worker over agent namespaces (seed 000)."""
    return run_recorded(
        BackgroundRun.Kind.SIMULATED_RECALL,
        lambda: simulated_recall_run(namespace=namespace_id).counts(),
        namespace_id=namespace_id,
    )


def simulated_recall_enqueue(*, namespace_id: int | None = None) -> None:
    """Ask the worker for a simulated recall pass after the current transaction commits."""
    enqueue("review.tasks.simulated_recall", namespace_id)


def review_due_webhooks() -> dict[str, Any]:
    """Scheduled: review.due to the webhooks of namespaces with due cards, once a day."""
    return review_due_webhooks_run()


def fsrs_optimize(
    namespace_id: int, ceiling: int | None = None, sources: list[str] | None = None
) -> dict[str, Any]:
    """Queued by namespace_optimize for large histories: fit the namespace's FSRS parameters
    and record the outcome on it (running, then done or failed). Running it again refits."""
    return namespace_optimize_run(
        namespace_id=namespace_id,
        ceiling=ceiling,
        sources=sources if sources is not None else DEFAULT_SOURCES,
    )
