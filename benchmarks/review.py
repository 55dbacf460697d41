"""Build a large namespace of cards in a few set-based statements, and time the due queue.

Used by the speed tests (tests/review/test_queue.py) and by `manage.py bench_review`:
bench_due_queue(1_000_000).
"""

from __future__ import annotations

import statistics
import time
import uuid
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from benchmarks.sql import insert_select, series
from config.db import is_postgres, pick, vendor
from memories.models import Memory, MemorySketch, Namespace
from review.models import Card
from review.selectors import QUEUE_WINDOW_FACTOR, due_cards, review_queue


def _days_after(base_sql: str, days_sql: str) -> str:
    """Like sql.plus_days, but SQLite's datetime() (whole seconds) as this data always had."""
    return pick(
        postgres=f"({base_sql}::timestamptz + ({days_sql}) * interval '1 day')",
        sqlite=f"datetime({base_sql}, ({days_sql}) || ' days')",
    )


@transaction.atomic
def build_namespace(
    *,
    owner: Any,
    size: int,
    now: datetime,
    decks: int = 20,
    scheduler: str = Namespace.SchedulerKind.SM2,
    new_every: int = 0,
) -> Namespace:
    """A namespace of `size` memories with one card each, spread over `decks` topics.

    Card i is due (i % 60) - 30 days from `now` (about half are due), with varied EF and
    repetitions; with new_every = k, every k-th card is new instead.
    """
    namespace = Namespace.objects.create(
        owner=owner,
        name=f"bench {uuid.uuid4().hex[:8]}",
        slug=f"bench-{uuid.uuid4().hex[:12]}",
        scheduler=scheduler,
    )
    source, params = series(1, size)
    db_now = Card._meta.get_field("created_at").get_db_prep_save(now, connection)
    insert_select(
        Memory,
        {
            "namespace": ("%s", [namespace.pk]),
            "content": ("'Bench memory ' || CAST(i AS TEXT)", []),
            "topic": (f"'deck-' || CAST(i %% {int(decks)} AS TEXT)", []),
            "created_at": ("%s", [db_now]),
            "last_used_at": ("%s", [db_now]),
            "updated_at": ("%s", [db_now]),
        },
        source,
        params,
    )
    next_review = _days_after("%s", "(m.id %% 60) - 30")
    if new_every:
        next_review = f"CASE WHEN m.id %% {int(new_every)} = 0 THEN NULL ELSE {next_review} END"
    insert_select(
        Card,
        {
            "memory": ("m.id", []),
            "namespace": ("m.namespace_id", []),
            "scheduler": ("%s", [scheduler]),
            "easiness": ("1.3 + (m.id %% 13) / 10.0", []),
            "interval_days": ("1 + m.id %% 30", []),
            "repetitions": ("m.id %% 6", []),
            "next_review": (next_review, [db_now]),
            "created_at": ("%s", [db_now]),
        },
        f"{connection.ops.quote_name(Memory._meta.db_table)} m WHERE m.namespace_id = %s",
        [namespace.pk],
    )
    _analyze(vacuum=False)
    return namespace


def _analyze(*, vacuum: bool) -> None:
    """Fresh planner statistics; VACUUM too when outside a transaction, because dead index
    entries left by earlier bulk deletes make PostgreSQL's planner probe them (tens of ms)."""
    if not is_postgres():
        return
    verb = "VACUUM ANALYZE" if vacuum and not connection.in_atomic_block else "ANALYZE"
    with connection.cursor() as cursor:
        for model in (Memory, Card):
            cursor.execute(f"{verb} {connection.ops.quote_name(model._meta.db_table)}")


def drop_namespace(namespace: Namespace) -> None:
    """Delete a built namespace with plain DELETEs (the ORM would load every row first)."""
    qn = connection.ops.quote_name
    with transaction.atomic(), connection.cursor() as cursor:
        for model in (Card, MemorySketch, Memory):
            cursor.execute(
                f"DELETE FROM {qn(model._meta.db_table)} WHERE namespace_id = %s", [namespace.pk]
            )
        namespace.delete()


def bench_due_queue(
    namespace_size: int,
    *,
    runs: int = 30,
    limit: int = 50,
    scheduler: str = Namespace.SchedulerKind.SM2,
    keep: bool = False,
) -> dict[str, Any]:
    """Time review_queue on a namespace of `namespace_size` cards (about half due).

    Returns the build time, median / p95 / min milliseconds per queue and the query plan.
    """
    now = timezone.now()
    tz = ZoneInfo("UTC")
    owner = get_user_model().objects.create_user(f"bench-{uuid.uuid4().hex[:12]}")
    started = time.perf_counter()
    namespace = build_namespace(owner=owner, size=namespace_size, now=now, scheduler=scheduler)
    _analyze(vacuum=True)
    build_seconds = time.perf_counter() - started
    try:
        review_queue(namespace=namespace, tz=tz, now=now, limit=limit)  # warm-up
        timings = []
        for _ in range(runs):
            started = time.perf_counter()
            queue = review_queue(namespace=namespace, tz=tz, now=now, limit=limit)
            timings.append((time.perf_counter() - started) * 1000)
        plan = (
            due_cards(namespace=namespace, tz=tz, now=now)
            .order_by("next_review", "id")
            .values("id", "memory__topic")[: limit * QUEUE_WINDOW_FACTOR]
            .explain()
        )
        return {
            "vendor": vendor(),
            "scheduler": str(scheduler),
            "cards": namespace_size,
            "limit": limit,
            "returned": len(queue.items),
            "build_seconds": round(build_seconds, 2),
            "median_ms": round(statistics.median(timings), 3),
            "p95_ms": round(sorted(timings)[int(0.95 * (len(timings) - 1))], 3),
            "min_ms": round(min(timings), 3),
            "plan": plan,
        }
    finally:
        if not keep:
            drop_namespace(namespace)
            owner.delete()
