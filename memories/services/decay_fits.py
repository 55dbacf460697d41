"""Fitting a namespace's decay to its own uses (issue 19): read, fit, store, apply.

decay_fit_run reads the namespace's memories and use log (memories.services.uses) as
arrays, in two statements, hands them to the pure fit (memories.decay_fit), stores the
result as a DecayFit, and, under decay_fit auto, applies it when it beat the constants on
its validation slice (else the constants decide again). decay_fits_run is the worker's
schedule: every namespace that asked for fits (suggest or auto), then the use log's prune.

How each memory's observed history starts, so that no use the log never saw is counted
as absent: a memory created inside the history window whose first logged use is its first
use ever is observed from its creation; one with uses before the log (or before the
window) from its first logged use, which starts the clock rather than counting as an event;
one with no logged use from its last use (last_used_at, with its use_count), since nothing
used it after. The observation ends now, or when it stopped being live or true.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from config.db import is_postgres
from config.queue import enqueue
from memories import decay_fit
from memories.models import (
    LIVE_STATUSES,
    Classification,
    DecayFit,
    Memory,
    MemoryUse,
    Namespace,
)
from memories.services.uses import uses_prune


@dataclass(frozen=True)
class History:
    """A namespace's history as the pure fit takes it (build_intervals' arguments), with
    the level of the memories it covers."""

    memory_start: np.ndarray
    memory_start_count: np.ndarray
    memory_end: np.ndarray
    memory_strength: np.ndarray
    use_memory: np.ndarray
    use_at: np.ndarray
    classification: int

    @property
    def start(self) -> float:
        return float(self.memory_start.min()) if len(self.memory_start) else 0.0


def _epoch(column: str) -> str:
    if is_postgres():
        return f"EXTRACT(EPOCH FROM {column})::float8"
    return f"(julianday({column}) - 2440587.5) * 86400.0"


def namespace_history(namespace: Namespace, *, now: datetime) -> History:
    """The namespace's memories and logged uses inside DECAY_FIT_HISTORY_DAYS before `now`."""
    window_start = (now - timedelta(days=settings.DECAY_FIT_HISTORY_DAYS)).timestamp()
    now_s = now.timestamp()
    live = ", ".join(f"'{status}'" for status in LIVE_STATUSES)
    memory_table, use_table = Memory._meta.db_table, MemoryUse._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, {_epoch('created_at')}, {_epoch('last_used_at')}, use_count, strength, "
            f"CASE WHEN status IN ({live}) THEN NULL ELSE {_epoch('status_changed_at')} END, "
            f"{_epoch('valid_until')}, classification "
            f"FROM {memory_table} WHERE namespace_id = %s ORDER BY id",
            [namespace.pk],
        )
        memories = cursor.fetchall()
        cursor.execute(
            f"SELECT memory_ref, {_epoch('used_at')}, use_count FROM {use_table} "
            "WHERE namespace_id = %s AND used_at >= %s AND used_at <= %s",
            [
                namespace.pk,
                connection.ops.adapt_datetimefield_value(
                    now - timedelta(days=settings.DECAY_FIT_HISTORY_DAYS)
                ),
                connection.ops.adapt_datetimefield_value(now),
            ],
        )
        uses = cursor.fetchall()
    empty = np.zeros(0)
    if not memories:
        return History(empty, empty, empty, empty, empty.astype(np.int64), empty, 0)
    ids = np.array([row[0] for row in memories], dtype=np.int64)
    created = np.array([row[1] for row in memories], dtype=np.float64)
    last_used = np.array([row[2] for row in memories], dtype=np.float64)
    use_count = np.array([row[3] for row in memories], dtype=np.int64)
    strength = np.array([row[4] for row in memories], dtype=np.float64)
    ended = np.array([np.nan if row[5] is None else row[5] for row in memories])
    until = np.array([np.nan if row[6] is None else row[6] for row in memories])
    level = np.array([row[7] for row in memories], dtype=np.int64)
    end = np.fmin(np.fmin(ended, until), now_s)
    end = np.where(np.isnan(end), now_s, end)

    use_ref = np.array([row[0] for row in uses], dtype=np.int64)
    use_at = np.array([row[1] for row in uses], dtype=np.float64)
    use_n = np.array([row[2] for row in uses], dtype=np.int64)
    position = np.searchsorted(ids, use_ref)
    known = (position < len(ids)) & (ids[np.minimum(position, len(ids) - 1)] == use_ref)
    use_memory, use_at, use_n = position[known], use_at[known], use_n[known]
    order = np.lexsort((use_at, use_memory))
    use_memory, use_at, use_n = use_memory[order], use_at[order], use_n[order]

    # Where each memory's observation starts (the module docstring says why).
    logged = np.zeros(len(ids), dtype=bool)
    first_at = np.zeros(len(ids))
    first_n = np.zeros(len(ids), dtype=np.int64)
    if len(use_memory):
        firsts, first_index = np.unique(use_memory, return_index=True)
        logged[firsts] = True
        first_at[firsts] = use_at[first_index]
        first_n[firsts] = use_n[first_index]
    complete = logged & (first_n == 1) & (created >= window_start)
    start = np.where(complete, created, np.where(logged, first_at, last_used))
    start_count = np.where(complete, 0, np.where(logged, first_n, use_count))
    # A memory seen only from before the window (no use since) starts at the window.
    start = np.where(~logged & (start < window_start), np.maximum(start, window_start), start)
    # Uses after the start (the first logged use that starts the clock is not an event).
    keep = use_at > start[use_memory]
    observed = end > start
    classification = int(level[observed].max()) if observed.any() else 0
    return _renumbered(
        start, start_count, end, strength, observed, use_memory[keep], use_at[keep], classification
    )


def _renumbered(start, start_count, end, strength, observed, use_memory, use_at, level):
    """History over the observed memories only, the uses' indices renumbered to match."""
    index = np.cumsum(observed) - 1
    mine = observed[use_memory]
    return History(
        memory_start=start[observed],
        memory_start_count=start_count[observed],
        memory_end=end[observed],
        memory_strength=strength[observed],
        use_memory=index[use_memory[mine]],
        use_at=use_at[mine],
        classification=level,
    )


def decay_fit_run(
    *, namespace: Namespace, now: datetime | None = None, trigger: str = DecayFit.Trigger.SCHEDULE
) -> DecayFit:
    """Fit the namespace's decay to its history, store the fit, and apply it under auto."""
    now = now or timezone.now()
    started = time.perf_counter()
    history = namespace_history(namespace, now=now)
    intervals = decay_fit.build_intervals(
        memory_start=history.memory_start,
        memory_start_count=history.memory_start_count,
        memory_end=history.memory_end,
        memory_strength=history.memory_strength,
        use_memory=history.use_memory,
        use_at=history.use_at,
    )
    span = now.timestamp() - history.start
    split_at = now.timestamp() - settings.DECAY_FIT_VALIDATION_FRACTION * max(span, 0.0)
    result = decay_fit.fit_decay(
        intervals, split_at=split_at, default=namespace_constants(namespace)
    )
    params = result.params
    fit = DecayFit(
        namespace=namespace,
        created_at=now,
        trigger=trigger,
        model=params.model,
        half_life_days=params.half_life_days,
        beta=params.beta,
        power_alpha=params.power_alpha,
        fast_half_life_days=params.fast_half_life_days,
        slow_half_life_days=params.slow_half_life_days,
        fast_weight=params.fast_weight,
        rate=result.rate,
        default_rate=result.default_rate,
        n_memories=result.n_memories,
        n_uses_train=result.n_uses_train,
        n_uses_validation=result.n_uses_validation,
        validation_loss=_finite_or_none(result.validation_loss),
        default_validation_loss=_finite_or_none(result.default_validation_loss),
        model_losses={k: v for k, v in result.model_losses.items() if np.isfinite(v)},
        accepted=result.accepted,
        reason=result.reason,
        seconds=time.perf_counter() - started,
        classification=history.classification,
    )
    fit.full_clean()
    with transaction.atomic():
        fit.save()
        Namespace.objects.filter(pk=namespace.pk, decay_fit=Namespace.DecayFitMode.AUTO).update(
            decay_fit_applied=fit if fit.accepted else None
        )
    return fit


def _finite_or_none(value: float | None) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def namespace_constants(namespace: Namespace):
    """The parameters the namespace would have without a fit (its own, else the settings):
    what every fit is compared with."""
    unfitted = Namespace(
        **{
            field.attname: getattr(namespace, field.attname)
            for field in Namespace._meta.concrete_fields
        }
    )
    unfitted.decay_fit = Namespace.DecayFitMode.OFF
    return unfitted.decay_params()


def decay_fit_apply_latest(namespace: Namespace) -> None:
    """Under auto, the latest fit applies if it was accepted; in any other mode none does
    (namespace_update calls this when decay_fit changes)."""
    applied = None
    if namespace.decay_fit == Namespace.DecayFitMode.AUTO:
        latest = namespace.decay_fits.order_by("-created_at", "-id").first()
        applied = latest if latest is not None and latest.accepted else None
    namespace.decay_fit_applied = applied


def decay_fits_run(
    *,
    namespace_id: int | None = None,
    trigger: str = DecayFit.Trigger.SCHEDULE,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The worker's refit: the namespace named (whatever its mode: it was asked for), or
    every namespace whose decay_fit is suggest or auto; then the use log's prune."""
    now = now or timezone.now()
    if namespace_id is not None:
        namespaces = Namespace.objects.filter(pk=namespace_id)
    else:
        namespaces = Namespace.objects.exclude(decay_fit=Namespace.DecayFitMode.OFF)
    counts = {"fitted": 0, "accepted": 0, "uses_pruned": 0}
    for namespace in namespaces.order_by("pk"):
        fit = decay_fit_run(namespace=namespace, now=now, trigger=trigger)
        counts["fitted"] += 1
        counts["accepted"] += int(fit.accepted)
    if namespace_id is None:
        counts["uses_pruned"] = uses_prune(now=now)
    return counts


def decay_fit_request(*, namespace: Namespace) -> None:
    """Queue a fit of the namespace for the worker (after the caller's commit)."""
    enqueue("memories.tasks.decay_fits", namespace.pk, DecayFit.Trigger.REQUEST.value)


def decay_fits_visible(namespace: Namespace, *, ceiling: int = Classification.RESTRICTED):
    """The namespace's fits a caller of `ceiling` may see, newest first."""
    return namespace.decay_fits.within_ceiling(ceiling).order_by("-created_at", "-id")
