"""recall_run: the one entry point of recall (API, search page, CLI and evaluation).

It runs the pipeline (recall.pipeline), enriches the results (recall.enrichment), then,
unless track=False, has memories write seed 001's retrieval boost and seed 002's recall
tracking (memories.tracking, which also tells review through memories.hooks) and records a
RecallEvent.
"""

from __future__ import annotations

import json
import time
from contextlib import nullcontext
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.utils import timezone

from config.db import is_postgres
from memories.models import Memory, Namespace
from memories.tracking import memories_track_recall
from recall.enrichment import enrich
from recall.models import RecallEvent
from recall.pipeline import RecallConfig, RecallResult, run_pipeline
from recall.stages import ALL_STAGES
from recall.stages.filters import RecallFilters

MAX_LIMIT = 100
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
    as_of: datetime | None = None,
    include_superseded: bool = False,
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
        as_of=as_of,
        include_superseded=include_superseded,
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
    tracking = track and bool(result.results)
    # On PostgreSQL an untracked recall writes its event in one statement, outside any
    # transaction block; a tracked one in a transaction with the tracking.
    with transaction.atomic() if tracking or not is_postgres() else nullcontext():
        if tracking:
            hits = result.results
            memories_track_recall(
                direct_ids=[hit.memory_id for hit in hits if not hit.associative],
                associative_ids=[hit.memory_id for hit in hits if hit.associative],
                now=now,
                session_id=session_id,
                user=user,
                token=token,
            )
        result.duration_ms = (time.perf_counter() - started) * 1000
        event = RecallEvent(
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
                "as_of": as_of.isoformat() if as_of else None,
                "include_superseded": include_superseded,
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
        _event_save(event)
    result.event_id = event.pk
    return result


def _event_save(event: RecallEvent) -> None:
    """Write the recall's event. Its commit need not wait for the WAL flush: a crash may
    lose the last few recall events and boosts, never corrupt them, and not waiting keeps
    the commit off the request's critical path. On PostgreSQL the setting rides in the
    INSERT itself (set_config(..., true) lasts until the transaction ends, whether the
    statement's own or the tracking's), so an untracked recall writes with one round trip
    instead of four (BEGIN, SET LOCAL, INSERT, COMMIT) and no ORM insert."""
    if not is_postgres():
        event.save(force_insert=True)
        return
    # Every column but the id, from the model: a field added later is written too.
    fields = [f for f in RecallEvent._meta.concrete_fields if not f.primary_key]
    params = [
        json.dumps(f.value_from_object(event))
        if isinstance(f, models.JSONField)
        else f.value_from_object(event)
        for f in fields
    ]
    table = connection.ops.quote_name(RecallEvent._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    placeholders = ", ".join(
        "%s::jsonb" if isinstance(f, models.JSONField) else "%s" for f in fields
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {placeholders} "
            "FROM (SELECT set_config('synchronous_commit', 'off', true)) AS lazy_commit "
            "RETURNING id",
            params,
        )
        event.pk = cursor.fetchone()[0]


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
