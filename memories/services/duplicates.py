"""Exact duplicates: a namespace that dedupes answers a second copy of a text with the
memory that holds it (memories.services.memories uses these on create and bulk create)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import F, Q
from django.utils import timezone

from config.db import lock_keys
from memories.bulk import insert_rows
from memories.models import LIVE_STATUSES, Memory, MemoryEvent
from memories.services.events import EVENT_COLUMNS
from memories.services.uses import uses_record


def duplicates_lock(keys: Iterable[tuple[int, str]]) -> None:
    """Hold the lock of each (namespace id, content key) until the transaction ends, so two
    writers of one text do not both find no duplicate and both store it."""
    lock_keys(f"content:{ns}:{key}" for ns, key in keys)


def live_duplicates(
    keys: Iterable[tuple[int, str]],
    *,
    ceiling: int,
    now: datetime | None = None,
) -> dict[tuple[int, str], Memory]:
    """The oldest live, unexpired memory at or below `ceiling` holding each (namespace id,
    content key) that is current (not superseded at `now`: a fact that stopped being true
    is no answer to a write saying it again), in one query on the index
    memory_ns_content_key."""
    wanted: dict[int, set[str]] = {}
    for ns, key in keys:
        wanted.setdefault(ns, set()).add(key)
    if not wanted:
        return {}
    match = Q()
    for ns, ns_keys in wanted.items():
        match |= Q(namespace_id=ns, content_key__in=sorted(ns_keys))
    found: dict[tuple[int, str], Memory] = {}
    now = now or timezone.now()
    candidates = (
        Memory.objects.filter(match, status__in=LIVE_STATUSES, classification__lte=ceiling)
        .unexpired(now)
        .current(now)
    )
    candidates = candidates.select_related("namespace").order_by("-id")
    for memory in candidates:  # the oldest last, so it stays
        found[(memory.namespace_id, memory.content_key)] = memory
    return found


def count_duplicate_uses(uses: dict[Memory, int], *, actor, source: str) -> None:
    """Count each duplicate as a use of the memory it is (as memory_touch does), set-based:
    one UPDATE per distinct count, one read back, the 'touched' events in one insert."""
    now = timezone.now()
    by_count: dict[int, list[int]] = {}
    for memory, count in uses.items():
        by_count.setdefault(count, []).append(memory.pk)
    for count, ids in by_count.items():
        Memory.objects.filter(pk__in=ids).update(use_count=F("use_count") + count, last_used_at=now)
        uses_record(ids, now=now)
    fresh = dict(Memory.objects.filter(pk__in=[m.pk for m in uses]).values_list("pk", "use_count"))
    actor_id = actor.pk if actor is not None else None
    rows = []
    for memory, count in uses.items():
        memory.use_count, memory.last_used_at = fresh[memory.pk], now
        after = {"use_count": memory.use_count, "deduplicated": count}
        rows.append(
            (
                memory.namespace_id,
                memory.pk,
                memory.pk,
                MemoryEvent.Kind.TOUCHED,
                after,
                actor_id,
                source,
                memory.classification,
                now,
            )
        )
    insert_rows(MemoryEvent, EVENT_COLUMNS, rows)
