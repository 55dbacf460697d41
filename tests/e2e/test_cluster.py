"""A real `manage.py qcluster` against a real database file (or PostgreSQL database).

1. The schedules made by setup_schedules fire in the cluster and the sweep changes rows;
   a task that raises is retried up to Q_MAX_ATTEMPTS and every attempt is recorded.
2. kill -9 of the cluster in the middle of a sweep loses nothing and leaves no half-applied
   batch; django-q2 hands the task out again after Q_RETRY, the restarted cluster finishes
   it, and the end state equals a clean sweep of a copy of the same data.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from memories.tasks import SCHEDULES
from tests.support.servers import manage

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

BATCH = 200  # SWEEP_BATCH_SIZE in the kill test: 30 batches over 6,000 memories
# Seeded memory n has kind n % 6; the rule a sweep applies to each kind, in order.
KINDS = ["forget", "promote", "keep", "cold", "core", "purge"]
SEED = """
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone
from memories.models import Memory, Namespace
owner = get_user_model().objects.create_user("e2e")
ns = Namespace.objects.create(owner=owner, name="E2E", slug="e2e")
now = timezone.now()
kinds = [
    {{"last_used_at": now - timedelta(days=30)}},
    {{"last_used_at": now, "use_count": 2}},
    {{"last_used_at": now - timedelta(days=5)}},
    {{"last_used_at": now - timedelta(days=40), "tier": "long_term", "status": "promoted"}},
    {{"last_used_at": now - timedelta(days=1), "session_ids": ["a", "b", "c"],
      "access_count": 6, "stability": 0.7}},
    {{"status": "forgotten", "forgotten_at": now - timedelta(days=60)}},
]
Memory.objects.bulk_create(
    [Memory(namespace=ns, content=f"memory {{n}}", **kinds[n % 6]) for n in range({count})],
    batch_size=1000,
)
print(Memory.objects.count())
"""


# --- A database for the cluster, reachable from this process too ------------------------


class ClusterDatabase:
    """A fresh database of the engine under test, its URL, and plain SQL access to it."""

    def __init__(self, url: str, query: Callable[[str], list[tuple]]) -> None:
        self.url = url
        self.query = query

    def scalar(self, sql: str) -> Any:
        return self.query(sql)[0][0]


def _pg_admin():
    import psycopg

    settings = connection.settings_dict
    conninfo = psycopg.conninfo.make_conninfo(
        host=settings["HOST"] or "",
        port=str(settings["PORT"] or ""),
        user=settings["USER"] or "",
        password=settings["PASSWORD"] or "",
        dbname="postgres",
    )
    return psycopg.connect(conninfo, autocommit=True), conninfo


def _pg_url(name: str) -> str:
    settings = connection.settings_dict
    user = urllib.parse.quote(settings["USER"] or "")
    password = urllib.parse.quote(settings["PASSWORD"] or "")
    auth = f"{user}:{password}@" if password else f"{user}@"
    return f"postgres://{auth}{settings['HOST']}:{settings['PORT']}/{name}"


@pytest.fixture
def make_database(tmp_path, db) -> Iterator[Callable[..., ClusterDatabase]]:
    """make_database(name, template=None): a new database (a copy of `template`'s)."""
    created: list[str] = []

    def make(name: str, template: ClusterDatabase | None = None) -> ClusterDatabase:
        if connection.vendor == "sqlite":
            path = tmp_path / f"{name}.sqlite3"
            if template is not None:
                source = Path(urllib.parse.urlparse(template.url).path)
                with sqlite3.connect(source) as con:
                    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                shutil.copy(source, path)

            def query(sql: str) -> list[tuple]:
                # This outside reader has once seen "database disk image is malformed" while
                # the cluster wrote (1 run in 5); a retry reads fine, and the test ends with
                # PRAGMA integrity_check, so real corruption would still fail it.
                for attempt in range(3):
                    con = sqlite3.connect(path, timeout=30)
                    try:
                        return con.execute(sql).fetchall()
                    except sqlite3.DatabaseError as error:
                        if "malformed" not in str(error) or attempt == 2:
                            raise
                        time.sleep(0.2)
                    finally:
                        con.close()
                raise AssertionError("unreachable")

            return ClusterDatabase(f"sqlite:///{path}", query)
        import psycopg

        db_name = f"engram_bg_{name}_{uuid.uuid4().hex[:8]}"
        admin, conninfo = _pg_admin()
        with admin:
            if template is None:
                admin.execute(f'CREATE DATABASE "{db_name}"')
            else:
                source = urllib.parse.urlparse(template.url).path.lstrip("/")
                admin.execute(f'CREATE DATABASE "{db_name}" TEMPLATE "{source}"')
        created.append(db_name)
        target = conninfo.replace("dbname=postgres", f"dbname={db_name}")

        def pg_query(sql: str) -> list[tuple]:
            with psycopg.connect(target, autocommit=True) as con:
                return con.execute(sql).fetchall()

        return ClusterDatabase(_pg_url(db_name), pg_query)

    yield make
    if created:
        admin, _ = _pg_admin()
        with admin:
            for db_name in created:
                admin.execute(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')


def _env(database: ClusterDatabase, **settings: Any) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": database.url, "Q_WORKERS": "1", "LOG_LEVEL": "INFO"}
    env.pop("DJANGO_SETTINGS_MODULE", None)  # the real settings, not the test ones
    env.update({name: str(value) for name, value in settings.items()})
    return env


def _prepare(database: ClusterDatabase, env: dict[str, str], count: int) -> None:
    manage(env, "migrate", "--no-input")
    manage(env, "createcachetable")
    assert manage(env, "shell", "--no-imports", "-c", SEED.format(count=count)) == str(count)


class Cluster:
    """`manage.py qcluster` in its own process group."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.log = log
        with log.open("a") as out:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "qcluster"],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill(self) -> None:
        """kill -9 the whole cluster: guard, pusher, workers and monitor."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the cluster stops its own children
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self) -> str:
        return self.log.read_text()[-4000:]


def _wait_for(condition: Callable[[], Any], cluster: Cluster, timeout: float, every=0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if cluster.process.poll() is not None:
            pytest.fail(f"the cluster exited:\n{cluster.tail()}")
        time.sleep(every)
    pytest.fail(f"timed out after {timeout} s:\n{cluster.tail()}")


def _statuses(database: ClusterDatabase) -> Counter[tuple[str, str, str]]:
    rows = database.query(
        "SELECT status, tier, storage, count(*) FROM memories_memory GROUP BY status, tier, storage"
    )
    return Counter({(s, t, st): n for s, t, st, n in rows})


# --- 1. Schedules fire in a real cluster; failures are retried -------------------------


def test_a_scheduled_sweep_changes_rows_and_a_failing_task_is_retried(make_database, tmp_path):
    database = make_database("scheduled")
    env = _env(database, Q_TIMEOUT=5, Q_RETRY=6, Q_MAX_ATTEMPTS=3)
    _prepare(database, env, 60)
    assert "engram: decay sweep: created" in manage(env, "setup_schedules")
    assert manage(env, "setup_schedules").count("unchanged") == len(SCHEDULES)  # idempotent
    # A sweep of a namespace id that is not a number raises on both engines.
    manage(
        env,
        "shell",
        "--no-imports",
        "-c",
        "from django_q.tasks import async_task; "
        "async_task('memories.tasks.decay_sweep', 'not-a-number', task_name='e2e-broken', "
        "q_options={'ack_failure': False})",
    )

    cluster = Cluster(env, tmp_path / "cluster.log")
    try:
        # The guard loop runs the scheduler about every 30 s.
        _wait_for(
            lambda: database.scalar(
                "SELECT count(*) FROM memories_backgroundrun WHERE kind = 'sweep' AND status = 'ok'"
            ),
            cluster,
            timeout=150,
        )
        statuses = _statuses(database)
        assert statuses[("forgotten", "short_term", "hot")] == 10  # the seeded ones were purged
        assert statuses[("promoted", "long_term", "hot")] == 10
        assert statuses[("promoted", "long_term", "cold")] == 10
        assert statuses[("promoted", "core", "hot")] == 10
        task = database.scalar(
            "SELECT task FROM django_q_schedule WHERE name = 'engram: decay sweep'"
        )
        assert task and database.scalar(
            f"SELECT count(*) FROM memories_backgroundrun WHERE task_id = '{task}'"
        )
        kinds = dict(
            database.query(
                "SELECT kind, count(*) FROM memories_memoryevent WHERE source = 'sweep' "
                "GROUP BY kind"
            )
        )
        assert kinds == {"forgotten": 10, "promoted": 20, "cold": 10, "purged": 10}

        # The broken task: three attempts, each recorded, then django-q2 gives up.
        _wait_for(
            lambda: database.scalar(
                "SELECT count(*) FROM django_q_task WHERE name = 'e2e-broken' "
                "AND attempt_count >= 3"
            ),
            cluster,
            timeout=90,
        )
        attempts = database.query(
            "SELECT attempt, status FROM memories_backgroundrun "
            "WHERE error LIKE '%not-a-number%' ORDER BY id"
        )
        assert attempts == [(1, "failed"), (2, "failed"), (3, "failed")]
        time.sleep(8)  # past another Q_RETRY: no fourth attempt
        assert database.scalar("SELECT count(*) FROM django_q_ormq") == 0
    finally:
        cluster.stop()
    assert "has stopped" in cluster.tail()


# --- 2. kill -9 in the middle of a sweep -----------------------------------------------


def _per_memory(database: ClusterDatabase) -> dict[int, tuple[str, str, str]]:
    rows = database.query("SELECT id, status, tier, storage FROM memories_memory ORDER BY id")
    return {row[0]: tuple(row[1:]) for row in rows}


def _sweep_events(database: ClusterDatabase) -> dict[int, list[str]]:
    events: dict[int, list[str]] = {}
    for ref, kind in database.query(
        "SELECT memory_ref, kind FROM memories_memoryevent WHERE source = 'sweep' ORDER BY id"
    ):
        events.setdefault(ref, []).append(kind)
    return events


def test_killing_the_cluster_mid_sweep_loses_nothing_and_the_next_run_finishes(
    make_database, tmp_path
):
    count = 6000
    database = make_database("killed")
    settings = {
        "SWEEP_BATCH_SIZE": BATCH,
        "SWEEP_BATCH_PAUSE_SECONDS": 0.25,  # 30 batches: about 8 s, time to kill it
        "Q_TIMEOUT": 20,
        "Q_RETRY": 21,
    }
    env = _env(database, **settings)
    _prepare(database, env, count)
    clean = make_database("clean", template=database)
    first_id = database.scalar("SELECT min(id) FROM memories_memory")
    expected_rule = {first_id + n: KINDS[n % 6] for n in range(count)}

    manage(
        env,
        "shell",
        "--no-imports",
        "-c",
        "from django_q.tasks import async_task; "
        "async_task('memories.tasks.decay_sweep', q_options={'ack_failure': False})",
    )
    cluster = Cluster(env, tmp_path / "cluster.log")
    try:
        # Wait until a few batches have committed, then kill -9 everything.
        _wait_for(
            lambda: (
                database.scalar("SELECT count(*) FROM memories_memoryevent WHERE source = 'sweep'")
                >= 3 * 4 * BATCH // 6
            ),
            cluster,
            timeout=120,
            every=0.1,
        )
    finally:
        cluster.kill()

    # Mid-sweep: some batches done, the rest untouched, none half-done.
    run = database.query(
        "SELECT status, task_id, attempt FROM memories_backgroundrun WHERE kind = 'sweep'"
    )
    assert len(run) == 1 and run[0][0] == "running"
    killed_task = run[0][1]
    states, events = _per_memory(database), _sweep_events(database)
    changed = {i for i, s in states.items() if s != _seeded(expected_rule[i])}
    assert changed == set(events), "a change without its event, or an event without a change"
    assert all(len(kinds) == 1 for kinds in events.values())
    done_batches = set()
    for lo in range(first_id, first_id + count, BATCH):
        in_batch = {i for i in range(lo, lo + BATCH) if expected_rule[i] in _CHANGING}
        applied = in_batch & changed
        assert applied in (set(), in_batch), f"batch at id {lo} is half applied"
        if applied:
            done_batches.add(lo)
    assert 0 < len(done_batches) < count // BATCH
    assert database.scalar("SELECT count(*) FROM memories_memory") == count  # purge not reached

    # Restart: django-q2 hands the unacknowledged task out again after Q_RETRY.
    cluster = Cluster(env, tmp_path / "cluster-restarted.log")
    try:
        _wait_for(
            lambda: database.scalar(
                "SELECT count(*) FROM memories_backgroundrun WHERE kind = 'sweep' AND status = 'ok'"
            ),
            cluster,
            timeout=120,
        )
    finally:
        cluster.stop()
    runs = database.query("SELECT task_id, attempt, status FROM memories_backgroundrun ORDER BY id")
    assert runs == [(killed_task, 1, "failed"), (killed_task, 2, "ok")]

    # The same end state as one uninterrupted sweep over a copy of the seeded data.
    manage(_env(clean, **settings), "sweep")
    assert _per_memory(database) == _per_memory(clean)
    assert _sweep_events(database) == _sweep_events(clean)
    assert database.scalar("SELECT count(*) FROM memories_memory") == count - count // 6
    if connection.vendor == "sqlite":
        assert database.query("PRAGMA integrity_check") == [("ok",)]


_CHANGING = {"forget", "promote", "cold", "core"}


def _seeded(kind: str) -> tuple[str, str, str]:
    """The (status, tier, storage) a memory of that kind was seeded with."""
    if kind == "cold":
        return ("promoted", "long_term", "hot")
    if kind == "purge":
        return ("forgotten", "short_term", "hot")
    return ("active", "short_term", "hot")


# --- 3. The worker's half of a write ---------------------------------------------------

NEAR_SEED = """
from django.contrib.auth import get_user_model
from memories import services
owner = get_user_model().objects.create_user("near")
ns = services.namespace_create(owner=owner, name="Near")
first = services.memory_create(namespace=ns, content="User lives in Paris.")
[second, other] = services.memory_bulk_create(items=[
    {"namespace": ns, "content": "The user lives in Paris."},
    {"namespace": ns, "content": "Lunch is at noon."},
])
print(first.pk, second.pk, other.pk)
"""


def test_the_cluster_links_near_duplicates_that_a_write_left_to_it(make_database, tmp_path):
    database = make_database("near")
    env = _env(database)
    manage(env, "migrate", "--no-input")
    first, second, other = map(int, manage(env, "shell", "--no-imports", "-c", NEAR_SEED).split())
    # Written and answered; the comparison is queued, not done.
    assert database.scalar("SELECT count(*) FROM memories_memorysketch") == 0
    cluster = Cluster(env, tmp_path / "cluster.log")
    try:
        _wait_for(
            lambda: (
                database.scalar("SELECT count(DISTINCT memory_id) FROM memories_memorysketch") == 3
            ),
            cluster,
            timeout=60,
        )
    finally:
        cluster.stop()
    links = database.query(
        "SELECT source_id, target_id FROM memories_association WHERE kind = 'near_duplicate'"
    )
    assert links == [(second, first)]
    assert other not in {i for link in links for i in link}
