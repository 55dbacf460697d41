"""Queueing background work (django-q2): the one way every app enqueues a task.

Tasks are named by dotted path, so a service enqueues without importing its task module
(tasks import services, never the other way round).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django_q.tasks import async_task

# Retried by django-q2 when they raise (Q_CLUSTER has ack_failures on for other tasks).
Q_OPTIONS: dict[str, Any] = {"ack_failure": False}


def enqueue(func: str, *args: Any) -> None:
    """Queue a task once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: async_task(func, *args, q_options=dict(Q_OPTIONS)))
