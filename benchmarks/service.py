"""The whole-service benchmark of `manage.py bench`: one table of figures on one database.

The synthetic corpus (benchmarks.corpus) is built once and reused while its size and
version are unchanged. Ingest is measured in a scratch namespace, so the corpus never
changes; the HTTP figures come from a gunicorn started on a free port with the same
DATABASE_URL. The sweep is timed as a dry run (the same scoring and rules, nothing
written), so repeated runs see the same data.

This module runs the parts and takes the in-process figures (and ingest and recall over
HTTP); the gunicorn, the large import and the wrk load test are in
benchmarks.service_http, the table's rows, a run saved as JSON and the saved runs drawn
in benchmarks.service_table.
"""

from __future__ import annotations

import os
import platform
import random
import socket
import statistics
import time
from datetime import timedelta
from io import StringIO
from typing import Any
from zoneinfo import ZoneInfo

import django
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from benchmarks import corpus, machine
from benchmarks.service_http import Server, api_item, import_rows, load_rows
from benchmarks.service_mcp import mcp_rows
from benchmarks.service_table import Progress, Row
from benchmarks.stats import percentile
from config.db import is_postgres
from memories.models import Classification, Memory, Namespace
from memories.services import (
    memory_bulk_create,
    memory_create,
    near_index_pending,
    token_create,
    token_revoke,
)
from memories.sweep import sweep_run
from recall.services import recall_run
from recall.stages import ALL_STAGES
from review.models import Card
from review.selectors import review_queue

PARTS = ("ingest", "recall", "queue", "sweep", "size")  # --only plot: just redraw --plot
# Asked for by name only (--only import): a large import through gunicorn and the worker.
EXTRA_PARTS = ("import",)


def _ms(values: list[float]) -> str:
    return " / ".join(f"{percentile(values, p):.1f}" for p in (0.5, 0.95, 0.99))


def _local_redis() -> str:
    """redis://127.0.0.1:6379/15 when a Redis answers there, else ''."""
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            if sock.recv(16).startswith(b"+PONG"):
                return "redis://127.0.0.1:6379/15"
    except OSError:
        pass
    return ""


def run(
    *,
    size: int,
    namespaces: int,
    only: set[str],
    queries: int,
    creates: int,
    queue_runs: int,
    workers: int,
    http: bool,
    load: bool,
    load_seconds: int,
    rebuild: bool,
    import_mb: float,
    redis_url: str,
    progress: Progress,
) -> list[Row]:
    """The table of one run: the corpus (built or reused), then the parts in `only`.

    With `http`, a gunicorn serves the same database for the HTTP figures (ingest,
    recall, import) and the wrk load test (`load`).
    """
    rows: list[Row] = machine_rows()
    started = time.perf_counter()
    namespace, built = corpus.corpus(
        size,
        namespaces=namespaces,
        rebuild=rebuild,
        progress=progress,
    )
    rows.append(
        (
            "corpus",
            "memories (built now)" if built else "memories (reused)",
            f"{size:,}",
            f"in {time.perf_counter() - started:.1f} s",
        )
    )
    if namespaces > 1:
        measured = Memory.objects.filter(namespace=namespace).count()
        rows.append(
            (
                "corpus",
                f"namespaces (figures on {namespace.slug})",
                f"{namespaces:,}",
                f"{measured:,} memories in it",
            )
        )
    server = None
    token, secret = None, ""
    if http and (only & {"ingest", "recall", "import"} or load):
        # The API throttle counts in the database cache; the server needs its table.
        call_command("createcachetable", stdout=StringIO())
        progress("  starting gunicorn ...")
        redis_url = redis_url or _local_redis()
        server = Server(workers=workers, database_url=database_url(), redis_url=redis_url)
        rows.append(
            (
                "machine",
                "HTTP server",
                f"gunicorn x {workers}",
                f"rate-limit cache: {'Redis' if redis_url else 'database'}",
            )
        )
        token, secret = token_for(namespace)
    try:
        if "ingest" in only:
            rows += ingest_rows(creates, server, secret, progress)
            rows += ingest_into_corpus_rows(namespace, progress)
            corpus.vacuum_after_writes()
        if "recall" in only:
            rows += recall_rows(namespace, queries, server, secret, progress)
            if server:
                rows += mcp_rows(
                    namespace,
                    secret,
                    corpus.queries(queries),
                    workers=workers,
                    database_url=database_url(),
                    redis_url=redis_url,
                    progress=progress,
                )
        if "queue" in only:
            rows += queue_rows(namespace, queue_runs, progress)
        if "sweep" in only:
            rows += sweep_rows(namespace, progress)
        if "size" in only:
            rows += size_rows()
        if "import" in only and server:
            rows += import_rows(namespace, server, secret, import_mb, progress)
        if load and server:
            rows += load_rows(namespace, server, secret, load_seconds, progress)
    finally:
        if server:
            server.stop()
        if token is not None:
            token_revoke(token=token)
            # Emptied only now: gunicorn may finish requests a load run left in flight.
            corpus.scratch_namespace()
    if load and server:
        # The load test's creates (emptied above) would otherwise sit in the GIN
        # pending lists and the indexes and slow the next run's searches.
        corpus.vacuum_after_writes()
    return rows


def database_url() -> str:
    """The database the HTTP server is to use: the bench's own."""
    return os.environ.get("DATABASE_URL") or settings.DATABASE_URL


def token_for(namespace: Namespace) -> tuple[Any, str]:
    """A write token on the corpus and the scratch namespace; (token, secret)."""
    scratch = corpus.scratch_namespace()
    return token_create(
        owner=namespace.owner,
        name=f"bench {timezone.now():%Y-%m-%d %H:%M:%S}",
        namespaces=[namespace, scratch],
        access="write",
        ceiling=Classification.RESTRICTED,
        expires_at=timezone.now() + timedelta(hours=6),
    )


def machine_rows() -> list[Row]:
    """What the run ran on: cores, memory, load, versions, the database server."""
    memory = machine.memory_gib()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    server = machine.database_server(autovacuum=True)
    return [
        ("machine", "cores", str(os.cpu_count()), "logical CPUs"),
        ("machine", "memory", "?" if memory is None else f"{memory:.1f}", "GiB"),
        ("machine", "load average (1 min)", f"{load:.1f}", "at start"),
        ("machine", "Python", platform.python_version(), ""),
        ("machine", "Django", django.__version__, ""),
        ("machine", "database", server, ""),
    ]


# Conversations in the ingest figure of sessions.
SESSIONS = 10


class _RolledBack(Exception):
    pass


def ingest_into_corpus_rows(namespace: Namespace, progress: Progress) -> list[Row]:
    """A bulk of conversation turns written into the corpus namespace itself (every write
    rule at the corpus's size: duplicates and near-duplicates looked up among its
    memories), in a transaction rolled back after the clock stops, so the corpus stays as
    built. The median of three."""
    size = Memory.objects.filter(namespace=namespace).count()
    vocab = corpus.vocabulary()
    rng = random.Random(corpus.SEED + 2)
    bulk = corpus.BATCH
    progress(f"  ingest: memory_bulk_create of {bulk} into the corpus ({size:,}) ...")
    rates, worker_rates = [], []
    for run in range(3):
        items = corpus.memory_items(namespace, vocab, rng, bulk, timezone.now())
        turns = [
            {**item, "created_at": None, "session_id": f"bench-{run}-{i % SESSIONS}", "position": i}
            for i, item in enumerate(items)
        ]
        try:
            with transaction.atomic():
                t0 = time.perf_counter()
                written = memory_bulk_create(items=turns, source="bench")
                rates.append(bulk / (time.perf_counter() - t0))
                # The worker's half of the same write (near_index_later's task), timed on
                # its own: what the agent does not wait for, but the worker must keep up with.
                t0 = time.perf_counter()
                near_index_pending([m.pk for m in written], ceiling=Classification.RESTRICTED)
                worker_rates.append(bulk / (time.perf_counter() - t0))
                raise _RolledBack
        except _RolledBack:
            pass
    return [
        (
            "ingest",
            f"service: memory_bulk_create of {bulk} in {SESSIONS} sessions into the corpus "
            f"({size:,}, rolled back)",
            f"{statistics.median(rates):,.0f}",
            "mem/s",
        ),
        (
            "ingest",
            f"worker: near-duplicate indexing of that bulk ({size:,})",
            f"{statistics.median(worker_rates):,.0f}",
            "mem/s",
        ),
    ]


def ingest_rows(creates: int, server: Server | None, token: str, progress: Progress) -> list[Row]:
    """memory_create and memory_bulk_create in process, and over HTTP when served."""
    scratch = corpus.scratch_namespace()
    vocab = corpus.vocabulary()
    rng = random.Random(corpus.SEED + 1)
    now = timezone.now()
    rows: list[Row] = []

    progress(f"  ingest: memory_create x {creates} ...")
    items = corpus.memory_items(scratch, vocab, rng, creates, now)
    timings = []
    for item in items:
        item = {**item, "created_at": None}
        t0 = time.perf_counter()
        memory_create(source="bench", **item)
        timings.append((time.perf_counter() - t0) * 1000)
    rows.append(_rate("service", f"memory_create x {creates}", creates, timings))
    rows.append(("ingest", "memory_create p50 / p95 / p99", _ms(timings), "ms"))

    bulk = corpus.BATCH
    progress(f"  ingest: memory_bulk_create of {bulk} ...")
    items = corpus.memory_items(scratch, vocab, rng, bulk, now)
    t0 = time.perf_counter()
    memory_bulk_create(items=[{**i, "created_at": None} for i in items], source="bench")
    seconds = time.perf_counter() - t0
    rows.append(
        ("ingest", f"service: memory_bulk_create of {bulk}", f"{bulk / seconds:,.0f}", "mem/s")
    )
    # The same in conversations, as an agent stores them: each item a turn of one of
    # SESSIONS sessions, linked to the two turns before it (memories.services.sessions).
    progress(f"  ingest: memory_bulk_create of {bulk} in {SESSIONS} sessions ...")
    items = corpus.memory_items(scratch, vocab, rng, bulk, now)
    turns = [
        {**item, "created_at": None, "session_id": f"bench-{i % SESSIONS}", "position": i}
        for i, item in enumerate(items)
    ]
    t0 = time.perf_counter()
    memory_bulk_create(items=turns, source="bench")
    seconds = time.perf_counter() - t0
    rows.append(
        (
            "ingest",
            f"service: memory_bulk_create of {bulk} in {SESSIONS} sessions",
            f"{bulk / seconds:,.0f}",
            "mem/s",
        )
    )

    if server:
        progress(f"  ingest: POST /api/v1/memories x {creates} ...")
        timings = []
        for item in corpus.memory_items(scratch, vocab, rng, creates, now):
            body = api_item(item) | {"namespace": scratch.slug}
            status, ms, data = server.request("POST", "/api/v1/memories", token=token, body=body)
            if status != 201:
                raise CommandError(f"POST /api/v1/memories answered {status}: {data[:300]!r}")
            timings.append(ms)
        rows.append(_rate("HTTP", f"POST /memories x {creates}", creates, timings))
        rows.append(("ingest", "POST /memories p50 / p95 / p99", _ms(timings), "ms"))
        progress(f"  ingest: POST /api/v1/memories/bulk of {bulk} ...")
        items = corpus.memory_items(scratch, vocab, rng, bulk, now)
        body = {"namespace": scratch.slug, "memories": [api_item(i) for i in items]}
        status, ms, data = server.request("POST", "/api/v1/memories/bulk", token=token, body=body)
        if status != 201:
            raise CommandError(f"POST /memories/bulk answered {status}: {data[:300]!r}")
        rows.append(
            (
                "ingest",
                f"HTTP: POST /memories/bulk of {bulk}",
                f"{bulk / ms * 1000:,.0f}",
                "mem/s",
            )
        )
    corpus.clear_namespace(scratch)
    return rows


def _rate(kind: str, label: str, count: int, timings: list[float]) -> Row:
    return ("ingest", f"{kind}: {label}", f"{count / (sum(timings) / 1000):,.0f}", "mem/s")


def recall_rows(
    namespace: Namespace, count: int, server: Server | None, token: str, progress: Progress
) -> list[Row]:
    """recall_run in process (in total and per stage), and over HTTP when served."""
    queries = corpus.queries(count)
    rows: list[Row] = []
    progress(f"  recall: {count} queries in process ...")
    for query in queries[:5]:  # warm-up
        recall_run(
            namespaces=[namespace], ceiling=Classification.RESTRICTED, query=query, track=False
        )
    totals: list[float] = []
    stages: dict[str, list[float]] = {name: [] for name in ALL_STAGES}
    hits = 0
    for query in queries:
        t0 = time.perf_counter()
        result = recall_run(
            namespaces=[namespace], ceiling=Classification.RESTRICTED, query=query, track=False
        )
        totals.append((time.perf_counter() - t0) * 1000)
        hits += len(result.results)
        for name, timing in result.stage_timings.items():
            if not timing.get("skipped"):
                stages[name].append(timing["ms"])
    rows.append(("recall", "in process p50 / p95 / p99", _ms(totals), "ms"))
    for name, values in stages.items():
        ran = f"ran {len(values)}/{count}"
        if values:
            rows.append(("recall", f"  stage {name} p50 / p95 / p99", _ms(values), f"ms ({ran})"))
        else:
            rows.append(("recall", f"  stage {name}", "skipped", f"({ran})"))
    rows.append(("recall", "results per query (mean)", f"{hits / count:.1f}", "memories"))
    rows.append(tracked_recall_row(namespace, queries, progress))
    progress(f"  recall: {count} queries with typos in process ...")
    typos = []
    for query in corpus.typo_queries(count):
        t0 = time.perf_counter()
        recall_run(
            namespaces=[namespace], ceiling=Classification.RESTRICTED, query=query, track=False
        )
        typos.append((time.perf_counter() - t0) * 1000)
    rows.append(("recall", "in process, typos, p50 / p95 / p99", _ms(typos), "ms"))
    if server:
        progress(f"  recall: {count} queries over HTTP ...")
        timings = []
        for query in queries:
            body = {"query": query, "namespaces": [namespace.slug], "track": False}
            status, ms, data = server.request("POST", "/api/v1/recall", token=token, body=body)
            if status != 200:
                raise CommandError(f"POST /api/v1/recall answered {status}: {data[:300]!r}")
            timings.append(ms)
        rows.append(("recall", "HTTP POST /recall p50 / p95 / p99", _ms(timings), "ms"))
    return rows


def tracked_recall_row(namespace: Namespace, queries: list[str], progress: Progress) -> Row:
    """recall_run as an agent's token calls it by default (tracked: counters, uses, implicit
    grades of due cards), each recall rolled back so that every run sees the same corpus;
    the commit's WAL flush is therefore not in the figure."""
    progress(f"  recall: {len(queries)} queries in process, tracked and rolled back ...")
    agent, _ = token_for(namespace)
    timings = []
    try:
        for query in queries:
            with transaction.atomic():
                t0 = time.perf_counter()
                recall_run(
                    namespaces=[namespace],
                    ceiling=Classification.RESTRICTED,
                    query=query,
                    track=True,
                    token=agent,
                    user=namespace.owner,
                )
                timings.append((time.perf_counter() - t0) * 1000)
                transaction.set_rollback(True)
    finally:
        token_revoke(token=agent)
    return ("recall", "in process, tracked, p50 / p95 / p99", _ms(timings), "ms (rolled back)")


def queue_rows(namespace: Namespace, runs: int, progress: Progress) -> list[Row]:
    progress(f"  queue: review_queue x {runs} ...")
    tz, now = ZoneInfo("UTC"), timezone.now()
    review_queue(namespace=namespace, tz=tz, now=now, limit=50)  # warm-up
    timings = []
    for _ in range(runs):
        t0 = time.perf_counter()
        review_queue(namespace=namespace, tz=tz, now=now, limit=50)
        timings.append((time.perf_counter() - t0) * 1000)
    due = Card.objects.filter(namespace=namespace, next_review__lte=now).count()
    cards = Card.objects.filter(namespace=namespace).count()
    return [
        ("due queue", "cards (due)", f"{cards:,} ({due:,})", ""),
        ("due queue", "review_queue(limit 50) p50 / p95 / p99", _ms(timings), "ms"),
    ]


def sweep_rows(namespace: Namespace, progress: Progress) -> list[Row]:
    progress("  sweep: dry run over the corpus ...")
    report = sweep_run(namespace=namespace, dry_run=True)
    return [
        ("decay sweep", "dry run, corpus namespace", f"{report.duration_seconds:.2f}", "s"),
        ("decay sweep", "memories examined", f"{report.examined:,}", ""),
    ]


def size_rows() -> list[Row]:
    memories = Memory.objects.count()
    table = Memory._meta.db_table
    with connection.cursor() as cursor:
        if is_postgres():
            cursor.execute("SELECT pg_total_relation_size(%s)", [table])
            memory_bytes = cursor.fetchone()[0]
            cursor.execute("SELECT pg_database_size(current_database())")
            database_bytes = cursor.fetchone()[0]
            # Includes the free space left by deleted rows until a VACUUM FULL.
            what = "memory table + indexes + TOAST"
        else:
            cursor.execute("PRAGMA page_count")
            pages = cursor.fetchone()[0]
            cursor.execute("PRAGMA freelist_count")  # free pages left by deletes
            pages -= cursor.fetchone()[0]
            cursor.execute("PRAGMA page_size")
            database_bytes = pages * cursor.fetchone()[0]
            memory_bytes = _sqlite_table_bytes(cursor, table)
            what = "memory table + indexes (dbstat)"
    per = 1000 / max(memories, 1) / 1024 / 1024
    rows: list[Row] = [("size", "memories in the database", f"{memories:,}", "all namespaces")]
    if memory_bytes is not None:
        rows.append(("size", f"per 1,000 memories: {what}", f"{memory_bytes * per:.2f}", "MiB"))
    rows.append(
        ("size", "per 1,000 memories: whole database", f"{database_bytes * per:.2f}", "MiB")
    )
    return rows


def _sqlite_table_bytes(cursor, table: str) -> int | None:
    """Bytes of the table and its indexes, when SQLite was built with dbstat."""
    try:
        cursor.execute(
            "SELECT SUM(pgsize) FROM dbstat WHERE name = %s OR name IN "
            "(SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = %s)",
            [table, table],
        )
    except DatabaseError:  # dbstat is an optional compile-time module
        return None
    return cursor.fetchone()[0]
