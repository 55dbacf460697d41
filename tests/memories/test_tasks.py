"""Tasks, their run records, retries, schedules and the sweep command."""

from __future__ import annotations

import ast
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import OrmQ, Schedule, Task
from django_q.tasks import async_task

from config.queue import Q_OPTIONS
from memories.models import BackgroundRun, Memory, MemoryEvent
from memories.tasks import (
    SCHEDULES,
    _current_task,
    background_runs_prune,
    decay_sweep,
    run_recorded,
    schedules_setup,
    sweep_enqueue,
)
from tests.support.background import state
from tests.support.redis_db import redis_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def stale(remember):
    """A memory the next real-time sweep forgets."""
    return remember(days_ago=0, last_used_at=timezone.now() - timedelta(days=30))


# --- Run records -------------------------------------------------------------------------


def test_the_sweep_task_records_what_it_did(stale):
    counts = decay_sweep()

    run = BackgroundRun.objects.get()
    assert (run.kind, run.status, run.namespace_id) == ("sweep", "ok", None)
    assert run.counts["forgotten"] == counts["forgotten"] == 1
    assert run.counts["examined"] == 1 and "duration_seconds" in run.counts
    assert run.finished_at >= run.started_at and run.duration_seconds >= 0
    assert run.attempt == 1 and run.error == "" and run.task_id == ""  # not through django-q


def test_a_namespace_sweep_names_its_namespace(stale):
    decay_sweep(stale.namespace_id)

    assert BackgroundRun.objects.get().namespace_id == stale.namespace_id


def test_a_failing_task_is_recorded_and_re_raised(monkeypatch, db):
    def broken(**kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr("memories.tasks.sweep_run", broken)

    with pytest.raises(RuntimeError, match="on fire"):
        decay_sweep()

    run = BackgroundRun.objects.get()
    assert run.status == "failed" and run.finished_at is not None
    assert run.error.startswith("RuntimeError: database on fire")
    assert "Traceback" in run.error


def test_a_failure_keeps_the_counts_the_service_reports(db):
    class PartlyDone(Exception):
        counts = {"embedded": 64}

    def work():
        raise PartlyDone("provider down")

    with pytest.raises(PartlyDone):
        run_recorded(BackgroundRun.Kind.EMBEDDING_BACKFILL, work)

    assert BackgroundRun.objects.get().counts == {"embedded": 64}


def test_runs_left_running_by_a_dead_worker_are_marked_failed(db, settings):
    dead = BackgroundRun.objects.create(
        kind="sweep", started_at=timezone.now() - timedelta(seconds=settings.Q_RETRY + 60)
    )
    running = BackgroundRun.objects.create(kind="sweep")

    run_recorded(BackgroundRun.Kind.SWEEP, lambda: {})

    dead.refresh_from_db()
    running.refresh_from_db()
    assert dead.status == "failed" and "killed" in dead.error
    assert running.status == "running"


def test_old_run_records_are_pruned(db):
    old = BackgroundRun.objects.create(kind="sweep", started_at=timezone.now() - timedelta(days=91))
    BackgroundRun.objects.create(kind="sweep")

    assert background_runs_prune() == 1
    assert not BackgroundRun.objects.filter(pk=old.pk).exists()


def test_through_django_q_the_task_id_and_attempt_are_recorded(stale):
    task_id = async_task("memories.tasks.decay_sweep", q_options={"ack_failure": False})

    run = BackgroundRun.objects.get()
    assert run.task_id == task_id and run.attempt == 1
    assert Task.objects.get(id=task_id).success
    assert state(stale)[0] == "forgotten"
    decay_sweep()  # called directly afterwards: no task id left over
    assert BackgroundRun.objects.latest("id").task_id == ""


def test_a_retried_task_counts_its_attempts(db):
    # django-q2 keeps one Task row per task id and counts the attempts it has finished; a
    # task it hands to a worker again (ack_failure=False) runs under the same id.
    now = timezone.now()
    Task.objects.create(
        id="0f" * 16,
        name="retried",
        func="memories.tasks.decay_sweep",
        started=now,
        stopped=now,
        success=False,
        attempt_count=1,
    )
    token = _current_task.set({"id": "0f" * 16, "name": "retried"})
    try:
        run_recorded(BackgroundRun.Kind.SWEEP, lambda: {})
    finally:
        _current_task.reset(token)

    run = BackgroundRun.objects.get()
    assert (run.task_id, run.attempt) == ("0f" * 16, 2)


def test_a_task_handed_out_again_after_its_worker_died_closes_the_dead_run(db):
    # A killed worker saves no result, so django-q2 has no attempt to count: the run is.
    dead = BackgroundRun.objects.create(kind="sweep", task_id="ab" * 16)
    token = _current_task.set({"id": "ab" * 16, "name": "killed"})
    try:
        run_recorded(BackgroundRun.Kind.SWEEP, lambda: {"ok": 1})
    finally:
        _current_task.reset(token)

    dead.refresh_from_db()
    assert dead.status == "failed" and "killed" in dead.error
    assert BackgroundRun.objects.latest("id").attempt == 2


def test_tasks_ask_django_q_to_retry_failures():
    # Q_CLUSTER acknowledges failures (ack_failures) for other tasks; ours opt out, so a
    # failed attempt is handed out again after Q_RETRY, up to Q_MAX_ATTEMPTS.
    assert Q_OPTIONS == {"ack_failure": False}


# --- Enqueueing --------------------------------------------------------------------------


def test_enqueueing_waits_for_the_transaction_to_commit(stale, django_capture_on_commit_callbacks):
    from django_q.conf import Conf

    sync = Conf.SYNC
    Conf.SYNC = False  # queue for a real cluster, as outside the tests
    try:
        with (
            django_capture_on_commit_callbacks(execute=False) as callbacks,
            transaction.atomic(),
        ):
            sweep_enqueue(namespace_id=stale.namespace_id)
        assert OrmQ.objects.count() == 0  # nothing queued before the commit
        assert len(callbacks) == 1
        callbacks[0]()
    finally:
        Conf.SYNC = sync
    assert OrmQ.objects.count() == 1


@pytest.mark.parametrize("kind", ["orm", "redis"])
def test_a_process_enqueues_through_one_broker(
    stale, django_capture_on_commit_callbacks, monkeypatch, kind
):
    """django-q2 makes a broker per task unless given one, and its Redis broker's is a new
    connection pool: a connection to Redis per task. config.queue keeps one per process,
    so many tasks cost one connection."""
    from django_q.conf import Conf

    from config import queue

    if kind == "redis":
        import redis

        url = redis_url("broker")
        try:
            probe = redis.Redis.from_url(url, socket_timeout=2)
            probe.flushdb()
        except redis.RedisError:
            pytest.skip("Redis is not answering on 127.0.0.1:6379")
        monkeypatch.setattr(Conf, "ORM", None)
        monkeypatch.setattr(Conf, "REDIS", url)
    monkeypatch.setattr(Conf, "SYNC", False)  # queue for a real cluster
    monkeypatch.setattr(queue, "_broker", None)
    made = []
    monkeypatch.setattr(queue, "get_broker", lambda: made.append(1) or get_broker())
    if kind == "redis":
        connections = probe.info("stats")["total_connections_received"]
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(5):
            sweep_enqueue(namespace_id=stale.namespace_id)
    assert len(made) == 1
    if kind == "redis":
        # The broker's one connection (and none per task); the list holds the five.
        after = probe.info("stats")["total_connections_received"]
        assert after - connections == 1
        assert probe.llen(queue.broker().list_key) == 5
        probe.flushdb()
    else:
        assert OrmQ.objects.count() == 5


# --- Schedules ---------------------------------------------------------------------------


def test_schedules_are_created_once_however_often_the_setup_runs(db, settings):
    settings.EMBEDDING_ENABLED = False

    first = schedules_setup()
    second = schedules_setup()

    assert set(first.values()) == {"created", "unchanged"}
    assert set(second.values()) == {"unchanged"}
    names = list(Schedule.objects.values_list("name", flat=True))
    assert sorted(names) == sorted(
        s.name for s in SCHEDULES if s.name != "engram: embedding backfill"
    )
    sweep = Schedule.objects.get(name="engram: decay sweep")
    assert (sweep.func, sweep.schedule_type, sweep.minutes, sweep.repeats) == (
        "memories.tasks.decay_sweep",
        Schedule.MINUTES,
        settings.SWEEP_INTERVAL_MINUTES,
        -1,
    )
    assert ast.literal_eval(sweep.kwargs) == {"q_options": {"ack_failure": False}}


def test_changed_settings_update_the_schedules(db, settings):
    settings.EMBEDDING_ENABLED = False
    schedules_setup()
    Schedule.objects.create(name="engram: decay sweep", func="x.y")  # a hand-made duplicate
    settings.SWEEP_INTERVAL_MINUTES = 5
    settings.EMBEDDING_ENABLED = True

    outcome = schedules_setup()

    assert outcome["engram: decay sweep"] == "updated"
    assert outcome["engram: embedding backfill"] == "created"
    assert Schedule.objects.get(name="engram: decay sweep").minutes == 5
    settings.EMBEDDING_ENABLED = False
    assert schedules_setup()["engram: embedding backfill"] == "removed"


def test_setup_schedules_command(db, capsys):
    call_command("setup_schedules")
    call_command("setup_schedules")

    out = capsys.readouterr().out
    assert "engram: decay sweep: created every 15 min" in out
    assert "engram: decay sweep: unchanged" in out


# --- The sweep command -------------------------------------------------------------------


def test_sweep_dry_run_prints_and_writes_nothing(stale, capsys):
    call_command("sweep", "--dry-run")

    out = capsys.readouterr().out
    assert "Dry run" in out and "1 would be forgotten" in out
    assert f"e.g. #{stale.pk}" in out and "by namespace:" in out and "work" in out
    assert state(stale)[0] == "active"
    assert not MemoryEvent.objects.filter(source="sweep").exists()
    assert not BackgroundRun.objects.exists()


def test_sweep_command_applies_and_records(stale, capsys):
    call_command("sweep", "--namespace", "ada/work", "--json")

    data = json.loads(capsys.readouterr().out)
    assert data["forgotten"] == 1 and data["dry_run"] is False
    assert state(stale)[0] == "forgotten"
    assert BackgroundRun.objects.get().namespace_id == stale.namespace_id


def test_sweep_command_refuses_an_unknown_namespace(db):
    with pytest.raises(CommandError, match="No namespace"):
        call_command("sweep", "--namespace", "nobody/nothing")


def test_a_sweep_by_id(stale, capsys):
    call_command("sweep", "--namespace", str(stale.namespace_id))

    assert "1 were forgotten" in capsys.readouterr().out
    assert Memory.objects.get(pk=stale.pk).status == "forgotten"
