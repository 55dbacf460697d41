"""The decay sweep: every live memory's fate, decided and applied in set-based SQL.

One sweep walks the memory table in primary-key ranges of SWEEP_BATCH_SIZE ids. For each
range one statement (PostgreSQL) or one short transaction (SQLite) computes every live
memory's seed 003 score in the database, in float8, with its namespace's decay model
(namespace columns, falling back to the DECAY_* settings), decides the rule that applies
and updates only the rows whose state changes, writing their history events in the same
transaction. The rules, first match wins:

- core (seed 001): a short- or long-term live memory recalled in CORE_MIN_SESSIONS
  distinct sessions, with access_count >= CORE_MIN_ACCESS_COUNT and stability >=
  CORE_MIN_STABILITY, becomes tier core (status promoted, storage hot);
- promote (seed 003): an active short-term memory with score >= PROMOTE_THRESHOLD (once
  used PROMOTE_SCORE_MIN_USES times: a fresh memory scores 1.0 and has proven nothing), or
  with PROMOTE_USE_COUNT uses inside PROMOTE_TIME_WINDOW_DAYS, becomes long-term;
- forget (seed 003): an active short-term memory with score < FORGET_THRESHOLD is
  forgotten, with the reason and the score at the time (restorable until purged);
- archive: a long-term memory unused for ARCHIVE_COLD_AFTER_DAYS that is cold, or at its
  floor, is archived (and cold);
- cold (seed 001): a hot long-term memory that sits at its floor (score at or below
  COLD_FLOOR, no use inside the promotion window, no recall for COLD_GRACE_DAYS) moves to
  cold storage: recall's fast stages skip it, an association link brings it back.

Each rule's specification is a pure function, and the SQL decides identically (for any row,
on both engines: tests/memories/test_sweep_agreement.py generates rows and compares):
core is boosting.should_promote_to_core, promote decay.should_promote (its uses in the
window counted as decay.count_uses_in_window counts them), forget decay.should_forget,
archive boosting.should_archive and cold boosting.should_move_to_cold (both on
boosting.at_floor); the score is decay.decay_score with the namespace's
Namespace.decay_params(). The precedence, first match wins, is RULES' order, which is the
order of the CASE in _decisions_sql. The SQL is the rule for what no twin states: which
rows a sweep examines (live ones, in id ranges) and the state each rule writes.

Memories a lost task left without a near-duplicate sketch are sketched and linked first
(near_index_missing). After the rules, in namespaces that refuse near-duplicates, the
groups stored before are merged
(memories.services.near_duplicates.near_duplicates_sweep). Then forgotten short-term
memories older than FORGOTTEN_RETENTION_DAYS are purged, in
batches, each leaving a 'purged' event. Promoted, long-term and core memories are never
deleted. No rule's result matches another rule at the same `now`, so one sweep reaches
the fixed point; every rule is a function of the row's current state and `now`, so a
batch that is interrupted is rolled back whole and the next sweep simply finds the same
rows again, while rows already changed no longer match. docs/background.md has the SQL
and the argument.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from config.db import is_postgres, pick
from memories.boosting import ColdStorageRule, CorePromotionRule
from memories.decay import DecayParams, Thresholds
from memories.models import Memory, MemoryEvent, Namespace
from memories.score_sql import (
    db_datetime,
    ensure_sqlite_math,
    keep_subquery,
    params_cte,
    quote,
    scored_memories_sql,
)
from memories.services.near_duplicates import near_duplicates_sweep, near_index_missing
from memories.services.webhooks import memory_events_announce_where

# Rule names, as stored in the event's after["rule"] and counted in SweepReport; RULES is
# their precedence (first match wins), the order of _decisions_sql's CASE.
CORE = "core"
PROMOTE = "promote"
FORGET = "forget"
COLD = "cold"
ARCHIVE = "archive"
RULES = (CORE, PROMOTE, FORGET, ARCHIVE, COLD)
EVENT_KIND = {
    CORE: MemoryEvent.Kind.PROMOTED,
    PROMOTE: MemoryEvent.Kind.PROMOTED,
    FORGET: MemoryEvent.Kind.FORGOTTEN,
    COLD: MemoryEvent.Kind.COLD,
    ARCHIVE: MemoryEvent.Kind.ARCHIVED,
}
EVENT_SOURCE = "sweep"
DRY_RUN_SAMPLES = 10

_ACTIVE = Memory.Status.ACTIVE.value
_PROMOTED = Memory.Status.PROMOTED.value
_FORGOTTEN = Memory.Status.FORGOTTEN.value
_ARCHIVED = Memory.Status.ARCHIVED.value
_SHORT = Memory.Tier.SHORT_TERM.value
_LONG = Memory.Tier.LONG_TERM.value
_CORE = Memory.Tier.CORE.value
_HOT = Memory.Storage.HOT.value
_COLD = Memory.Storage.COLD.value


def decay_params_from_settings() -> DecayParams:
    """The global decay model (the DECAY_* settings); a namespace's columns override it."""
    return DecayParams(
        model=settings.DECAY_MODEL,
        half_life_days=settings.DECAY_HALF_LIFE_DAYS,
        beta=settings.DECAY_BETA,
        power_alpha=settings.DECAY_POWER_ALPHA,
        fast_half_life_days=settings.DECAY_FAST_HALF_LIFE_DAYS,
        slow_half_life_days=settings.DECAY_SLOW_HALF_LIFE_DAYS,
        fast_weight=settings.DECAY_FAST_WEIGHT,
    )


def thresholds_from_settings() -> Thresholds:
    """FORGET_THRESHOLD, REVIEW_DANGER_ZONE_*, PROMOTE_* as one Thresholds."""
    return Thresholds(
        forget=settings.FORGET_THRESHOLD,
        danger_min=settings.REVIEW_DANGER_ZONE_MIN,
        danger_max=settings.REVIEW_DANGER_ZONE_MAX,
        promote=settings.PROMOTE_THRESHOLD,
        promote_use_count=settings.PROMOTE_USE_COUNT,
        promote_window_days=settings.PROMOTE_TIME_WINDOW_DAYS,
        promote_score_min_uses=settings.PROMOTE_SCORE_MIN_USES,
    )


def core_rule_from_settings() -> CorePromotionRule:
    return CorePromotionRule(
        min_sessions=settings.CORE_MIN_SESSIONS,
        min_access_count=settings.CORE_MIN_ACCESS_COUNT,
        min_stability=settings.CORE_MIN_STABILITY,
    )


def cold_rule_from_settings() -> ColdStorageRule:
    return ColdStorageRule(
        floor=settings.COLD_FLOOR,
        grace_days=settings.COLD_GRACE_DAYS,
        archive_after_days=settings.ARCHIVE_COLD_AFTER_DAYS,
    )


@dataclass(frozen=True)
class SweepConfig:
    """Everything a sweep decides with: the rules' own parameter objects (whose defaults
    are the settings' defaults) and the sweep's plumbing. from_settings() reads the
    settings, through the *_from_settings functions above."""

    decay: DecayParams = field(default_factory=DecayParams)
    thresholds: Thresholds = field(default_factory=Thresholds)
    core: CorePromotionRule = field(default_factory=CorePromotionRule)
    cold: ColdStorageRule = field(default_factory=ColdStorageRule)
    retention_days: float = 30.0
    batch_size: int = 50_000
    purge_batch_size: int = 1000
    batch_pause_seconds: float = 0.0

    @classmethod
    def from_settings(cls, **overrides: Any) -> SweepConfig:
        """The settings' config; `overrides` replace whole fields (e.g. thresholds=...)."""
        values = {
            "decay": decay_params_from_settings(),
            "thresholds": thresholds_from_settings(),
            "core": core_rule_from_settings(),
            "cold": cold_rule_from_settings(),
            "retention_days": settings.FORGOTTEN_RETENTION_DAYS,
            "batch_size": settings.SWEEP_BATCH_SIZE,
            "purge_batch_size": settings.PURGE_BATCH_SIZE,
            "batch_pause_seconds": settings.SWEEP_BATCH_PAUSE_SECONDS,
        }
        values.update(overrides)
        return cls(**values)

    @property
    def forget_reason(self) -> str:
        return f"decay: score below the forget threshold {self.thresholds.forget:g}"


@dataclass
class SweepReport:
    """What a sweep did (or, with dry_run, would do)."""

    now: datetime
    dry_run: bool = False
    namespace_id: int | None = None
    examined: int = 0
    batches: int = 0
    core: int = 0
    promoted: int = 0
    forgotten: int = 0
    cold: int = 0
    archived: int = 0
    purged: int = 0
    sketched: int = 0  # memories a lost near-duplicate task left unsketched
    merged: int = 0  # near-duplicates merged into their group's strongest
    duration_seconds: float = 0.0
    # Dry runs: per namespace id, per rule, how many; and the first ids of each rule.
    by_namespace: dict[int, dict[str, int]] = field(default_factory=dict)
    samples: dict[str, list[int]] = field(default_factory=dict)

    _FIELD_OF = {
        CORE: "core",
        PROMOTE: "promoted",
        FORGET: "forgotten",
        COLD: "cold",
        ARCHIVE: "archived",
    }

    def add(self, rule: str, count: int) -> None:
        name = self._FIELD_OF[rule]
        setattr(self, name, getattr(self, name) + count)

    @property
    def changed(self) -> int:
        return self.core + self.promoted + self.forgotten + self.cold + self.archived

    def counts(self) -> dict[str, Any]:
        """The figures a BackgroundRun keeps."""
        data = asdict(self)
        for key in ("now", "by_namespace", "samples", "namespace_id"):
            data.pop(key)
        data["duration_seconds"] = round(self.duration_seconds, 3)
        return data


# --- SQL ---------------------------------------------------------------------------------


def _decisions_sql(*, namespace_id: int | None) -> tuple[str, list[Any]]:
    """CTEs ns, base, scored, ruled, d after p: d holds the rows of one id range whose
    state changes. Two parameters follow p's: the range's first id and the id after its
    last one; then the namespace id when given. Returns the SQL and that last parameter.
    """
    pg = is_postgres()
    event = quote(MemoryEvent._meta.db_table)
    if pg:
        sessions = (
            "(SELECT count(DISTINCT e) FROM jsonb_array_elements_text(CASE WHEN "
            "jsonb_typeof(s.session_ids) = 'array' THEN s.session_ids ELSE '[]'::jsonb END) "
            "AS e WHERE e <> '')"
        )
        stamps = (
            "(SELECT count(*) FROM jsonb_array_elements_text(CASE WHEN "
            "jsonb_typeof(s.recall_timestamps) = 'array' THEN s.recall_timestamps "
            "ELSE '[]'::jsonb END) AS t WHERE left(t, 19) >= p.window_stamp)"
        )
    else:
        sessions = (
            "(SELECT count(DISTINCT value) FROM json_each(s.session_ids) "
            "WHERE type = 'text' AND value <> '')"
        )
        stamps = (
            "(SELECT count(*) FROM json_each(s.recall_timestamps) "
            "WHERE type = 'text' AND substr(value, 1, 19) >= p.window_stamp)"
        )
    # Uses inside the promotion window: memory_touch leaves a 'touched' event per use and
    # recall keeps the last 20 recall times; only memories with enough uses in all and a
    # use inside the window (necessary conditions, read off the row) are counted.
    touched = (
        f"(SELECT count(*) FROM {event} e WHERE e.memory_ref = s.id "
        f"AND e.kind = '{MemoryEvent.Kind.TOUCHED.value}' AND e.created_at >= p.window_start)"
    )
    # A long-term memory sits at its floor: score at or below COLD_FLOOR, no use inside the
    # promotion window (so a memory just promoted for its uses is not frozen by the next
    # sweep) and no recall, even associative, for COLD_GRACE_DAYS.
    at_floor = (
        "(s.score <= p.cold_floor AND s.last_used_at < p.window_start "
        "AND (s.last_accessed_at IS NULL OR s.last_accessed_at < p.cold_grace_before))"
    )
    where = f"m.id >= %s AND m.id < %s AND m.status IN ('{_ACTIVE}', '{_PROMOTED}')"
    if namespace_id is not None:
        where += " AND m.namespace_id = %s"
    keep = keep_subquery()
    sql = f"""{scored_memories_sql(where=where)},
    ruled AS (
        SELECT s.id, s.namespace_id, s.status, s.tier, s.storage, s.use_count,
            s.last_used_at, s.strength, s.access_count, s.stability, s.score,
            CASE
                WHEN s.tier IN ('{_SHORT}', '{_LONG}') AND CASE
                    WHEN s.access_count >= p.core_access AND s.stability >= p.core_stability
                    THEN {sessions} >= p.core_sessions ELSE 0 = 1 END
                    THEN '{CORE}'
                WHEN s.status = '{_ACTIVE}' AND s.tier = '{_SHORT}' AND (
                    (s.score >= p.promote AND s.use_count >= p.score_min_uses) OR CASE
                        WHEN s.use_count >= p.use_n AND s.last_used_at >= p.window_start
                        THEN {touched} + {stamps} >= p.use_n ELSE 0 = 1 END)
                    THEN '{PROMOTE}'
                WHEN s.status = '{_ACTIVE}' AND s.tier = '{_SHORT}' AND s.score < p.forget
                    THEN '{FORGET}'
                WHEN p.archive_on = 1 AND s.status = '{_PROMOTED}' AND s.tier = '{_LONG}'
                    AND s.last_used_at < p.archive_before
                    AND (s.storage = '{_COLD}' OR {at_floor})
                    THEN '{ARCHIVE}'
                WHEN s.status = '{_PROMOTED}' AND s.tier = '{_LONG}' AND s.storage = '{_HOT}'
                    AND {at_floor}
                    THEN '{COLD}'
            END AS action
        FROM scored s CROSS JOIN p
        {keep}
    ),
    d AS (
        SELECT r.*,
            CASE r.action WHEN '{CORE}' THEN '{_CORE}' WHEN '{PROMOTE}' THEN '{_LONG}'
                ELSE r.tier END AS new_tier,
            CASE r.action WHEN '{CORE}' THEN '{_PROMOTED}' WHEN '{PROMOTE}' THEN '{_PROMOTED}'
                WHEN '{FORGET}' THEN '{_FORGOTTEN}' WHEN '{ARCHIVE}' THEN '{_ARCHIVED}'
                ELSE r.status END AS new_status,
            CASE r.action WHEN '{CORE}' THEN '{_HOT}' WHEN '{COLD}' THEN '{_COLD}'
                WHEN '{ARCHIVE}' THEN '{_COLD}' ELSE r.storage END AS new_storage
        FROM ruled r
        WHERE r.action IS NOT NULL
    )"""
    return sql, [namespace_id] if namespace_id is not None else []


def _event_json(pg: bool) -> tuple[str, str]:
    """SQL for an event's before and after objects, from a row aliased u (and p)."""
    build = "jsonb_build_object" if pg else "json_object"
    before = f"{build}('status', u.status, 'tier', u.tier, 'storage', u.storage)"
    after_fields = (
        "'status', u.new_status, 'tier', u.new_tier, 'storage', u.new_storage, "
        "'score', u.score, 'rule', u.action"
    )
    after = (
        f"CASE WHEN u.action = '{FORGET}' THEN {build}({after_fields}, 'reason', p.reason) "
        f"ELSE {build}({after_fields}) END"
    )
    return before, after


def _event_kind_sql(column: str) -> str:
    branches = " ".join(f"WHEN '{rule}' THEN '{EVENT_KIND[rule].value}'" for rule in RULES)
    return f"CASE {column} {branches} END"


_EVENT_COLUMNS = (
    "namespace_id, memory_id, memory_ref, kind, before, after, actor_id, source, "
    "classification, created_at"
)


def _set_clause(target: str) -> str:
    """SET assignments from d (the decision) and p, for an UPDATE of memories as `target`."""
    return f"""
        tier = d.new_tier,
        status = d.new_status,
        storage = d.new_storage,
        status_changed_at = CASE WHEN d.new_status <> d.status THEN p.now_ts
            ELSE {target}.status_changed_at END,
        promoted_at = CASE WHEN d.new_status = '{_PROMOTED}' AND d.status <> '{_PROMOTED}'
            THEN p.now_ts ELSE {target}.promoted_at END,
        forgotten_at = CASE WHEN d.action = '{FORGET}' THEN p.now_ts
            ELSE {target}.forgotten_at END,
        forgotten_reason = CASE WHEN d.action = '{FORGET}' THEN p.reason
            ELSE {target}.forgotten_reason END,
        forgotten_score = CASE WHEN d.action = '{FORGET}' THEN d.score
            ELSE {target}.forgotten_score END,
        updated_at = p.now_ts"""


def _apply_batch_postgres(
    p_sql: str, p_params: list[Any], lo: int, hi: int, namespace_id: int | None
) -> Counter[str]:
    """One statement: decide, update the changed rows, insert their events, count."""
    memory, event = quote(Memory._meta.db_table), quote(MemoryEvent._meta.db_table)
    decisions, d_params = _decisions_sql(namespace_id=namespace_id)
    before, after = _event_json(pg=True)
    # The WHERE clause re-checks every input of the decision against the row as it is
    # when the UPDATE reaches it. Under READ COMMITTED a row changed by a concurrent
    # transaction (another sweep, a recall, a grade) is re-read after that commit; if any
    # input moved, the row is skipped and the next sweep decides it afresh.
    sql = f"""
    WITH {p_sql}, {decisions},
    upd AS (
        UPDATE {memory} AS m SET {_set_clause("m")}
        FROM d CROSS JOIN p
        WHERE m.id = d.id AND m.status = d.status AND m.tier = d.tier
            AND m.storage = d.storage AND m.use_count = d.use_count
            AND m.last_used_at = d.last_used_at AND m.strength = d.strength
            AND m.access_count = d.access_count AND m.stability = d.stability
        RETURNING m.id, m.namespace_id, m.classification, d.action, d.score, d.status,
            d.tier, d.storage, d.new_status, d.new_tier, d.new_storage
    ),
    ev AS (
        INSERT INTO {event} ({_EVENT_COLUMNS})
        SELECT u.namespace_id, u.id, u.id, {_event_kind_sql("u.action")},
            {before}, {after}, NULL, '{EVENT_SOURCE}', u.classification, p.now_ts
        FROM upd u CROSS JOIN p
        RETURNING 1
    )
    SELECT u.action, count(*) FROM upd u GROUP BY u.action
    """
    with connection.cursor() as cursor:
        # The planner's cost estimate (the correlated counts) trips JIT compilation, which
        # costs ~0.8 s per batch for ~0.05 s of work; the statements are simple enough.
        cursor.execute("SET LOCAL jit = off")
        # A batch need not wait for its commit to reach the disk: if PostgreSQL crashes
        # the last batches are lost whole (never half), and the next sweep redoes them.
        cursor.execute("SET LOCAL synchronous_commit = off")
        cursor.execute(sql, [*p_params, lo, hi, *d_params])
        return Counter({action: count for action, count in cursor.fetchall()})


_SQLITE_TEMP = "engram_sweep_batch"


def _apply_batch_sqlite(
    p_sql: str, p_params: list[Any], lo: int, hi: int, namespace_id: int | None
) -> Counter[str]:
    """Decisions into a temp table, then events and updates from it, in one transaction.

    The transaction holds SQLite's write lock from its first statement (IMMEDIATE), so
    no other writer can change a row between the decision and the update.
    """
    memory, event = quote(Memory._meta.db_table), quote(MemoryEvent._meta.db_table)
    decisions, d_params = _decisions_sql(namespace_id=namespace_id)
    before, after = _event_json(pg=False)
    temp = f"temp.{_SQLITE_TEMP}"
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {_SQLITE_TEMP} (id INTEGER PRIMARY KEY, "
            "namespace_id INTEGER, action TEXT, score REAL, status TEXT, tier TEXT, "
            "storage TEXT, new_status TEXT, new_tier TEXT, new_storage TEXT)"
        )
        cursor.execute(f"DELETE FROM {temp}")
        cursor.execute(
            f"INSERT INTO {temp} WITH {p_sql}, {decisions} "
            "SELECT id, namespace_id, action, score, status, tier, storage, new_status, "
            "new_tier, new_storage FROM d",
            [*p_params, lo, hi, *d_params],
        )
        cursor.execute(f"SELECT action, count(*) FROM {temp} GROUP BY action")
        counts = Counter({action: count for action, count in cursor.fetchall()})
        if not counts:
            return counts
        cursor.execute(
            f"WITH {p_sql} INSERT INTO {event} ({_EVENT_COLUMNS}) "
            f"SELECT u.namespace_id, u.id, u.id, {_event_kind_sql('u.action')}, "
            f"{before}, {after}, NULL, '{EVENT_SOURCE}', m.classification, p.now_ts "
            f"FROM {temp} u JOIN {memory} m ON m.id = u.id CROSS JOIN p ORDER BY u.id",
            p_params,
        )
        cursor.execute(
            f"WITH {p_sql} UPDATE {memory} SET {_set_clause(memory)} "
            f"FROM {temp} AS d CROSS JOIN p WHERE {memory}.id = d.id",
            p_params,
        )
        cursor.execute(f"DELETE FROM {temp}")
    return counts


def _dry_batch(
    p_sql: str, p_params: list[Any], lo: int, hi: int, namespace_id: int | None
) -> list[tuple[int, int, str, float]]:
    decisions, d_params = _decisions_sql(namespace_id=namespace_id)
    with transaction.atomic(), connection.cursor() as cursor:
        if is_postgres():
            cursor.execute("SET LOCAL jit = off")
        cursor.execute(
            f"WITH {p_sql}, {decisions} SELECT id, namespace_id, action, score FROM d ORDER BY id",
            [*p_params, lo, hi, *d_params],
        )
        return cursor.fetchall()


# --- Services ----------------------------------------------------------------------------


def _memories_in_scope(namespace_id: int | None):
    memories = Memory.objects.all()
    return memories if namespace_id is None else memories.filter(namespace_id=namespace_id)


def _id_ranges(namespace_id: int | None, batch_size: int) -> list[tuple[int, int]]:
    bounds = (
        _memories_in_scope(namespace_id)
        .filter(status__in=(_ACTIVE, _PROMOTED))
        .order_by()
        .values_list("id", flat=True)
    )
    first = bounds.order_by("id").first()
    last = bounds.order_by("-id").first()
    if first is None or last is None:
        return []
    return [(lo, min(lo + batch_size, last + 1)) for lo in range(first, last + 1, batch_size)]


def sweep_run(
    *,
    namespace: Namespace | int | None = None,
    now: datetime | None = None,
    dry_run: bool = False,
    config: SweepConfig | None = None,
    purge: bool = True,
) -> SweepReport:
    """Apply the decay rules to every live memory (of one namespace, or all), then purge.

    Each id range is its own transaction; the sweep as a whole is not, so it must not be
    called inside an atomic block that a crash would roll back as one. With dry_run
    nothing is written: the report holds the counts, per namespace, and sample ids.
    """
    started = time.perf_counter()
    config = config or SweepConfig.from_settings()
    now = now or timezone.now()
    namespace_id = namespace.pk if isinstance(namespace, Namespace) else namespace
    report = SweepReport(now=now, dry_run=dry_run, namespace_id=namespace_id)
    ensure_sqlite_math()
    p_sql, p_params = params_cte(config, now)
    # First, so a dry run counts the memories the real run sketches (before rules change them).
    report.sketched = near_index_missing(namespace_id, now=now, dry_run=dry_run)
    report.examined = (
        _memories_in_scope(namespace_id).filter(status__in=(_ACTIVE, _PROMOTED)).count()
    )
    for lo, hi in _id_ranges(namespace_id, config.batch_size):
        report.batches += 1
        if dry_run:
            for memory_id, ns_id, action, _score in _dry_batch(
                p_sql, p_params, lo, hi, namespace_id
            ):
                report.add(action, 1)
                per_ns = report.by_namespace.setdefault(ns_id, {})
                per_ns[action] = per_ns.get(action, 0) + 1
                sample = report.samples.setdefault(action, [])
                if len(sample) < DRY_RUN_SAMPLES:
                    sample.append(memory_id)
            continue
        apply = pick(postgres=_apply_batch_postgres, sqlite=_apply_batch_sqlite)
        with transaction.atomic():
            counts = apply(p_sql, p_params, lo, hi, namespace_id)
            if counts:  # the batch's events, to their webhooks, in its transaction
                batch_events = Q(source=EVENT_SOURCE, created_at=now)
                batch_events &= Q(memory_ref__gte=lo, memory_ref__lt=hi)
                memory_events_announce_where(batch_events, namespace_id=namespace_id)
        for action, count in counts.items():
            report.add(action, count)
        if config.batch_pause_seconds:
            time.sleep(config.batch_pause_seconds)
    report.merged = near_duplicates_sweep(namespace_id, now=now, dry_run=dry_run)
    if purge:
        report.purged = memories_purge_forgotten(
            namespace=namespace_id, now=now, config=config, dry_run=dry_run
        )
    report.duration_seconds = time.perf_counter() - started
    return report


def _purge_candidates(namespace_id: int | None, cutoff: datetime):
    return _memories_in_scope(namespace_id).filter(
        status=_FORGOTTEN, tier=_SHORT, forgotten_at__lt=cutoff
    )


def memories_purge_forgotten(
    *,
    namespace: Namespace | int | None = None,
    now: datetime | None = None,
    config: SweepConfig | None = None,
    dry_run: bool = False,
) -> int:
    """Delete short-term memories forgotten more than the retention period ago, in batches.

    Each batch locks its rows, records one 'purged' event per memory (set-based), then
    deletes them with their cards and links, all in one transaction. Long-term and core
    memories are never deleted, even when forgotten by hand. Returns how many went.
    """
    config = config or SweepConfig.from_settings()
    now = now or timezone.now()
    namespace_id = namespace.pk if isinstance(namespace, Namespace) else namespace
    cutoff = now - timedelta(days=config.retention_days)
    if dry_run:
        return _purge_candidates(namespace_id, cutoff).count()
    memory, event = quote(Memory._meta.db_table), quote(MemoryEvent._meta.db_table)
    build = pick(postgres="jsonb_build_object", sqlite="json_object")
    purged = 0
    while True:
        with transaction.atomic():
            candidates = _purge_candidates(namespace_id, cutoff).order_by("id")
            if is_postgres():
                # Concurrent sweeps split the work instead of queueing behind each other.
                candidates = candidates.select_for_update(skip_locked=True)
            ids = list(candidates.values_list("id", flat=True)[: config.purge_batch_size])
            if not ids:
                break
            placeholders = ", ".join(["%s"] * len(ids))
            with connection.cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {event} ({_EVENT_COLUMNS}) "
                    f"SELECT m.namespace_id, m.id, m.id, %s, "
                    f"{build}('status', m.status, 'topic', m.topic, "
                    f"'forgotten_reason', m.forgotten_reason), {build}(), NULL, %s, "
                    f"m.classification, %s "
                    f"FROM {memory} m WHERE m.id IN ({placeholders})",
                    [MemoryEvent.Kind.PURGED.value, EVENT_SOURCE, db_datetime(now), *ids],
                )
            memory_events_announce_where(
                Q(source=EVENT_SOURCE, created_at=now, memory_ref__in=ids),
                namespace_id=namespace_id,
            )
            Memory.objects.filter(pk__in=ids).delete()
        purged += len(ids)
    return purged


def namespace_lookup(label: str) -> Namespace | None:
    """A namespace named as owner/slug (or by its numeric id), for commands."""
    if label.isdigit():
        return Namespace.objects.filter(pk=int(label)).first()
    owner, _, slug = label.rpartition("/")
    return Namespace.objects.filter(owner__username=owner, slug=slug).first()
