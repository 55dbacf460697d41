"""Benchmark the whole service on the database of DATABASE_URL and print one table.

    DATABASE_URL=postgres://.../bench_main manage.py migrate
    DATABASE_URL=postgres://.../bench_main manage.py bench --size 100000

The synthetic corpus (memories.bench_corpus) is built once and reused while its size and
version are unchanged. Ingest is measured in a scratch namespace, so the corpus never
changes; the HTTP figures come from a gunicorn started on a free port with the same
DATABASE_URL. The sweep is timed as a dry run (the same scoring and rules, nothing
written), so repeated runs see the same data. --load adds a wrk load test (recall and
create at concurrency 1, 8 and 32 for --load-seconds each). `make bench` runs it on SQLite and, when
BENCH_DATABASE_URL is set, on PostgreSQL. docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import http.client
import json
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import django
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection
from django.utils import timezone

from memories import bench_corpus
from memories.models import Classification, Memory, Namespace
from memories.services import token_create, token_revoke

PARTS = ("ingest", "recall", "queue", "sweep", "size")  # --only plot: just redraw --plot
# Asked for by name only (--only import): a large import through gunicorn and the worker.
EXTRA_PARTS = ("import",)
LOAD_CONCURRENCY = (1, 8, 32)
Row = tuple[str, str, str, str]  # section, measure, value, unit


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile of a list of numbers (0 for an empty list)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def _ms(values: list[float]) -> str:
    return " / ".join(f"{percentile(values, p):.1f}" for p in (0.5, 0.95, 0.99))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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


class Server:
    """A gunicorn serving the app on a free port, with the bench's database."""

    def __init__(self, *, workers: int, database_url: str, redis_url: str = "") -> None:
        self.port = _free_port()
        self.env = env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "DEBUG": "0",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-" + "x" * 50,
            "SECURE_SSL_REDIRECT": "0",
            "PYTHONWARNINGS": "ignore:No directory at",
            # The benchmark measures the service, not the per-token throttle.
            "API_RATE_LIMIT": "10000000/min",
        }
        gunicorn = Path(sys.executable).with_name("gunicorn")
        self.process = subprocess.Popen(
            [
                str(gunicorn),
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(workers),
                "--log-level",
                "warning",
            ],
            cwd=settings.BASE_DIR,
            env=env,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise CommandError("gunicorn exited at start-up")
            try:
                self.request("GET", "/api/v1/schema", token="")
                return
            except (OSError, http.client.HTTPException):
                time.sleep(0.2)
        self.stop()
        raise CommandError("gunicorn did not answer within 30 s")

    def request(
        self, method: str, path: str, *, token: str, body: Any = None
    ) -> tuple[int, float, bytes]:
        """(status, milliseconds, body) of one request on a new connection."""
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        payload = json.dumps(body).encode() if body is not None else None
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        return response.status, (time.perf_counter() - started) * 1000, data

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Command(BaseCommand):
    help = "Build (once) a synthetic corpus of N memories and print the service's figures."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--size", type=int, default=10_000, help="Corpus memories (10k).")
        parser.add_argument(
            "--namespaces",
            type=int,
            default=1,
            help="Spread the corpus over this many namespaces (1); figures use the first.",
        )
        parser.add_argument(
            "--only", default=",".join(PARTS), help=f"Comma-separated subset of {','.join(PARTS)}."
        )
        parser.add_argument("--queries", type=int, default=200, help="Recall queries (200).")
        parser.add_argument("--creates", type=int, default=200, help="Single creates (200).")
        parser.add_argument("--queue-runs", type=int, default=50, help="Due-queue runs (50).")
        parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (2).")
        parser.add_argument("--no-http", action="store_true", help="Skip the HTTP figures.")
        parser.add_argument(
            "--load", action="store_true", help="Also load-test with wrk at 1, 8 and 32."
        )
        parser.add_argument("--load-seconds", type=int, default=10, help="Per wrk run (10).")
        parser.add_argument("--rebuild", action="store_true", help="Rebuild the corpus.")
        parser.add_argument(
            "--import-mb",
            type=float,
            default=45,
            help="Size of the file --only import imports (45 MB; at most API_IMPORT_MAX_BYTES).",
        )
        parser.add_argument(
            "--save-dir",
            default="",
            help="Save the run's table as JSON in this folder (make bench: var/bench).",
        )
        parser.add_argument(
            "--plot",
            metavar="FILE",
            help="Draw the saved runs against corpus size as an SVG (e.g. docs/bench-growth.svg).",
        )
        parser.add_argument(
            "--redis-url",
            default=os.environ.get("REDIS_URL", ""),
            help="Cache for the HTTP server's rate limiter (default: REDIS_URL, else the "
            "Redis at 127.0.0.1:6379 when one answers, else the database).",
        )

    def handle(self, *args, **options) -> None:
        # The in-process figures are taken as production runs: no query log.
        settings.DEBUG = False
        if options["plot"] and options["only"] == "plot":
            self._plot(options["save_dir"], options["plot"])
            return
        only = {part.strip() for part in options["only"].split(",") if part.strip()}
        unknown = only - set(PARTS) - set(EXTRA_PARTS)
        if unknown:
            names = ", ".join(PARTS + EXTRA_PARTS)
            raise CommandError(f"Unknown parts {sorted(unknown)}; use any of {names}.")
        if options["size"] < 10:
            raise CommandError("--size must be at least 10.")
        if not 1 <= options["namespaces"] <= options["size"] // 10:
            raise CommandError("--namespaces must be between 1 and size / 10.")
        rows: list[Row] = self._machine()
        started = time.perf_counter()
        namespace, built = bench_corpus.corpus(
            options["size"],
            namespaces=options["namespaces"],
            rebuild=options["rebuild"],
            progress=self._progress,
        )
        rows.append(
            (
                "corpus",
                "memories (built now)" if built else "memories (reused)",
                f"{options['size']:,}",
                f"in {time.perf_counter() - started:.1f} s",
            )
        )
        if options["namespaces"] > 1:
            measured = Memory.objects.filter(namespace=namespace).count()
            rows.append(
                (
                    "corpus",
                    f"namespaces (figures on {namespace.slug})",
                    f"{options['namespaces']:,}",
                    f"{measured:,} memories in it",
                )
            )
        server = None
        token, secret = None, ""
        if not options["no_http"] and (only & {"ingest", "recall", "import"} or options["load"]):
            # The API throttle counts in the database cache; the server needs its table.
            call_command("createcachetable", stdout=StringIO())
            self._progress("  starting gunicorn ...")
            redis_url = options["redis_url"] or _local_redis()
            server = Server(
                workers=options["workers"], database_url=self._database_url(), redis_url=redis_url
            )
            rows.append(
                (
                    "machine",
                    "HTTP server",
                    f"gunicorn x {options['workers']}",
                    f"rate-limit cache: {'Redis' if redis_url else 'database'}",
                )
            )
            token, secret = self._token(namespace)
        try:
            if "ingest" in only:
                rows += self._ingest(options["creates"], server, secret)
                bench_corpus.vacuum_after_writes()
            if "recall" in only:
                rows += self._recall(namespace, options["queries"], server, secret)
            if "queue" in only:
                rows += self._queue(namespace, options["queue_runs"])
            if "sweep" in only:
                rows += self._sweep(namespace)
            if "size" in only:
                rows += self._size()
            if "import" in only and server:
                rows += self._import(namespace, server, secret, options["import_mb"])
            if options["load"] and server:
                rows += self._load(namespace, server, secret, options["load_seconds"])
        finally:
            if server:
                server.stop()
            if token is not None:
                token_revoke(token=token)
                # Emptied only now: gunicorn may finish requests a load run left in flight.
                bench_corpus.scratch_namespace()
        if options["load"] and server:
            # The load test's creates (emptied above) would otherwise sit in the GIN
            # pending lists and the indexes and slow the next run's searches.
            bench_corpus.vacuum_after_writes()
        self._print(rows)
        if options["save_dir"]:
            self._save(options, rows)
        if options["plot"]:
            self._plot(options["save_dir"], options["plot"])

    def _save(self, options: dict[str, Any], rows: list[Row]) -> None:
        directory = Path(options["save_dir"])
        directory.mkdir(parents=True, exist_ok=True)
        name = f"{connection.vendor}-{options['size']}-{options['namespaces']}.json"
        previous: dict[str, Any] = {}
        path = directory / name
        if path.exists():
            try:
                previous = json.loads(path.read_text())
            except ValueError:
                previous = {}
        # Rows of parts not run this time are kept from the previous run of the same corpus.
        measured = {(row[0], row[1]) for row in rows}
        kept = [row for row in previous.get("rows", []) if (row[0], row[1]) not in measured]
        path.write_text(
            json.dumps(
                {
                    "engine": connection.vendor,
                    "size": options["size"],
                    "namespaces": options["namespaces"],
                    "saved_at": timezone.now().isoformat(),
                    "rows": [list(row) for row in rows] + kept,
                },
                indent=1,
            )
        )
        self._progress(f"  saved to {path}")

    def _plot(self, save_dir: str, target: str) -> None:
        from memories.bench_plot import growth_svg, load_runs

        if not save_dir:
            raise CommandError("--plot draws the runs saved in --save-dir; give one.")
        runs = load_runs(Path(save_dir))
        Path(target).write_text(growth_svg(runs))
        self._progress(f"  plot of {len(runs)} saved runs written to {target}")

    # --- Helpers ---------------------------------------------------------------------

    def _import(
        self, namespace: Namespace, server: Server, secret: str, megabytes: float
    ) -> list[Row]:
        """The corpus exported over HTTP, copied (new ids) to `megabytes`, imported over
        HTTP into the scratch namespace by the worker; the upload and the job timed."""
        status, _, export = server.request(
            "GET", f"/api/v1/namespaces/{namespace.slug}/export", token=secret
        )
        if status != 200:
            raise CommandError(f"export answered {status}: {export[:300]!r}")
        body = import_file(export, int(megabytes * 1024 * 1024))
        if len(body) > settings.API_IMPORT_MAX_BYTES:
            raise CommandError("--import-mb is over API_IMPORT_MAX_BYTES.")
        scratch = bench_corpus.scratch_namespace()
        worker_log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
        worker = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=settings.BASE_DIR,
            env=server.env,  # the same database, broker and SECRET_KEY (tasks are signed)
            stdout=worker_log,
            stderr=subprocess.STDOUT,
        )

        def failed(message: str) -> CommandError:
            worker_log.seek(0)
            return CommandError(f"{message}\nworker log:\n{worker_log.read()[-3000:].decode()}")

        try:
            self._progress(f"  importing {len(body) / 1e6:.1f} MB ...")
            started = time.perf_counter()
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
            conn.request(
                "POST",
                f"/api/v1/namespaces/{scratch.slug}/import",
                body=body,
                headers={
                    "Authorization": f"Bearer {secret}",
                    "Content-Type": "application/x-ndjson",
                },
            )
            response = conn.getresponse()
            answer = json.loads(response.read() or b"{}")
            conn.close()
            uploaded = time.perf_counter() - started
            if response.status == 201:
                state = {"status": "ok", "counts": answer["counts"]}
            elif response.status == 202:
                path = answer["url"].split(str(server.port), 1)[1]
                deadline = time.monotonic() + 3600
                while True:
                    time.sleep(0.5)
                    _, _, raw = server.request("GET", path, token=secret)
                    state = json.loads(raw)
                    if state["status"] != "running":
                        break
                    if time.monotonic() > deadline or worker.poll() is not None:
                        raise failed("the import job did not finish")
            else:
                raise failed(f"import answered {response.status}: {answer}")
            total = time.perf_counter() - started
            if state["status"] != "ok":
                raise failed(f"the import failed: {state}")
        finally:
            worker.terminate()
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
            worker_log.close()
        memories = state["counts"]["memory"]
        megabytes = len(body) / 1e6
        bench_corpus.scratch_namespace()  # emptied again
        return [
            ("import", "file", f"{megabytes:.1f}", f"MB, {memories:,} memories"),
            ("import", "upload answered", f"{uploaded:.1f}", f"s (HTTP {response.status})"),
            ("import", "until done", f"{total:.1f}", "s"),
            (
                "import",
                "rate",
                f"{megabytes / total:.2f}",
                f"MB/s, {memories / total:,.0f} memories/s",
            ),
        ]

    def _progress(self, message: str) -> None:
        self.stderr.write(message)

    def _print(self, rows: list[Row]) -> None:
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        widths = [
            max(w, len(h))
            for w, h in zip(widths, ("section", "measure", "value", "unit"), strict=True)
        ]
        line = "  ".join("-" * w for w in widths)
        header = ("section", "measure", "value", "unit")
        self.stdout.write("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
        self.stdout.write(line)
        for row in rows:
            cells = [
                row[0].ljust(widths[0]),
                row[1].ljust(widths[1]),
                row[2].rjust(widths[2]),
                row[3].ljust(widths[3]),
            ]
            self.stdout.write("  ".join(cells).rstrip())

    def _database_url(self) -> str:
        return os.environ.get("DATABASE_URL") or settings.DATABASE_URL

    def _token(self, namespace: Namespace) -> tuple[Any, str]:
        """A write token on the corpus and the scratch namespace; (token, secret)."""
        scratch = bench_corpus.scratch_namespace()
        return token_create(
            owner=namespace.owner,
            name=f"bench {timezone.now():%Y-%m-%d %H:%M:%S}",
            namespaces=[namespace, scratch],
            access="write",
            ceiling=Classification.RESTRICTED,
            expires_at=timezone.now() + timedelta(hours=6),
        )

    def _machine(self) -> list[Row]:
        memory = ""
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemTotal:"):
                    memory = f"{int(line.split()[1]) / 1024 / 1024:.1f}"
        except OSError:
            pass
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SHOW server_version")
                server = f"PostgreSQL {cursor.fetchone()[0].split()[0]}"
                cursor.execute("SHOW autovacuum")
                server += f" (autovacuum {cursor.fetchone()[0]})"
            elif connection.vendor == "sqlite":
                cursor.execute("SELECT sqlite_version()")
                server = f"SQLite {cursor.fetchone()[0]}"
            else:
                server = connection.vendor
        return [
            ("machine", "cores", str(os.cpu_count()), "logical CPUs"),
            ("machine", "memory", memory or "?", "GiB"),
            ("machine", "load average (1 min)", f"{load:.1f}", "at start"),
            ("machine", "Python", platform.python_version(), ""),
            ("machine", "Django", django.__version__, ""),
            ("machine", "database", server, ""),
        ]

    # --- Ingest ----------------------------------------------------------------------

    def _ingest(self, creates: int, server: Server | None, token: str) -> list[Row]:
        from memories.services import memory_bulk_create, memory_create

        scratch = bench_corpus.scratch_namespace()
        vocab = bench_corpus.vocabulary()
        rng = random.Random(bench_corpus.SEED + 1)
        now = timezone.now()
        rows: list[Row] = []

        self._progress(f"  ingest: memory_create x {creates} ...")
        items = bench_corpus.memory_items(scratch, vocab, rng, creates, now)
        timings = []
        for item in items:
            item = {**item, "created_at": None}
            t0 = time.perf_counter()
            memory_create(source="bench", **item)
            timings.append((time.perf_counter() - t0) * 1000)
        rows.append(self._rate("service", f"memory_create x {creates}", creates, timings))
        rows.append(("ingest", "memory_create p50 / p95 / p99", _ms(timings), "ms"))

        bulk = bench_corpus.BATCH
        self._progress(f"  ingest: memory_bulk_create of {bulk} ...")
        items = bench_corpus.memory_items(scratch, vocab, rng, bulk, now)
        t0 = time.perf_counter()
        memory_bulk_create(items=[{**i, "created_at": None} for i in items], source="bench")
        seconds = time.perf_counter() - t0
        rows.append(
            ("ingest", f"service: memory_bulk_create of {bulk}", f"{bulk / seconds:,.0f}", "mem/s")
        )

        if server:
            self._progress(f"  ingest: POST /api/v1/memories x {creates} ...")
            timings = []
            for item in bench_corpus.memory_items(scratch, vocab, rng, creates, now):
                body = self._api_item(item) | {"namespace": scratch.slug}
                status, ms, data = server.request(
                    "POST", "/api/v1/memories", token=token, body=body
                )
                if status != 201:
                    raise CommandError(f"POST /api/v1/memories answered {status}: {data[:300]!r}")
                timings.append(ms)
            rows.append(self._rate("HTTP", f"POST /memories x {creates}", creates, timings))
            rows.append(("ingest", "POST /memories p50 / p95 / p99", _ms(timings), "ms"))
            self._progress(f"  ingest: POST /api/v1/memories/bulk of {bulk} ...")
            items = bench_corpus.memory_items(scratch, vocab, rng, bulk, now)
            body = {"namespace": scratch.slug, "memories": [self._api_item(i) for i in items]}
            status, ms, data = server.request(
                "POST", "/api/v1/memories/bulk", token=token, body=body
            )
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
        bench_corpus.clear_namespace(scratch)
        return rows

    @staticmethod
    def _api_item(item: dict[str, Any]) -> dict[str, Any]:
        return {key: item[key] for key in ("content", "keywords", "topic", "strength", "utility")}

    @staticmethod
    def _rate(kind: str, label: str, count: int, timings: list[float]) -> Row:
        return ("ingest", f"{kind}: {label}", f"{count / (sum(timings) / 1000):,.0f}", "mem/s")

    # --- Recall ----------------------------------------------------------------------

    def _queries(self, count: int) -> list[str]:
        return bench_corpus.queries(count)

    def _recall(
        self, namespace: Namespace, count: int, server: Server | None, token: str
    ) -> list[Row]:
        from recall.pipeline import ALL_STAGES
        from recall.services import recall_run

        queries = self._queries(count)
        rows: list[Row] = []
        self._progress(f"  recall: {count} queries in process ...")
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
                rows.append(
                    ("recall", f"  stage {name} p50 / p95 / p99", _ms(values), f"ms ({ran})")
                )
            else:
                rows.append(("recall", f"  stage {name}", "skipped", f"({ran})"))
        rows.append(("recall", "results per query (mean)", f"{hits / count:.1f}", "memories"))
        if server:
            self._progress(f"  recall: {count} queries over HTTP ...")
            timings = []
            for query in queries:
                body = {"query": query, "namespaces": [namespace.slug], "track": False}
                status, ms, data = server.request("POST", "/api/v1/recall", token=token, body=body)
                if status != 200:
                    raise CommandError(f"POST /api/v1/recall answered {status}: {data[:300]!r}")
                timings.append(ms)
            rows.append(("recall", "HTTP POST /recall p50 / p95 / p99", _ms(timings), "ms"))
        return rows

    # --- Due queue, sweep, size ------------------------------------------------------

    def _queue(self, namespace: Namespace, runs: int) -> list[Row]:
        from review.models import Card
        from review.selectors import review_queue

        self._progress(f"  queue: review_queue x {runs} ...")
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

    def _sweep(self, namespace: Namespace) -> list[Row]:
        from memories.sweep import sweep_run

        self._progress("  sweep: dry run over the corpus ...")
        report = sweep_run(namespace=namespace, dry_run=True)
        return [
            ("decay sweep", "dry run, corpus namespace", f"{report.duration_seconds:.2f}", "s"),
            ("decay sweep", "memories examined", f"{report.examined:,}", ""),
        ]

    def _size(self) -> list[Row]:
        memories = Memory.objects.count()
        table = Memory._meta.db_table
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
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
                memory_bytes = self._sqlite_table_bytes(cursor, table)
                what = "memory table + indexes (dbstat)"
        per = 1000 / max(memories, 1) / 1024 / 1024
        rows: list[Row] = [("size", "memories in the database", f"{memories:,}", "all namespaces")]
        if memory_bytes is not None:
            rows.append(("size", f"per 1,000 memories: {what}", f"{memory_bytes * per:.2f}", "MiB"))
        rows.append(
            ("size", "per 1,000 memories: whole database", f"{database_bytes * per:.2f}", "MiB")
        )
        return rows

    @staticmethod
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

    # --- Load test -------------------------------------------------------------------

    def _load(self, namespace: Namespace, server: Server, token: str, seconds: int) -> list[Row]:
        """wrk against the gunicorn: recall and create at each of LOAD_CONCURRENCY."""
        wrk = shutil.which("wrk")
        if wrk is None:
            raise CommandError("--load needs wrk (apt-get install wrk).")
        scratch = bench_corpus.scratch_namespace()
        recall = [
            {"query": q, "namespaces": [namespace.slug], "track": False} for q in self._queries(100)
        ]
        vocab = bench_corpus.vocabulary()
        rng = random.Random(bench_corpus.SEED + 3)
        create = [
            self._api_item(item) | {"namespace": scratch.slug}
            for item in bench_corpus.memory_items(scratch, vocab, rng, 100, timezone.now())
        ]
        rows: list[Row] = []
        with tempfile.TemporaryDirectory() as tmp:
            for name, path, bodies in (
                ("recall", "/api/v1/recall", recall),
                ("create", "/api/v1/memories", create),
            ):
                script = Path(tmp) / f"{name}.lua"
                script.write_text(_wrk_script(path, token, bodies))
                for concurrency in LOAD_CONCURRENCY:
                    self._progress(f"  load: {name} at concurrency {concurrency}, {seconds} s ...")
                    figures = self._wrk(wrk, server, script, concurrency, seconds)
                    rows.append(
                        (
                            "load (wrk)",
                            f"{name} c={concurrency}: req/s",
                            f"{figures['requests'] / figures['seconds']:,.1f}",
                            f"{figures['requests']:,} requests",
                        )
                    )
                    rows.append(
                        (
                            "load (wrk)",
                            f"{name} c={concurrency}: p50 / p95 / p99",
                            " / ".join(f"{figures[p] / 1000:.1f}" for p in ("p50", "p95", "p99")),
                            "ms",
                        )
                    )
                    errors = str(figures["errors"])
                    rows.append(("load (wrk)", f"{name} c={concurrency}: errors", errors, ""))
        return rows

    @staticmethod
    def _wrk(wrk: str, server: Server, script: Path, concurrency: int, seconds: int) -> dict:
        completed = subprocess.run(
            [
                wrk,
                "--threads",
                str(min(2, concurrency)),
                "--connections",
                str(concurrency),
                "--duration",
                f"{seconds}s",
                "--timeout",
                "60s",
                "--script",
                str(script),
                f"http://127.0.0.1:{server.port}",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        for line in completed.stdout.splitlines():
            if line.startswith("BENCH "):
                return json.loads(line[len("BENCH ") :])
        raise CommandError(f"wrk printed no figures: {completed.stdout[-500:]}{completed.stderr}")


def _wrk_script(path: str, token: str, bodies: list[dict[str, Any]]) -> str:
    """A wrk Lua script: POST the bodies in turn; print the figures as one JSON line."""
    encoded = ",\n".join(f"  [==[{json.dumps(body)}]==]" for body in bodies)
    return f"""
wrk.method = "POST"
wrk.path = "{path}"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer {token}"
local bodies = {{
{encoded}
}}
local i = 0
request = function()
  i = i + 1
  return wrk.format(nil, nil, nil, bodies[(i % #bodies) + 1])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {{"requests": %d, "seconds": %f, "errors": %d, "p50": %f, "p95": %f, "p99": %f}}\\n',
    summary.requests, summary.duration / 1e6,
    e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(95), latency:percentile(99)))
end
"""


# Export records that refer to memories by id, and the fields that do.
_MEMORY_REFERENCES = {
    "memory": ("id",),
    "association": ("source", "target"),
    "card": ("memory",),
    "review_log": ("memory",),
    "event": ("memory",),
}


def import_file(export: bytes, size: int) -> bytes:
    """An import file of about `size` bytes: the export, plus copies of its memories (with
    their links, cards, logs and history) under new ids until the size is reached.
    Entities, relations and digests appear once (a namespace holds each only once)."""
    lines = export.decode().splitlines()
    header, records = lines[0], [json.loads(line) for line in lines[1:-1]]
    copyable = [r for r in records if r["type"] in _MEMORY_REFERENCES]
    per_copy = sum(len(json.dumps(r)) + 1 for r in copyable) or 1
    offset = 1 + max((r["id"] for r in records if r["type"] == "memory"), default=0)
    out = [header, *lines[1:-1]]
    written = len(export)
    copy = 1
    while written + per_copy <= size:
        for record in copyable:
            shifted = dict(record)
            for field in _MEMORY_REFERENCES[record["type"]]:
                shifted[field] = record[field] + copy * offset
            out.append(json.dumps(shifted))
        written += per_copy
        copy += 1
    out.append(json.dumps({"type": "end", "lines": len(out) + 1}))
    return ("\n".join(out) + "\n").encode()
