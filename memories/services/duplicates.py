"""Exact duplicates: a namespace that dedupes answers a second copy of a text with the
memory that holds it (memories.services.memories uses these on create and bulk create)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

from django.db import connection
from django.db.models import F
from django.utils import timezone

from config.db import is_postgres, lock_keys, pick
from memories.bulk import insert_rows
from memories.models import Memory, MemoryEvent, reachable_sql
from memories.services.events import EVENT_COLUMNS
from memories.services.uses import uses_reactivate, uses_record


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
    memory_content_key_ns."""
    wanted: dict[int, list[str]] = {}
    for ns, key in sorted(set(keys)):
        wanted.setdefault(ns, []).append(key)
    if not wanted:
        return {}
    # Raw SQL: a create looks up its text on every call, and nearly always finds nothing;
    # the ORM took 1.7 ms of the 1.9 a look-up cost (compiling), this takes 0.2. The rows
    # found, if any, are read by the ORM. The keys are looked up in memory_content_key_ns;
    # the namespace is compared in a form no index serves, so that the planner cannot
    # choose an index of the namespace and read all of it, as PostgreSQL did for a
    # namespace its statistics thought small.
    reach, params = reachable_sql("m", ceiling=ceiling, now=now or timezone.now())
    table = connection.ops.quote_name(Memory._meta.db_table)
    keys_in = "= ANY(%s)" if is_postgres() else "IN (SELECT value FROM json_each(%s))"
    in_namespace = pick(postgres="m.namespace_id + 0 = %s", sqlite="+m.namespace_id = %s")
    probes, probe_params = [], []
    for ns, ns_keys in wanted.items():
        probes.append(f"(m.content_key {keys_in} AND {in_namespace})")
        probe_params += [ns_keys if is_postgres() else json.dumps(ns_keys), ns]
    sql = (
        f"SELECT m.id, m.namespace_id, m.content_key FROM {table} m "
        f"WHERE ({' OR '.join(probes)}) AND {reach} ORDER BY m.id"
    )
    oldest: dict[tuple[int, str], int] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, [*probe_params, *params])
        for pk, ns, key in cursor.fetchall():
            oldest.setdefault((ns, key), pk)
    if not oldest:
        return {}
    return {
        (memory.namespace_id, memory.content_key): memory
        for memory in Memory.objects.select_related("namespace").filter(pk__in=oldest.values())
    }


def count_duplicate_uses(uses: dict[Memory, int], *, actor, source: str) -> None:
    """Count each duplicate as a use of the memory it is (as memory_touch does: a cold one
    comes back to hot storage), set-based: one UPDATE per distinct count, one read back,
    the 'touched' events in one insert."""
    now = timezone.now()
    by_count: dict[int, list[int]] = {}
    for memory, count in uses.items():
        by_count.setdefault(count, []).append(memory.pk)
    for count, ids in by_count.items():
        Memory.objects.filter(pk__in=ids).update(use_count=F("use_count") + count, last_used_at=now)
        uses_record(ids, now=now)
    warmed = set(uses_reactivate([m.pk for m in uses], now=now, actor=actor, source=source))
    fresh = dict(Memory.objects.filter(pk__in=[m.pk for m in uses]).values_list("pk", "use_count"))
    actor_id = actor.pk if actor is not None else None
    rows = []
    for memory, count in uses.items():
        memory.use_count, memory.last_used_at = fresh[memory.pk], now
        if memory.pk in warmed:
            memory.storage = Memory.Storage.HOT
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
