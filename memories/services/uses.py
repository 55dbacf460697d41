"""The use log (MemoryUse): one row per use of a memory, what decay fitting learns from.

Every writer of a use in seed 003's sense (use_count up, decay clock restarted) calls
uses_record right after its UPDATE, in the same transaction: recall's direct hits
(memories.tracking, which on PostgreSQL folds the two into one statement with
USES_INSERT_FROM), memory_touch, a deduplicated create and Keep on the about-to-forget
digest. The sweep prunes rows older than DECAY_FIT_HISTORY_DAYS (uses_prune).

A use is also what brings a memory out of cold storage: every writer of a use other than
recall's direct hits (which only reach hot memories) calls uses_reactivate with the same
ids, so a cold memory that is used again is found by recall's fast stages again. Recall's
associative hits come back through it too (memories.tracking, `via: association`): it is
the one writer of 'reactivated' events.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction

from memories.models import LIVE_STATUSES, Memory, MemoryEvent, MemoryUse

# INSERT INTO the log from rows (namespace_id, id, use_count) named `source`; one
# parameter: the moment of the use.
USES_INSERT_FROM = (
    f"INSERT INTO {MemoryUse._meta.db_table} (namespace_id, memory_ref, used_at, use_count) "
    "SELECT namespace_id, id, %s, use_count FROM {source}"
)


def uses_record(ids: Collection[int], *, now: datetime) -> int:
    """Log a use at `now` of each memory of `ids`, with its use_count as it now stands: one
    INSERT ... SELECT, whatever the number of ids."""
    if not ids:
        return 0
    marks = ", ".join(["%s"] * len(ids))
    source = f"{Memory._meta.db_table} WHERE id IN ({marks})"
    with connection.cursor() as cursor:
        cursor.execute(
            USES_INSERT_FROM.format(source=source),
            [connection.ops.adapt_datetimefield_value(now), *ids],
        )
        return cursor.rowcount


def uses_prune(*, now: datetime) -> int:
    """Delete the uses older than DECAY_FIT_HISTORY_DAYS (one statement)."""
    cutoff = now - timedelta(days=settings.DECAY_FIT_HISTORY_DAYS)
    deleted, _ = MemoryUse.objects.filter(used_at__lt=cutoff).delete()
    return deleted


def uses_reactivate(
    ids: Collection[int],
    *,
    now: datetime,
    actor=None,
    source: str = "system",
    via: str = "use",
) -> list[int]:
    """Bring the live cold memories of `ids` back to hot storage, with a 'reactivated'
    event each (`via`: "use", or "association" for recall's associative hits); the ids it
    moved. The one writer of reactivations: touch, Keep, a deduplicated write, a person's
    passing grade and recall tracking.

    A cold memory is one the sweep found at its floor and unused (memories.sweep, rule
    cold); a use (touch, Keep, a duplicate written again, a person's passing grade) proves
    the contrary, and without this it stayed cold for good: recall's fast stages skip cold
    memories and no sweep rule warms a used one. Set-based: one locking read, one UPDATE,
    one INSERT of events. Archived memories (cold too) are not live and stay as they are.
    """
    if not ids:
        return []
    with transaction.atomic():
        return _reactivate(ids, now=now, actor=actor, source=source, via=via)


def _reactivate(ids: Collection[int], *, now: datetime, actor, source: str, via: str) -> list[int]:
    from memories.services.events import memory_events_save  # events imports webhooks

    rows = list(
        Memory.objects.select_for_update()
        .filter(pk__in=list(ids), storage=Memory.Storage.COLD, status__in=LIVE_STATUSES)
        .order_by("pk")
        .values_list("pk", "namespace_id", "classification")
    )
    if not rows:
        return []
    moved = [pk for pk, _, _ in rows]
    Memory.objects.filter(pk__in=moved).update(storage=Memory.Storage.HOT, updated_at=now)
    actor = actor if getattr(actor, "is_authenticated", False) else None
    memory_events_save(
        [
            MemoryEvent(
                namespace_id=namespace_id,
                memory_id=pk,
                memory_ref=pk,
                kind=MemoryEvent.Kind.REACTIVATED,
                before={"storage": Memory.Storage.COLD.value},
                after={"storage": Memory.Storage.HOT.value, "via": via},
                actor=actor,
                source=source,
                classification=level,
                created_at=now,
            )
            for pk, namespace_id, level in rows
        ]
    )
    return moved
