"""recall_run: the one entry point of recall (API, search page, CLI and evaluation).

It runs the pipeline (recall.pipeline), enriches the results (recall.enrichment), then,
unless track=False, writes seed 001's retrieval boost and seed 002's recall tracking with
one set-based UPDATE per kind (direct hits, associative hits) and records a RecallEvent.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from memories.boosting import BoostConfig
from memories.models import Memory, MemoryEvent, Namespace
from recall.enrichment import enrich
from recall.models import RecallEvent
from recall.pipeline import ALL_STAGES, RecallConfig, RecallHit, RecallResult, run_pipeline
from recall.stages import RecallFilters

MAX_LIMIT = 100
SESSION_IDS_CAP = 100
TIERS = {choice.value for choice in Memory.Tier}


def recall_run(
    *,
    namespaces: list[Namespace],
    ceiling: int,
    query: str,
    limit: int = 10,
    topic: str | None = None,
    tier: str | None = None,
    time_start: datetime | None = None,
    time_end: datetime | None = None,
    include_expired: bool = False,
    context: dict[str, Any] | None = None,
    session_id: str = "",
    track: bool = True,
    stages: list[str] | None = None,
    user=None,
    token=None,
    now: datetime | None = None,
    config: RecallConfig | None = None,
) -> RecallResult:
    """Recall memories for a query across the caller's namespaces, within its ceiling."""
    started = time.perf_counter()
    _validate(
        namespaces=namespaces,
        query=query,
        limit=limit,
        tier=tier,
        stages=stages,
        context=context,
        session_id=session_id,
    )
    now = now or timezone.now()
    config = config or RecallConfig.from_settings()
    filters = RecallFilters(
        namespace_ids=tuple(ns.pk for ns in namespaces),
        ceiling=int(ceiling),
        now=now,
        topic=topic or None,
        tier=tier or None,
        time_start=time_start,
        time_end=time_end,
        include_expired=include_expired,
    )
    result = run_pipeline(
        namespaces=namespaces,
        filters=filters,
        query=query,
        limit=limit,
        context=context,
        requested_stages=stages,
        config=config,
    )
    enrich(result.results)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # A crash may lose the last few recall events and boosts, never corrupt them;
            # not waiting for the WAL flush keeps the commit off the request's critical path.
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit = off")
        if track and result.results:
            _track(result.results, now=now, session_id=session_id, user=user)
        result.duration_ms = (time.perf_counter() - started) * 1000
        event = RecallEvent.objects.create(
            namespace=namespaces[0],
            token=token,
            user=user if getattr(user, "is_authenticated", False) else None,
            query=query,
            filters={
                "namespaces": [ns.slug for ns in namespaces],
                "namespace_ids": list(filters.namespace_ids),
                "ceiling": filters.ceiling,
                "limit": limit,
                "topic": topic,
                "tier": tier,
                "time_start": time_start.isoformat() if time_start else None,
                "time_end": time_end.isoformat() if time_end else None,
                "include_expired": include_expired,
                "context": context or {},
                "stages": stages,
                "track": track,
            },
            stage_timings=result.stage_timings,
            result_ids=[hit.memory_id for hit in result.results],
            session_id=session_id,
            duration_ms=result.duration_ms,
            created_at=now,
        )
    result.event_id = event.pk
    return result


def _validate(
    *,
    namespaces: list[Namespace],
    query: str,
    limit: int,
    tier: str | None,
    stages: list[str] | None,
    context: dict[str, Any] | None,
    session_id: str,
) -> None:
    errors: dict[str, str] = {}
    if not namespaces:
        errors["namespaces"] = "At least one namespace is needed."
    if not isinstance(query, str) or not query.strip():
        errors["query"] = "This field may not be blank."
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        errors["limit"] = f"Must be an integer from 1 to {MAX_LIMIT}."
    if tier and tier not in TIERS:
        errors["tier"] = f"Must be one of {', '.join(sorted(TIERS))}."
    if stages is not None:
        unknown = [s for s in stages if s not in ALL_STAGES]
        if unknown:
            errors["stages"] = f"Unknown stages {unknown}; use any of {', '.join(ALL_STAGES)}."
    if context:
        hour = context.get("hour")
        weekday = context.get("weekday")
        if hour is not None and (not isinstance(hour, int) or not 0 <= hour <= 23):
            errors["context.hour"] = "Must be an integer from 0 to 23."
        if weekday is not None and (not isinstance(weekday, int) or not 0 <= weekday <= 6):
            errors["context.weekday"] = "Must be an integer from 0 (Monday) to 6 (Sunday)."
    if len(session_id or "") > 100:
        errors["session_id"] = "At most 100 characters."
    if errors:
        raise ValidationError(errors)


# --- Tracking ---------------------------------------------------------------------------


def _track(hits: list[RecallHit], *, now: datetime, session_id: str, user) -> None:
    """Seed 001's boost and seed 002's tracking: one UPDATE per kind, never per result.

    Direct hits: stability + 0.1 x spaced-repetition factor, access and recall counters,
    last_accessed_at, last_recalled_at, recall_timestamps (last 20), session_ids, and a use
    in seed 003's sense (use_count + 1, last_used_at = now: retrieval resets the decay
    clock). Associative hits: stability + 0.03 x factor and the same counters, but no use;
    cold ones go back to hot storage, with one bulk insert of 'reactivated' events.
    """
    config = BoostConfig()
    direct = [hit.memory_id for hit in hits if not hit.associative]
    associative = [hit.memory_id for hit in hits if hit.associative]
    if direct:
        _boost(direct, base=config.direct_boost, now=now, session_id=session_id, use=True)
    if associative:
        _boost(
            associative,
            base=config.associative_boost,
            now=now,
            session_id=session_id,
            use=False,
            reactivate=True,
        )
        cold = [hit for hit in hits if hit.associative and hit.cold]
        if cold:
            namespace_of = {
                pk: (namespace_id, level)
                for pk, namespace_id, level in Memory.objects.filter(
                    id__in=[h.memory_id for h in cold]
                ).values_list("id", "namespace_id", "classification")
            }
            MemoryEvent.objects.bulk_create(
                [
                    MemoryEvent(
                        namespace_id=namespace_of[hit.memory_id][0],
                        classification=namespace_of[hit.memory_id][1],
                        memory_id=hit.memory_id,
                        memory_ref=hit.memory_id,
                        kind=MemoryEvent.Kind.REACTIVATED,
                        before={"storage": Memory.Storage.COLD.value},
                        after={"storage": Memory.Storage.HOT.value, "via": "association"},
                        actor=user if getattr(user, "is_authenticated", False) else None,
                        source="recall",
                        created_at=now,
                    )
                    for hit in cold
                    if hit.memory_id in namespace_of
                ]
            )


def _boost(
    ids: list[int],
    *,
    base: float,
    now: datetime,
    session_id: str,
    use: bool,
    reactivate: bool = False,
) -> None:
    config = BoostConfig()
    stamp = now.isoformat()
    db_now = connection.ops.adapt_datetimefield_value(now)
    postgres = connection.vendor == "postgresql"
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
    if reactivate:
        assignments.append("storage = %s")
        params.append(Memory.Storage.HOT.value)
    placeholders = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE memories_memory SET {', '.join(assignments)} WHERE id IN ({placeholders})",
            [*params, *ids],
        )


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
