from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from memories import services as memory_services
from memories.models import Memory, MemoryEvent, Namespace

# A Monday noon, so weeks and quarters have obvious boundaries around it.
NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)

requires_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs concurrent transactions and row locks: run with a PostgreSQL DATABASE_URL",
)


@pytest.fixture
def remember(namespace):
    """remember(content, days_ago=..., **columns): a memory with its state set directly.

    days_ago is the age of its last use at NOW; any other Memory column can be given.
    """

    count = itertools.count(1)

    def make(
        content: str = "",
        *,
        days_ago: float = 0.0,
        namespace: Namespace | None = None,
        created_at: datetime | None = None,
        **columns,
    ) -> Memory:
        memory = memory_services.memory_create(
            namespace=namespace or namespace_default,
            # each its own text: the namespace would answer a second copy with the first
            content=content or f"A remembered fact, number {next(count)}.",
            created_at=created_at or NOW - timedelta(days=max(days_ago, 0) + 1),
        )
        columns.setdefault("last_used_at", NOW - timedelta(days=days_ago))
        Memory.objects.filter(pk=memory.pk).update(**columns)
        memory.refresh_from_db()
        return memory

    namespace_default = namespace
    return make


def state(memory: Memory) -> tuple[str, str, str]:
    """(status, tier, storage) as stored now."""
    return tuple(Memory.objects.filter(pk=memory.pk).values_list("status", "tier", "storage").get())


def sweep_events(memory: Memory | None = None):
    events = MemoryEvent.objects.filter(source="sweep")
    return events if memory is None else events.filter(memory_ref=memory.pk)
