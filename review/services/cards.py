"""Card creation: a card per memory of a personal namespace, per live memory on request;
due-now rescheduling, suspending and burying, each one UPDATE over a set of memories."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from memories.bulk import insert_rows
from memories.models import LIVE_STATUSES, Memory, Namespace
from review.models import Card


def card_ensure(*, memory: Memory) -> Card:
    """The memory's card, created as a new card with the namespace's scheduler if missing."""
    card, _ = Card.objects.get_or_create(
        memory=memory,
        defaults={"namespace_id": memory.namespace_id, "scheduler": memory.namespace.scheduler},
    )
    return card


def card_create_for_new_memory(*, memory: Memory) -> Card | None:
    """A personal namespace reviews every memory, so its new memories get a card at once;
    agent namespaces get theirs from the recall worker, any memory on request."""
    if not _reviews_every_memory(memory.namespace):
        return None
    return card_ensure(memory=memory)


def _reviews_every_memory(namespace: Namespace) -> bool:
    return namespace.mode == Namespace.Mode.PERSONAL


def cards_create_for_new_memories(*, memories: list[Memory]) -> int:
    """Cards for the new memories of personal namespaces, in one bulk insert."""
    rows = [
        (memory.pk, memory.namespace_id, memory.namespace.scheduler)
        for memory in memories
        if _reviews_every_memory(memory.namespace)
    ]
    insert_rows(Card, ("memory_id", "namespace_id", "scheduler"), rows)
    return len(rows)


@transaction.atomic
def cards_create_for_namespace(*, namespace: Namespace, now: datetime | None = None) -> int:
    """Give every live memory of the namespace a new card, in one INSERT ... SELECT.

    Returns how many cards were created; memories that already have one are skipped, so
    it is safe to run twice or concurrently.
    """
    now = now or timezone.now()
    qn = connection.ops.quote_name
    card_table, memory_table = qn(Card._meta.db_table), qn(Memory._meta.db_table)
    columns: list[str] = []
    values: list[str] = []
    params: list[Any] = []
    # Every other column takes its model default, so a field added later is covered.
    for model_field in Card._meta.concrete_fields:
        if model_field.primary_key:
            continue
        columns.append(qn(model_field.column))
        if model_field.name == "memory":
            values.append("m.id")
            continue
        if model_field.name == "namespace":
            values.append("m.namespace_id")
            continue
        if getattr(model_field, "auto_now", False) or getattr(model_field, "auto_now_add", False):
            value = now
        else:
            value = {"scheduler": namespace.scheduler, "created_at": now}.get(
                model_field.name, model_field.get_default()
            )
        values.append("%s")
        params.append(model_field.get_db_prep_save(value, connection))
    statuses = ", ".join(["%s"] * len(LIVE_STATUSES))
    sql = (
        f"INSERT INTO {card_table} ({', '.join(columns)}) "
        f"SELECT {', '.join(values)} FROM {memory_table} m "
        f"WHERE m.namespace_id = %s AND m.status IN ({statuses}) "
        f"AND NOT EXISTS (SELECT 1 FROM {card_table} c WHERE c.memory_id = m.id) "
        "ON CONFLICT DO NOTHING"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, namespace.pk, *[str(s) for s in LIVE_STATUSES]])
        return max(cursor.rowcount, 0)


@transaction.atomic
def card_reschedule_now(*, memories: QuerySet[Memory], now: datetime | None = None) -> int:
    """Make the memories' cards due now, creating missing cards in one bulk insert."""
    now = now or timezone.now()
    rows = list(memories.values_list("pk", "namespace_id", "namespace__scheduler"))
    existing = set(
        Card.objects.filter(memory_id__in=[pk for pk, _, _ in rows]).values_list(
            "memory_id", flat=True
        )
    )
    Card.objects.bulk_create(
        [
            Card(memory_id=pk, namespace_id=ns, scheduler=scheduler, created_at=now)
            for pk, ns, scheduler in rows
            if pk not in existing
        ]
    )
    # A version bump: a grade computed before this change must not overwrite it.
    return Card.objects.filter(memory_id__in=[pk for pk, _, _ in rows]).update(
        next_review=now, version=F("version") + 1
    )


def _update_cards(memories: QuerySet[Memory], **values: Any) -> int:
    # A version bump: a grade computed before this change must not overwrite it.
    return Card.objects.filter(memory__in=memories).update(version=F("version") + 1, **values)


@transaction.atomic
def cards_suspend(*, memories: QuerySet[Memory], now: datetime | None = None) -> int:
    """Suspend the memories' cards: review never shows them until they are unsuspended.
    Memories without a card have nothing to suspend. Returns how many cards changed."""
    return _update_cards(
        memories.filter(card__suspended_at__isnull=True), suspended_at=now or timezone.now()
    )


@transaction.atomic
def cards_unsuspend(*, memories: QuerySet[Memory], clear_leech: bool = False) -> int:
    """Bring suspended cards back to review. A leech keeps its tag unless `clear_leech`:
    the person rewrote it, so its lapses start over."""
    if clear_leech:
        return _update_cards(
            memories.filter(Q(card__suspended_at__isnull=False) | Q(card__leech=True)),
            suspended_at=None,
            leech=False,
            lapses=0,
        )
    return _update_cards(memories.filter(card__suspended_at__isnull=False), suspended_at=None)


@transaction.atomic
def cards_bury(*, memories: QuerySet[Memory], until: datetime) -> int:
    """Keep the memories' cards out of review until `until` (the start of tomorrow)."""
    return _update_cards(memories, buried_until=until)


@transaction.atomic
def cards_unbury(*, memories: QuerySet[Memory]) -> int:
    return _update_cards(memories.filter(card__buried_until__isnull=False), buried_until=None)
