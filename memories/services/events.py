"""A memory's history: the event every write records, and the snapshot it carries."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.utils import timezone

from memories.bulk import insert_rows
from memories.models import Classification, Memory, MemoryEvent
from memories.services.fields import SNAPSHOT_FIELDS
from memories.services.webhooks import memory_event_rows_announce, memory_events_announce


def memory_snapshot(memory: Memory, fields: Iterable[str] = SNAPSHOT_FIELDS) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for field in fields:
        value = getattr(memory, field)
        if field == "classification":
            value = Classification(value).label
        elif isinstance(value, datetime):
            value = value.isoformat()
        data[field] = value
    return data


def memory_event_record(
    *,
    memory: Memory,
    kind: str,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    actor=None,
    source: str = "system",
    now: datetime | None = None,
    classification: int | None = None,
) -> MemoryEvent:
    """One history event. It carries the memory's level as it is written (or the higher
    level of a change of level): what is written while a memory sits above a caller's
    ceiling stays hidden from that caller, whatever the memory's level later. Its webhooks
    are addressed in the same transaction (memories.services.webhooks)."""
    event = MemoryEvent(
        namespace_id=memory.namespace_id,
        memory=memory,
        memory_ref=memory.pk,
        kind=kind,
        before=before or {},
        after=after or {},
        actor=actor,
        source=source,
        classification=memory.classification if classification is None else classification,
        created_at=now or timezone.now(),
    )
    return memory_events_save([event])[0]


def memory_events_save(events: list[MemoryEvent]) -> list[MemoryEvent]:
    """Save new history events in one INSERT and address their webhooks in the same
    transaction: memory_event_record for several at once."""
    saved = MemoryEvent.objects.bulk_create(events)
    memory_events_announce(saved)
    return saved


EVENT_COLUMNS = (
    "namespace_id",
    "memory_id",
    "memory_ref",
    "kind",
    "after",
    "actor_id",
    "source",
    "classification",
    "created_at",
)


def created_event_rows(memories: Iterable[Memory], actor, source: str) -> list[tuple]:
    actor_id = actor.pk if actor is not None else None
    return [
        (
            memory.namespace_id,
            memory.pk,
            memory.pk,
            MemoryEvent.Kind.CREATED,
            memory_snapshot(memory),
            actor_id,
            source,
            memory.classification,
            memory.created_at,
        )
        for memory in memories
    ]


def memory_events_insert(rows: list[tuple]) -> None:
    """Insert history rows of EVENT_COLUMNS set-based (the bulk path), with their webhooks."""
    insert_rows(MemoryEvent, EVENT_COLUMNS, rows)
    memory_event_rows_announce(rows, EVENT_COLUMNS)
