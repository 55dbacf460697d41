"""A webhook burst: N memory events delivered by a real qcluster to a local receiver.

    manage.py bench_webhooks                      # 1,000 events, a temporary SQLite file
    manage.py bench_webhooks --database-url postgres://.../hooks_bench   # an empty database

The cluster (Q_WORKERS workers, the real settings) starts first; then N memories are
written, each in its own transaction as N agents' writes would be, and the clock runs from
the first write until the receiver holds all N webhook-ids. Reported: seconds, events per
second, requests received, duplicates (the at-least-once retries the log shows), and the
attempts the delivery log counts. docs/webhooks.md and docs/benchmarks.md have the figures.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

ROOT = Path(__file__).resolve().parents[3]
SEED = """
from django.contrib.auth import get_user_model
from memories import services
from memories.services import webhooks
owner = get_user_model().objects.create_user("bench-hooks-{tag}")
ns = services.namespace_create(owner=owner, name="bench-hooks-{tag}")
webhooks.webhook_subscription_create(namespace=ns, url="{url}")
print(ns.slug)
"""
BURST = """
from memories import services
from memories.models import Namespace
ns = Namespace.objects.get(slug="{slug}")
for n in range({count}):
    services.memory_create(namespace=ns, content=f"Burst event {{n}} of {tag}.")
"""
COUNTS = """
from django.db.models import Sum
from memories.models import WebhookDelivery
rows = WebhookDelivery.objects.filter(namespace__slug="{slug}")
print(rows.count(), rows.filter(status="delivered").count(), rows.aggregate(a=Sum("attempts"))["a"])
"""


class _Receiver:
    def __init__(self) -> None:
        self.ids: list[str] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with receiver.lock:
                    receiver.ids.append(self.headers.get("webhook-id", ""))
                self.send_response(204)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def unique(self) -> int:
        with self.lock:
            return len(set(self.ids))


class Command(BaseCommand):
    help = "Time the delivery of a burst of N memory events to a local webhook receiver."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--events", type=int, default=1000, help="Memory events (1,000).")
        parser.add_argument("--workers", type=int, default=2, help="Q_WORKERS (2).")
        parser.add_argument("--timeout", type=float, default=300.0, help="Give up after (s).")
        parser.add_argument(
            "--database-url", default="", help="An empty database (default: a temporary file)."
        )
        parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")

    def _manage(self, env: dict[str, str], *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if result.returncode:
            raise CommandError(result.stderr[-2000:])
        return result.stdout.strip()

    def handle(self, *args, **options) -> None:
        receiver = _Receiver()
        count = options["events"]
        with tempfile.TemporaryDirectory() as folder:
            url = options["database_url"] or f"sqlite:///{Path(folder) / 'hooks.sqlite3'}"
            env = {**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING"}
            env.pop("DJANGO_SETTINGS_MODULE", None)
            env.update(
                {
                    "Q_WORKERS": str(options["workers"]),
                    "WEBHOOK_ALLOW_LOOPBACK": "true",
                    "EMBEDDING_ENABLED": "false",
                }
            )
            self.stderr.write("Migrating the benchmark database…")
            self._manage(env, "migrate", "--no-input")
            self._manage(env, "createcachetable")
            tag = str(int(time.time()))
            slug = self._manage(
                env, "shell", "--no-imports", "-c", SEED.format(tag=tag, url=receiver.url)
            )
            log = (Path(folder) / "cluster.log").open("w")
            cluster = subprocess.Popen(
                [sys.executable, "manage.py", "qcluster"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                time.sleep(3)  # the cluster's workers start
                started = time.monotonic()
                writer = subprocess.Popen(
                    [
                        sys.executable,
                        "manage.py",
                        "shell",
                        "--no-imports",
                        "-c",
                        BURST.format(slug=slug, count=count, tag=tag),
                    ],
                    cwd=ROOT,
                    env=env,
                )
                deadline = started + options["timeout"]
                while receiver.unique() < count and time.monotonic() < deadline:
                    time.sleep(0.05)
                seconds = time.monotonic() - started
                writer.wait(timeout=600)
                written = time.monotonic() - started
            finally:
                cluster.send_signal(signal.SIGTERM)  # the cluster stops its own children
                try:
                    cluster.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(cluster.pid, signal.SIGKILL)
                    cluster.wait(timeout=30)
                log.close()
            rows, delivered, attempts = self._manage(
                env, "shell", "--no-imports", "-c", COUNTS.format(slug=slug)
            ).split()
        receiver.server.shutdown()
        figures: dict[str, Any] = {
            "database": "postgresql" if url.startswith("postgres") else "sqlite",
            "workers": options["workers"],
            "events": count,
            "received_unique": receiver.unique(),
            "requests": len(receiver.ids),
            "duplicates": len(receiver.ids) - receiver.unique(),
            "log_rows": int(rows),
            "log_delivered": int(delivered),
            "log_attempts": int(attempts or 0),
            "writes_done_seconds": round(written, 2),
            "all_delivered_seconds": round(seconds, 2),
            "events_per_second": round(receiver.unique() / seconds, 1),
        }
        if options["json"]:
            self.stdout.write(json.dumps(figures))
            return
        for key, value in figures.items():
            self.stdout.write(f"{key:>22}: {value}")
        if receiver.unique() < count:
            raise CommandError(f"only {receiver.unique()} of {count} delivered in time")
