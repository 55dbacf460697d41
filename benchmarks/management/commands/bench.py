"""Benchmark the whole service on the database of DATABASE_URL and print one table.

    DATABASE_URL=postgres://.../bench_main manage.py migrate
    DATABASE_URL=postgres://.../bench_main manage.py bench --size 100000

The synthetic corpus (benchmarks.corpus) is built once and reused while its size and
version are unchanged. Ingest is measured in a scratch namespace, so the corpus never
changes; the HTTP figures come from a gunicorn started on a free port with the same
DATABASE_URL. The sweep is timed as a dry run (the same scoring and rules, nothing
written), so repeated runs see the same data. --load adds a wrk load test (recall and
create at concurrency 1, 8 and 32 for --load-seconds each). `make bench` runs it on SQLite and, when
BENCH_DATABASE_URL is set, on PostgreSQL. docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchmarks import service, service_table
from benchmarks.service import EXTRA_PARTS, PARTS
from benchmarks.service_table import Row


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
        rows = service.run(
            size=options["size"],
            namespaces=options["namespaces"],
            only=only,
            queries=options["queries"],
            creates=options["creates"],
            queue_runs=options["queue_runs"],
            workers=options["workers"],
            http=not options["no_http"],
            load=options["load"],
            load_seconds=options["load_seconds"],
            rebuild=options["rebuild"],
            import_mb=options["import_mb"],
            redis_url=options["redis_url"],
            progress=self._progress,
        )
        self._print(rows)
        if options["save_dir"]:
            path = service_table.save(
                options["save_dir"], options["size"], options["namespaces"], rows
            )
            self._progress(f"  saved to {path}")
        if options["plot"]:
            self._plot(options["save_dir"], options["plot"])

    def _plot(self, save_dir: str, target: str) -> None:
        drawn = service_table.plot(save_dir, target)
        self._progress(f"  plot of {drawn} saved runs written to {target}")

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
