"""Writes to review state: cards and their scheduling."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from memories.models import Memory
from review.models import Card


def card_ensure(*, memory: Memory) -> Card:
    """The memory's card, created as a new card with the namespace's scheduler if missing."""
    card, _ = Card.objects.get_or_create(
        memory=memory,
        defaults={"namespace_id": memory.namespace_id, "scheduler": memory.namespace.scheduler},
    )
    return card


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
    return Card.objects.filter(memory_id__in=[pk for pk, _, _ in rows]).update(next_review=now)
