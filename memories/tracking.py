"""Tracking a recall: seed 001's retrieval boost and seed 002's recall counters.

Recall (recall.services.recall_run) calls memories_track_recall with the ids it returned;
this module is the only writer of the boost and the counters (memories.boosting holds the
pure rule). Associative hits found in cold storage come back hot through
memories.services.uses.uses_reactivate, the one writer of 'reactivated' events.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection

from config.db import is_postgres
from memories.boosting import BoostConfig
from memories.hooks import memories_recalled
from memories.models import Memory
from memories.services.uses import USES_INSERT_FROM, uses_reactivate, uses_record

# How many distinct session ids a memory keeps (each of memories.models.SESSION_ID_LENGTH).
SESSION_IDS_CAP = 100


def memories_track_recall(
    *,
    direct_ids: list[int],
    associative_ids: list[int],
    now: datetime,
    session_id: str = "",
    user=None,
    token=None,
) -> None:
    """Seed 001's boost and seed 002's tracking of a recall: one UPDATE per kind, never per
    result; then memories_recalled, so other apps react (review: implicit reviews).

    Direct hits: stability + 0.1 x spaced-repetition factor, access and recall counters,
    last_accessed_at, last_recalled_at, recall_timestamps (last 20), session_ids, and a use
    in seed 003's sense (use_count + 1, last_used_at = now: retrieval resets the decay
    clock). Associative hits: stability + 0.03 x factor and the same counters, but no use;
    cold ones go back to hot storage (uses_reactivate, `via: association`). Direct
    hits' uses go to the use log (memories.services.uses) in the same statement on
    PostgreSQL, in the next on SQLite.
    """
    config = BoostConfig()
    direct, associative = direct_ids, associative_ids
    if direct:
        _boost(direct, base=config.direct_boost, now=now, session_id=session_id, use=True)
    if associative:
        _boost(
            associative,
            base=config.associative_boost,
            now=now,
            session_id=session_id,
            use=False,
        )
        uses_reactivate(associative, now=now, actor=user, source="recall", via="association")
    memories_recalled.send(sender=Memory, memory_ids=list(direct), token=token, now=now)


def _boost(
    ids: list[int],
    *,
    base: float,
    now: datetime,
    session_id: str,
    use: bool,
) -> None:
    config = BoostConfig()
    stamp = now.isoformat()
    db_now = connection.ops.adapt_datetimefield_value(now)
    postgres = is_postgres()
    interval_days = config.spaced_rep_interval_days
    if postgres:
        days = "EXTRACT(EPOCH FROM (%s - last_accessed_at)) / 86400.0"
        factor = (
            f"CASE WHEN last_accessed_at IS NULL THEN 1.0 ELSE LEAST(%s, GREATEST(0.0, "
            f"{days} / %s)) END"
        )
        stability = f"LEAST(%s, stability + %s * {factor})"
    else:
        days = "(julianday(%s) - julianday(last_accessed_at))"
        factor = (
            f"CASE WHEN last_accessed_at IS NULL THEN 1.0 ELSE MIN(%s, MAX(0.0, {days} / %s)) END"
        )
        stability = f"MIN(%s, stability + %s * {factor})"
    assignments = [f"stability = {stability}"]
    params: list[Any] = [
        config.max_stability,
        base,
        config.max_spaced_rep_multiplier,
        db_now,
        interval_days,
    ]
    assignments += [
        "access_count = access_count + 1",
        "last_accessed_at = %s",
        "recall_count = recall_count + 1",
        "last_recalled_at = %s",
    ]
    params += [db_now, db_now]
    if use:
        assignments += ["use_count = use_count + 1", "last_used_at = %s"]
        params.append(db_now)
    sql, extra = _append_capped("recall_timestamps", Memory.RECALL_TIMESTAMPS_CAP, postgres)
    assignments.append(f"recall_timestamps = {sql}")
    params += [stamp, *extra]
    if session_id:
        sql, extra = _append_capped("session_ids", SESSION_IDS_CAP, postgres)
        present = (
            "session_ids @> jsonb_build_array(%s::text)"
            if postgres
            else "EXISTS (SELECT 1 FROM json_each(session_ids) WHERE value = %s)"
        )
        assignments.append(f"session_ids = CASE WHEN {present} THEN session_ids ELSE {sql} END")
        params += [session_id, session_id, *extra]
    placeholders = ", ".join(["%s"] * len(ids))
    update = f"UPDATE memories_memory SET {', '.join(assignments)} WHERE id IN ({placeholders})"
    if use and postgres:
        # The update and the use log in one statement (memories.services.uses).
        update += " RETURNING namespace_id, id, use_count"
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH used AS ({update}) {USES_INSERT_FROM.format(source='used')}",
                [*params, *ids, db_now],
            )
        return
    with connection.cursor() as cursor:
        cursor.execute(update, [*params, *ids])
    if use:
        uses_record(ids, now=now)


def _append_capped(column: str, cap: int, postgres: bool) -> tuple[str, list[Any]]:
    """SQL for column := column + [%s] keeping the last `cap` entries, and its parameters
    after the appended value."""
    if postgres:
        return (
            "(SELECT COALESCE(jsonb_agg(e ORDER BY n), '[]'::jsonb) FROM ("
            f"SELECT e, n FROM jsonb_array_elements(COALESCE({column}, '[]'::jsonb) "
            "|| jsonb_build_array(%s::text)) WITH ORDINALITY AS t(e, n) "
            "ORDER BY n DESC LIMIT %s) s)",
            [cap],
        )
    return (
        "(SELECT json_group_array(value) FROM (SELECT key, value FROM ("
        f"SELECT key, value FROM json_each(json_insert(COALESCE({column}, '[]'), '$[#]', %s)) "
        "ORDER BY key DESC LIMIT %s) ORDER BY key))",
        [cap],
    )
