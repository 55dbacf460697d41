"""A memory's conversation: each new memory is linked to the previous turns of its session.

A client names the session a memory was written in (`session_id`, its own string) and,
optionally, the memory's place in it (`position`). Every write path (create, bulk create,
import) links each new memory of a session, in the namespace, to the turn before it
(`next_turn`, weight 1.0) and to the turn before that (`near_turn`, 0.5), so recall's
association spreading brings back a hit's neighbours as it does any association. The order
of a session is its position, else created_at, else the order of writing (the id). A memory
written between two turns is linked to both sides, and their link becomes a near_turn;
when more than one memory comes between two linked turns, their older link stays (links
are only ever added or corrected, never deleted by the write path). A link a person made
(another kind) is never changed. Namespace.session_links turns it off.

Set-based: one statement links a whole bulk create, with window functions over the
memories of the sessions it touched (the partial index memory_ns_session serves them).
Concurrent writers of one session are serialised by a per-session transaction lock on
PostgreSQL (SQLite runs one writer at a time), taken before the first insert, so each
sees the other's turns and no link is missed; the (source, target) unique constraint and
ON CONFLICT DO NOTHING keep a link from being written twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

from django.db import connection
from django.utils import timezone

from config.db import is_postgres, lock_keys, pick
from memories.models import Association, Memory, Namespace

NEXT_TURN = "next_turn"
NEAR_TURN = "near_turn"
NEXT_TURN_WEIGHT = 1.0
NEAR_TURN_WEIGHT = 0.5


def linked_sessions(pairs: Iterable[tuple[Namespace, str]]) -> set[tuple[int, str]]:
    """The (namespace id, session id) of these writes whose namespace links sessions."""
    return {(ns.pk, session) for ns, session in pairs if session and ns.session_links}


def sessions_lock(sessions: set[tuple[int, str]]) -> None:
    """Hold each session's write lock until the transaction ends (config.db.lock_keys)."""
    lock_keys(f"session:{ns}:{session}" for ns, session in sessions)


def session_links_create(memory_ids: Iterable[int], *, now: datetime | None = None) -> int:
    """Link the memories `memory_ids` (just written) to their sessions' neighbouring turns;
    the number of links written. Memories without a session, or of a namespace that does
    not link sessions, are left alone."""
    ids = list(memory_ids)
    if not ids:
        return 0
    qn = connection.ops.quote_name
    memory, association, namespace = (
        qn(Memory._meta.db_table),
        qn(Association._meta.db_table),
        qn(Namespace._meta.db_table),
    )
    new_ids = pick(
        postgres="SELECT unnest(%s::bigint[])",
        sqlite="SELECT CAST(value AS INTEGER) FROM json_each(%s)",
    )
    ids_param = ids if is_postgres() else json.dumps(ids)

    def links(prev: str, *between: str) -> str:
        ends = " OR ".join(f"o.{name} IN (SELECT id FROM new)" for name in ("id", prev, *between))
        return (
            f"SELECT o.namespace_id, o.{prev}, o.id, %s, %s, %s FROM ordered o "
            f"WHERE o.{prev} IS NOT NULL AND ({ends})"
        )

    # Each written session's turns, read through the partial index memory_ns_session
    # ("session_id <> ''" lets it apply). On PostgreSQL a LATERAL probe per session: with
    # the statistics of a table that filled a moment ago (a session's rows estimated at
    # one), a plain join read the whole index, every session's turns, once per write.
    turns = pick(
        postgres="touched t CROSS JOIN LATERAL (SELECT m.id, m.namespace_id, m.session_id, "
        f"m.position, m.created_at FROM {memory} m "
        "WHERE m.namespace_id = t.namespace_id AND m.session_id = t.session_id "
        "AND m.session_id <> '') m",
        sqlite=f"{memory} m JOIN touched t "
        "ON t.namespace_id = m.namespace_id AND t.session_id = m.session_id "
        "WHERE m.session_id <> ''",
    )
    sql = f"""
    WITH new AS (SELECT m.id, m.namespace_id, m.session_id FROM {memory} m
                 WHERE m.id IN ({new_ids}) AND m.session_id <> ''),
    touched AS MATERIALIZED (SELECT DISTINCT new.namespace_id, new.session_id FROM new
                JOIN {namespace} n ON n.id = new.namespace_id AND n.session_links),
    ordered AS (
        SELECT m.id, m.namespace_id,
            LAG(m.id, 1) OVER turns AS prev1,
            LAG(m.id, 2) OVER turns AS prev2
        FROM {turns}
        WINDOW turns AS (
            PARTITION BY m.namespace_id, m.session_id
            ORDER BY CASE WHEN m.position IS NULL THEN 1 ELSE 0 END, m.position,
                m.created_at, m.id
        )
    )
    INSERT INTO {association} (namespace_id, source_id, target_id, weight, kind, created_at)
    {links("prev1")}
    UNION ALL
    {links("prev2", "prev1")}
    ON CONFLICT (source_id, target_id) DO UPDATE SET weight = excluded.weight, kind = excluded.kind
    WHERE {association}.kind IN (%s, %s)
        AND ({association}.weight <> excluded.weight OR {association}.kind <> excluded.kind)
    """
    at = connection.ops.adapt_datetimefield_value(now or timezone.now())
    params = [
        ids_param,
        NEXT_TURN_WEIGHT,
        NEXT_TURN,
        at,
        NEAR_TURN_WEIGHT,
        NEAR_TURN,
        at,
        NEXT_TURN,
        NEAR_TURN,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return max(cursor.rowcount, 0)
