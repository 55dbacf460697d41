"""Run the web server (uvicorn on config.asgi: dashboard, API, MCP) and the django-q2 worker
together; Ctrl-C (or SIGTERM) stops both."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

# prometheus_client's files: counter_<pid>.db, histogram_<pid>.db, gauge_max_<pid>.db, ...
METRIC_FILES = ("counter_*.db", "histogram_*.db", "gauge_*.db", "summary_*.db")


def metrics_dir_ready(port: int) -> str:
    """The web server's and the worker's shared metrics directory (docs/metrics.md),
    emptied: PROMETHEUS_MULTIPROC_DIR, or var/metrics-<port>. Files left by an earlier
    run's processes would be added to this run's figures."""
    path = Path(os.environ.get("PROMETHEUS_MULTIPROC_DIR") or settings.VAR_DIR / f"metrics-{port}")
    path.mkdir(parents=True, exist_ok=True)
    for pattern in METRIC_FILES:  # only prometheus_client's files, whatever dir was named
        for stale in path.glob(pattern):
            stale.unlink(missing_ok=True)
    return str(path)


class Command(BaseCommand):
    help = "Start the development web server and the background worker in one terminal."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="Only the web server.")

    def handle(self, *args, host: str, port: int, no_worker: bool, **options) -> None:
        manage = [sys.executable, sys.argv[0]]
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": metrics_dir_ready(port)}
        # The ASGI app (config.asgi): dashboard, API and MCP at /mcp, as in production.
        web = [sys.executable, "-m", "uvicorn", "config.asgi:application"]
        commands = {"web": [*web, "--host", host, "--port", str(port), "--no-server-header"]}
        if not no_worker:
            commands["worker"] = [*manage, "qcluster"]
        # Each child in its own session: Ctrl-C reaches this process only, which stops the
        # children with one SIGTERM each. A terminal's SIGINT sent to qcluster's whole
        # process group could land in its sentinel during a database call and leave the
        # cluster half-stopped (seen on PostgreSQL: still polling 25 s later).
        children = {
            name: subprocess.Popen(cmd, start_new_session=True, env=env)
            for name, cmd in commands.items()
        }
        self.stdout.write(
            self.style.SUCCESS(
                f"Engram is running at http://{host}:{port}/ "
                f"({' and '.join(children)}); press Ctrl-C to stop."
            )
        )

        stopping = False

        def stop(signum, frame) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        exit_code = 0
        try:
            while not stopping:
                for name, child in children.items():
                    code = child.poll()
                    if code is not None:
                        self.stderr.write(f"{name} exited with code {code}; stopping the rest.")
                        exit_code = code or 1
                        stopping = True
                time.sleep(0.2)
        finally:
            for child in children.values():
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            # qcluster takes ~7 s to stop when idle, longer on a busy machine.
            deadline = time.monotonic() + 25
            for child in children.values():
                try:
                    child.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    child.kill()
        if exit_code:
            sys.exit(exit_code)
