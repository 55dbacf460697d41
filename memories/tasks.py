"""django-q2 tasks of the memories app, their schedules, and how every run is recorded.

Tasks are thin: they take ids, call one service and record a BackgroundRun (what the run
did, or the error). A task that raises is recorded as failed and re-raised; its schedule
and enqueue options say ack_failure=False, so django-q2 hands it to a worker again after
Q_RETRY seconds, up to Q_MAX_ATTEMPTS attempts, and then keeps it among the failed tasks
in the admin. Every service behind a task is idempotent (docs/background.md).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.dispatch import receiver
from django.utils import timezone
from django_q.models import Schedule, Task
from django_q.signals import post_execute_in_worker, pre_execute

from config.queue import Q_OPTIONS, enqueue
from memories.consolidation import digests_run
from memories.forget_notices import about_to_forget_notify
from memories.import_jobs import import_job_run
from memories.models import BackgroundRun, Namespace
from memories.services.decay_fits import decay_fits_run
from memories.services.near_duplicates import near_index_pending
from memories.sweep import sweep_run
from memories.webhook_delivery import webhook_deliver_run, webhooks_retry_due

_current_task: ContextVar[dict[str, Any] | None] = ContextVar("engram_task", default=None)


@receiver(pre_execute, dispatch_uid="engram-remember-task")
def _remember_task(sender, func=None, task=None, **kwargs) -> None:
    """Keep the running task's id, so its BackgroundRun can name it and count attempts."""
    _current_task.set({"id": task.get("id", ""), "name": task.get("name", "")} if task else None)


@receiver(post_execute_in_worker, dispatch_uid="engram-forget-task")
def _forget_task(sender, **kwargs) -> None:
    _current_task.set(None)


def _attempt(task_id: str) -> int:
    """1 + the earlier attempts of this task id.

    django-q2 counts only attempts whose result it saved; an attempt whose worker was
    killed saved none, but it did leave its BackgroundRun, so the larger count is right.
    """
    if not task_id:
        return 1
    saved = Task.objects.filter(id=task_id).values_list("attempt_count", flat=True).first()
    recorded = BackgroundRun.objects.filter(task_id=task_id).count()
    return max(saved or 0, recorded) + 1


def _abandon_dead_runs(kind: str, task_id: str) -> None:
    """Runs left 'running' by a dead worker: earlier attempts of this very task (it is being
    handed out again, so they are over), and any older than Q_RETRY (the worker would have
    killed them by then)."""
    cutoff = timezone.now() - timedelta(seconds=settings.Q_RETRY)
    dead = Q(started_at__lt=cutoff) | (Q(task_id=task_id) if task_id else Q(pk__in=[]))
    BackgroundRun.objects.filter(dead, kind=kind, status=BackgroundRun.Status.RUNNING).update(
        status=BackgroundRun.Status.FAILED,
        finished_at=timezone.now(),
        error="No finish was recorded: the worker was killed or timed out.",
    )


def _existing_namespace_id(namespace_id: Any) -> int | None:
    if namespace_id is None:
        return None
    try:
        return Namespace.objects.filter(pk=namespace_id).values_list("pk", flat=True).first()
    except (TypeError, ValueError):
        return None


def run_recorded(
    kind: str, work: Callable[[], Mapping[str, Any]], *, namespace_id: int | None = None
) -> dict[str, Any]:
    """Run `work` (a service call returning its counts) as one recorded BackgroundRun.

    The run row is written before the work starts (autocommit, so the dashboard sees a
    run in progress) and finished after it; an exception marks it failed with the
    traceback and propagates, so django-q2 records and retries the task.
    """
    task = _current_task.get() or {}
    task_id = str(task.get("id") or "")
    _abandon_dead_runs(kind, task_id)
    # A task called with a bad namespace id still gets its run record, and fails in it.
    known = _existing_namespace_id(namespace_id)
    run = BackgroundRun.objects.create(
        kind=kind,
        namespace_id=known,
        started_at=timezone.now(),
        task_id=task_id,
        attempt=_attempt(task_id),
        counts={} if known == namespace_id else {"namespace_id": repr(namespace_id)},
    )
    try:
        counts = dict(work())
    except Exception as error:
        BackgroundRun.objects.filter(pk=run.pk).update(
            status=BackgroundRun.Status.FAILED,
            finished_at=timezone.now(),
            # A service may say what it did before failing (recall.backfill does).
            counts=dict(getattr(error, "counts", None) or {}),
            error=f"{type(error).__name__}: {error}\n\n{traceback.format_exc()}"[:20_000],
        )
        raise
    BackgroundRun.objects.filter(pk=run.pk).update(
        status=BackgroundRun.Status.OK, finished_at=timezone.now(), counts=counts
    )
    return counts


def background_runs_prune(*, now=None, keep_days: int | None = None) -> int:
    """Delete run records older than BACKGROUND_RUNS_KEEP_DAYS; returns how many."""
    now = now or timezone.now()
    keep_days = settings.BACKGROUND_RUNS_KEEP_DAYS if keep_days is None else keep_days
    deleted, _ = BackgroundRun.objects.filter(
        started_at__lt=now - timedelta(days=keep_days)
    ).delete()
    return deleted


# --- Tasks -------------------------------------------------------------------------------


def decay_sweep(namespace_id: int | None = None) -> dict[str, Any]:
    """Scheduled: the decay sweep (promote, forget, cold, archive, core, purge)."""

    def work() -> dict[str, Any]:
        counts = sweep_run(namespace=namespace_id).counts()
        counts["runs_pruned"] = background_runs_prune()
        return counts

    return run_recorded(BackgroundRun.Kind.SWEEP, work, namespace_id=namespace_id)


def consolidation_digests(namespace_id: int | None = None) -> dict[str, Any]:
    """Scheduled: daily, weekly and quarterly digests of the periods that have ended."""
    return run_recorded(
        BackgroundRun.Kind.DIGESTS,
        lambda: digests_run(namespace=namespace_id).counts(),
        namespace_id=namespace_id,
    )


def decay_fits(namespace_id: int | None = None, trigger: str = "schedule") -> dict[str, Any]:
    """Scheduled (every namespace with decay_fit suggest or auto, then the use log's prune)
    and queued by a request for one namespace: fit decay to the namespace's uses."""
    return run_recorded(
        BackgroundRun.Kind.DECAY_FIT,
        lambda: decay_fits_run(namespace_id=namespace_id, trigger=trigger),
        namespace_id=namespace_id,
    )


def decay_fit_enqueue(*, namespace_id: int) -> None:
    """Ask the worker to fit one namespace's decay now (after the caller's commit)."""
    enqueue("memories.tasks.decay_fits", namespace_id, "request")


def near_index_task(memory_ids: list[int], ceiling: int) -> int:
    """Queued by a write (near_index_later): sketch the new memories and link their
    near-duplicates. Not recorded as a run: there is one per write, and the sweep catches
    what a lost one left (near_index_missing)."""
    return near_index_pending(memory_ids, ceiling=ceiling)


def namespace_import_job(run_id: int) -> dict[str, Any]:
    """Queued by POST .../import for a large body: import it, recording the outcome in its
    run (BackgroundRun kind "import", written by the view so a client can poll it)."""
    return import_job_run(run_id=run_id)


def webhook_deliver(subscription_id: int) -> dict[str, int]:
    """Queued when a write's deliveries commit (memories.services.webhooks): send the
    subscription's due deliveries in order. Not recorded as a run (one per write); the
    delivery log is the record."""
    return webhook_deliver_run(subscription_id=subscription_id)


def webhooks_retry() -> dict[str, int]:
    """Scheduled: queue the subscriptions whose retries are due or whose task was lost."""
    return webhooks_retry_due()


def about_to_forget_webhooks(namespace_id: int | None = None) -> dict[str, Any]:
    """Scheduled (daily): memory.about_to_forget to the webhooks that asked, for what decay
    will forget within FORGET_DIGEST_DAYS, once per memory per crossing."""
    return run_recorded(
        BackgroundRun.Kind.ABOUT_TO_FORGET,
        lambda: about_to_forget_notify(namespace_id=namespace_id),
        namespace_id=namespace_id,
    )


# --- Enqueueing and schedules ------------------------------------------------------------


def sweep_enqueue(*, namespace_id: int | None = None) -> None:
    """Ask the worker for a decay sweep now (after the caller's transaction commits)."""
    enqueue("memories.tasks.decay_sweep", namespace_id)


@dataclass(frozen=True)
class ScheduleSpec:
    """One recurring task: its schedule name, function and interval setting."""

    name: str
    func: str
    interval_setting: str
    enabled_setting: str | None = None

    @property
    def minutes(self) -> int:
        return int(getattr(settings, self.interval_setting))

    @property
    def enabled(self) -> bool:
        return self.enabled_setting is None or bool(getattr(settings, self.enabled_setting))


SCHEDULES = (
    ScheduleSpec("engram: decay sweep", "memories.tasks.decay_sweep", "SWEEP_INTERVAL_MINUTES"),
    ScheduleSpec(
        "engram: simulated recall",
        "review.tasks.simulated_recall",
        "SIMULATED_RECALL_INTERVAL_MINUTES",
    ),
    ScheduleSpec(
        "engram: consolidation digests",
        "memories.tasks.consolidation_digests",
        "DIGEST_INTERVAL_MINUTES",
    ),
    ScheduleSpec(
        "engram: full-text statistics",
        "recall.tasks.term_stats_refresh",
        "RECALL_TERM_STATS_INTERVAL_MINUTES",
    ),
    ScheduleSpec(
        "engram: webhook retries",
        "memories.tasks.webhooks_retry",
        "WEBHOOK_RETRY_INTERVAL_MINUTES",
    ),
    ScheduleSpec(
        "engram: review due webhooks",
        "review.tasks.review_due_webhooks",
        "REVIEW_DUE_WEBHOOK_INTERVAL_MINUTES",
    ),
    ScheduleSpec(
        "engram: about-to-forget webhooks",
        "memories.tasks.about_to_forget_webhooks",
        "ABOUT_TO_FORGET_INTERVAL_MINUTES",
    ),
    ScheduleSpec("engram: decay fits", "memories.tasks.decay_fits", "DECAY_FIT_INTERVAL_MINUTES"),
    ScheduleSpec(
        "engram: embedding backfill",
        "recall.tasks.embedding_backfill",
        "EMBEDDING_BACKFILL_INTERVAL_MINUTES",
        enabled_setting="EMBEDDING_ENABLED",
    ),
)


@transaction.atomic
def schedules_setup(*, now=None) -> dict[str, str]:
    """Create or update the django-q2 schedules by name; safe to run any number of times.

    Returns {schedule name: "created" | "updated" | "unchanged" | "removed"}. A schedule
    whose feature is off (embedding backfill without EMBEDDING_ENABLED) is removed.
    Duplicates of a name (made by hand in the admin) are folded into one.
    """
    now = now or timezone.now()
    kwargs = repr({"q_options": Q_OPTIONS})
    outcome: dict[str, str] = {}
    for spec in SCHEDULES:
        rows = list(Schedule.objects.select_for_update().filter(name=spec.name).order_by("id"))
        if not spec.enabled:
            if rows:
                Schedule.objects.filter(pk__in=[row.pk for row in rows]).delete()
                outcome[spec.name] = "removed"
            else:
                outcome[spec.name] = "unchanged"
            continue
        wanted = {
            "func": spec.func,
            "schedule_type": Schedule.MINUTES,
            "minutes": spec.minutes,
            "repeats": -1,
            "kwargs": kwargs,
            "args": None,
            "cluster": None,
        }
        if not rows:
            Schedule.objects.create(name=spec.name, next_run=now, **wanted)
            outcome[spec.name] = "created"
            continue
        keep, extra = rows[0], rows[1:]
        if extra:
            Schedule.objects.filter(pk__in=[row.pk for row in extra]).delete()
        changed = [name for name, value in wanted.items() if getattr(keep, name) != value]
        if changed:
            for name in changed:
                setattr(keep, name, wanted[name])
            if (
                "minutes" in changed
                and keep.next_run
                and keep.next_run > now + timedelta(minutes=spec.minutes)
            ):
                # A shorter interval takes effect now rather than after the old one.
                keep.next_run = now + timedelta(minutes=spec.minutes)
                changed.append("next_run")
            keep.save(update_fields=changed)
        outcome[spec.name] = "updated" if changed or extra else "unchanged"
    return outcome
