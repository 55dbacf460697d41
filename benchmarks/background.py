"""The decay sweep and the simulated worker's due-card selection on N memories.

For `manage.py bench_background`. The synthetic memories are built once with bulk
INSERT ... SELECT and kept (in their own user's namespaces) for the next run. Every timed
sweep runs at the same virtual `now` (the dataset's epoch), on a settled dataset where
nothing is due to change except a `churn` slice of rows reset before each run so that, in
equal parts, they will be forgotten, promoted, moved to cold storage, archived, made core
or purged. So each run scans every memory and changes about churn x N of them, as a sweep
of a steady system does; the first sweep after a build (which settles the random data) is
reported separately.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from benchmarks.sql import insert_select, minus_days, plus_days, series
from config.db import is_postgres, pick
from memories.models import Memory, MemoryEvent, MemorySketch, Namespace
from memories.sweep import SweepConfig, _decisions_sql, params_cte, sweep_run
from review.models import Card, ReviewLog
from review.selectors import review_queue
from review.services import cards_create_for_namespace
from review.worker import simulated_recall_run

BENCH_USER = "engram-bench-background"
# (slug, mode, decay model); memory i goes to namespace NAMESPACE_OF[i % 6].
NAMESPACES = [
    ("bench-agent", Namespace.Mode.AGENT_MEMORY, "exponential"),
    ("bench-exponential", Namespace.Mode.PERSONAL, "exponential"),
    ("bench-power-law", Namespace.Mode.PERSONAL, "power_law"),
    ("bench-two-component", Namespace.Mode.PERSONAL, "two_component"),
]
NAMESPACE_OF = [0, 0, 0, 1, 2, 3]  # half of the memories are the agent's, with cards
CHURN_GROUPS = 6  # forget, promote, cold, archive, core, purge
INSERT_CHUNK = 200_000  # memories per INSERT ... SELECT
Progress = Callable[[str], None]


def _qn(name: str) -> str:
    return connection.ops.quote_name(name)


def _db_time(value: datetime) -> Any:
    return connection.ops.adapt_datetimefield_value(value)


# --- The dataset -----------------------------------------------------------------------


def _owner():
    owner, _ = get_user_model().objects.get_or_create(username=BENCH_USER)
    return owner


def _namespaces() -> list[Namespace]:
    owner = _owner()
    found = {ns.slug: ns for ns in Namespace.objects.filter(owner=owner)}
    result = []
    for slug, mode, model in NAMESPACES:
        ns = found.get(slug)
        if ns is None:
            ns = Namespace.objects.create(
                owner=owner, name=slug, slug=slug, mode=mode, decay_model=model
            )
        result.append(ns)
    return result


def _state(ns: Namespace) -> dict[str, Any]:
    try:
        return json.loads(ns.description or "{}")
    except ValueError:
        return {}


def _save_state(ns: Namespace, state: dict[str, Any]) -> None:
    """The dataset's state (epoch, runs, next i, settled) lives in the first namespace."""
    ns.description = json.dumps(state)
    Namespace.objects.filter(pk=ns.pk).update(description=ns.description)


def memory_count(namespaces: list[Namespace]) -> int:
    return Memory.objects.filter(namespace__in=namespaces).count()


def dataset(size: int, progress: Progress) -> tuple[list[Namespace], datetime, dict[str, Any]]:
    """The namespaces, their epoch and state, with memories added up to `size`."""
    namespaces = _namespaces()
    state = _state(namespaces[0])
    if "epoch" not in state:
        state = {"epoch": timezone.now().isoformat(), "runs": 0, "next_i": 0}
        _save_state(namespaces[0], state)
    epoch = datetime.fromisoformat(state["epoch"])
    have = memory_count(namespaces)
    if have < size:
        progress(f"Building {size - have} memories ...")
        _insert(namespaces, state, size - have, epoch, progress)
        _save_state(namespaces[0], state)
        vacuum()
    return namespaces, epoch, state


def _insert(
    namespaces: list[Namespace],
    state: dict[str, Any],
    count: int,
    epoch: datetime,
    progress: Progress,
) -> None:
    """count more memories (i continues from the last build), cards for the agent's."""
    first = state.get("next_i", 0)
    last = first + count - 1
    ns_case = (
        "CASE i %% 6 "
        + " ".join(f"WHEN {k} THEN {namespaces[NAMESPACE_OF[k]].pk}" for k in range(6))
        + " END"
    )
    epoch_db = _db_time(epoch)
    sessions = 'CASE WHEN i %% 97 = 0 THEN \'["s1", "s2", "s3"]\' ELSE \'[]\' END'
    expressions: dict[str, tuple[str, list[Any]]] = {
        "namespace": (ns_case, []),
        "content": (
            "'Bench memory ' || CAST(i AS TEXT) || ' about topic ' || CAST(i %% 20 AS TEXT)",
            [],
        ),
        "topic": ("'topic-' || CAST(i %% 20 AS TEXT)", []),
        "use_count": ("(i * 7) %% 8", []),
        "strength": ("0.5 + ((i * 13) %% 16) / 10.0", []),
        "last_used_at": (minus_days("%s", "((i * 37) %% 4000) / 100.0"), [epoch_db]),
        "created_at": (minus_days("%s", "40 + (i %% 90)"), [epoch_db]),
        "updated_at": ("%s", [epoch_db]),
        "tier": (
            f"CASE WHEN i %% 10 < 6 OR i %% 20 = 19 THEN '{Memory.Tier.SHORT_TERM}' "
            f"WHEN i %% 20 = 9 THEN '{Memory.Tier.CORE}' "
            f"ELSE '{Memory.Tier.LONG_TERM}' END",
            [],
        ),
        "status": (
            f"CASE WHEN i %% 10 < 6 THEN '{Memory.Status.ACTIVE}' "
            f"WHEN i %% 20 = 19 THEN '{Memory.Status.FORGOTTEN}' "
            f"ELSE '{Memory.Status.PROMOTED}' END",
            [],
        ),
        "forgotten_at": (
            f"CASE WHEN i %% 20 = 19 THEN {minus_days('%s', '(i * 17) %% 20')} END",
            [epoch_db],
        ),
        "access_count": ("CASE WHEN i %% 97 = 0 THEN 6 ELSE i %% 4 END", []),
        "stability": ("CASE WHEN i %% 97 = 0 THEN 0.6 ELSE (i %% 5) / 10.0 END", []),
        "session_ids": (pick(postgres=f"CAST({sessions} AS jsonb)", sqlite=sessions), []),
    }
    for start in range(first, last + 1, INSERT_CHUNK):
        source, source_params = series(start, min(start + INSERT_CHUNK - 1, last))
        with transaction.atomic():
            insert_select(Memory, expressions, source, source_params)
        progress(f"  ... {min(start + INSERT_CHUNK, last + 1) - first} rows")
    state["next_i"] = last + 1
    _insert_cards(namespaces[0], epoch)


def _insert_cards(agent: Namespace, epoch: datetime) -> None:
    card, memory = _qn(Card._meta.db_table), _qn(Memory._meta.db_table)
    expressions = {
        "memory": ("m.id", []),
        "namespace": ("m.namespace_id", []),
        "scheduler": ("%s", [Namespace.SchedulerKind.SM2.value]),
        "easiness": ("1.3 + (m.id %% 13) / 10.0", []),
        "interval_days": ("1 + m.id %% 30", []),
        "repetitions": ("m.id %% 6", []),
        "next_review": (plus_days("%s", "(m.id %% 60) - 30"), [_db_time(epoch)]),
        "created_at": ("%s", [_db_time(epoch)]),
    }
    with transaction.atomic():
        insert_select(
            Card,
            expressions,
            f"{memory} m WHERE m.namespace_id = %s "
            f"AND NOT EXISTS (SELECT 1 FROM {card} c WHERE c.memory_id = m.id)",
            [agent.pk],
        )


def drop() -> None:
    """Delete the benchmark's user, namespaces and rows."""
    owner = get_user_model().objects.filter(username=BENCH_USER).first()
    if owner is None:
        return
    ids = list(Namespace.objects.filter(owner=owner).values_list("pk", flat=True))
    if ids:
        marks = ", ".join(["%s"] * len(ids))
        with transaction.atomic(), connection.cursor() as cursor:
            for model in (ReviewLog, Card, MemoryEvent, MemorySketch, Memory):
                cursor.execute(
                    f"DELETE FROM {_qn(model._meta.db_table)} WHERE namespace_id IN ({marks})",
                    ids,
                )
    owner.delete()


def vacuum() -> None:
    if not is_postgres():
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        return
    with connection.cursor() as cursor:
        for model in (Memory, Card, MemoryEvent):
            cursor.execute(f"VACUUM ANALYZE {_qn(model._meta.db_table)}")


# --- The sweeps ------------------------------------------------------------------------


def settle(
    namespaces: list[Namespace], epoch: datetime, config: SweepConfig, state: dict[str, Any]
) -> dict[str, Any]:
    """The first sweep after a build, which settles the random data; its figures."""
    vacuum()
    report = sweep_run(now=epoch, config=config)
    figures = {
        "seconds": round(report.duration_seconds, 2),
        **{k: v for k, v in report.counts().items() if k != "duration_seconds"},
    }
    state["settled"] = True
    _save_state(namespaces[0], state)
    vacuum()
    return figures


def timed_sweeps(
    namespaces: list[Namespace],
    size: int,
    epoch: datetime,
    config: SweepConfig,
    *,
    runs: int,
    churn: float,
    state: dict[str, Any],
    progress: Progress,
) -> dict[str, Any]:
    """`runs` sweeps, each after a churn slice was reset; "sweep" and "dry_run_seconds"."""
    sweeps = []
    for _ in range(runs):
        expected = _churn(namespaces, epoch, churn, state)
        report = sweep_run(now=epoch, config=config)
        sweeps.append(report)
        changed = report.changed + report.purged
        if changed != expected:
            progress(f"note: {changed} rows changed, {expected} prepared")
        _top_up(namespaces, size, epoch, progress)
    if not sweeps:
        return {}
    times = [r.duration_seconds for r in sweeps]
    last = sweeps[-1]
    figures: dict[str, Any] = {
        "sweep": {
            "runs": len(times),
            "median_seconds": round(statistics.median(times), 2),
            "min_seconds": round(min(times), 2),
            "max_seconds": round(max(times), 2),
            "examined": last.examined,
            "batches": last.batches,
            "changed_per_run": last.changed + last.purged,
            **{
                k: last.counts()[k]
                for k in ("core", "promoted", "forgotten", "cold", "archived", "purged")
            },
        }
    }
    dry = sweep_run(now=epoch, config=config, dry_run=True)
    figures["dry_run_seconds"] = round(dry.duration_seconds, 2)
    return figures


def _top_up(namespaces: list[Namespace], size: int, epoch: datetime, progress: Progress) -> None:
    """Put back the memories the purge deleted, so every run sees `size` memories."""
    missing = size - memory_count(namespaces)
    if missing > 0:
        state = _state(namespaces[0])
        _insert(namespaces, state, missing, epoch, progress)
        # The new rows must be settled too, or the next run would change them.
        sweep_run(now=epoch)
        state["settled"] = True
        _save_state(namespaces[0], state)


def _churn(
    namespaces: list[Namespace], epoch: datetime, churn: float, state: dict[str, Any]
) -> int:
    """Reset one slice of rows (id % M == k) so that the next sweep changes each of them.

    Group g = (id / M) % 6 decides what the sweep will do: 0 forget, 1 promote, 2 cold,
    3 archive, 4 core, 5 purge. Returns how many rows were reset.
    """
    modulus = max(1, round(1 / churn))
    state["runs"] = state.get("runs", 0) + 1
    _save_state(namespaces[0], state)
    k = state["runs"] % modulus
    memory = _qn(Memory._meta.db_table)
    epoch_db = _db_time(epoch)
    group = f"((id / {modulus}) %% {CHURN_GROUPS})"
    json = pick(postgres="CAST(%s AS jsonb)", sqlite="%s")
    ago = {days: minus_days("%s", str(days)) for days in (60, 150, 200, 2, 90)}
    sql = f"""
    UPDATE {memory} SET
        tier = CASE {group} WHEN 2 THEN 'long_term' WHEN 3 THEN 'long_term'
            ELSE 'short_term' END,
        status = CASE {group} WHEN 2 THEN 'promoted' WHEN 3 THEN 'promoted'
            WHEN 5 THEN 'forgotten' ELSE 'active' END,
        storage = CASE {group} WHEN 3 THEN 'cold' ELSE 'hot' END,
        use_count = CASE {group} WHEN 1 THEN 3 ELSE 0 END,
        strength = 1.0,
        last_used_at = CASE {group} WHEN 0 THEN {ago[60]} WHEN 1 THEN %s
            WHEN 2 THEN {ago[150]} WHEN 3 THEN {ago[200]} ELSE {ago[2]} END,
        forgotten_at = CASE {group} WHEN 5 THEN {ago[90]} END,
        forgotten_reason = '',
        forgotten_score = NULL,
        access_count = CASE {group} WHEN 4 THEN 6 ELSE 0 END,
        stability = CASE {group} WHEN 4 THEN 0.6 ELSE 0.0 END,
        session_ids = CASE {group} WHEN 4 THEN {json} ELSE {json} END
    WHERE namespace_id IN ({", ".join(["%s"] * len(namespaces))}) AND id %% {modulus} = %s
    """
    sessions = '["s1", "s2", "s3"]'
    params = [epoch_db, epoch_db, epoch_db, epoch_db, epoch_db, epoch_db, sessions, "[]"]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, [*params, *[ns.pk for ns in namespaces], k])
        return cursor.rowcount


def explain(epoch: datetime, config: SweepConfig) -> str:
    """The query plan of one sweep batch's decisions."""
    p_sql, p_params = params_cte(config, epoch)
    decisions, d_params = _decisions_sql(namespace_id=None)
    first = Memory.objects.order_by("id").values_list("id", flat=True).first() or 0
    prefix = pick(postgres="EXPLAIN (ANALYZE, BUFFERS)", sqlite="EXPLAIN QUERY PLAN")
    with connection.cursor() as cursor:
        cursor.execute(
            f"{prefix} WITH {p_sql}, {decisions} SELECT count(*) FROM d",
            [*p_params, first, first + config.batch_size, *d_params],
        )
        return "\n".join(" ".join(str(c) for c in row) for row in cursor.fetchall())


# --- The worker ------------------------------------------------------------------------


def bench_worker(agent: Namespace, epoch: datetime) -> dict[str, Any]:
    """One whole run of the simulated worker: card creation, queue, grading."""
    started = time.perf_counter()
    created = cards_create_for_namespace(namespace=agent, now=epoch)
    cards_ms = (time.perf_counter() - started) * 1000
    report = simulated_recall_run(namespace=agent, now=epoch)
    return {
        "seconds": round(time.perf_counter() - started, 2),
        "card_creation_ms": round(cards_ms, 1),
        "cards_created": created + report.cards_created,
        "reviewed": report.reviewed,
        "conflicts": report.conflicts,
    }


def bench_queue(agent: Namespace, epoch: datetime, *, runs: int, limit: int) -> dict[str, Any]:
    """review_queue of the agent's namespace, timed `runs` times."""
    tz = ZoneInfo("UTC")
    review_queue(namespace=agent, tz=tz, now=epoch, limit=limit)  # warm-up
    timings = []
    returned = 0
    for _ in range(runs):
        started = time.perf_counter()
        queue = review_queue(namespace=agent, tz=tz, now=epoch, limit=limit)
        timings.append((time.perf_counter() - started) * 1000)
        returned = len(queue.items)
    timings.sort()
    return {
        "cards": Card.objects.filter(namespace=agent).count(),
        "due": Card.objects.filter(namespace=agent, next_review__lte=epoch).count(),
        "limit": limit,
        "returned": returned,
        "median_ms": round(statistics.median(timings), 2),
        "p95_ms": round(timings[int(0.95 * (len(timings) - 1))], 2),
        "min_ms": round(timings[0], 2),
    }
