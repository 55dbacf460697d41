"""Time the decay sweep and the simulated worker's due-card selection on N memories.

    DATABASE_URL=postgres://.../bg_bench manage.py migrate
    DATABASE_URL=postgres://.../bg_bench manage.py bench_background --size 1000000

The dataset (built once, kept for the next run), the churn before each timed sweep and
the measurements are benchmarks.background's. docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchmarks import background
from config.db import vendor
from memories.sweep import SweepConfig


class Command(BaseCommand):
    help = "Build (once) N synthetic memories and time the decay sweep and the due-card query."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--size", type=int, default=100_000, help="Memories (default 100k).")
        parser.add_argument("--runs", type=int, default=3, help="Timed sweeps (default 3).")
        parser.add_argument(
            "--churn", type=float, default=0.01, help="Share of rows a sweep changes (0.01)."
        )
        parser.add_argument("--batch-size", type=int, default=None, help="SWEEP_BATCH_SIZE.")
        parser.add_argument("--queue-runs", type=int, default=50, help="Timed due-card queries.")
        parser.add_argument("--queue-limit", type=int, default=None, help="Cards per run.")
        parser.add_argument("--rebuild", action="store_true", help="Drop the dataset first.")
        parser.add_argument("--drop", action="store_true", help="Drop the dataset and stop.")
        parser.add_argument("--explain", action="store_true", help="Print one batch's plan.")
        parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")

    def handle(self, *args, **options) -> None:
        if options["churn"] <= 0 or options["churn"] > 1:
            raise CommandError("--churn must be in (0, 1].")
        if options["drop"] or options["rebuild"]:
            background.drop()
            if options["drop"]:
                self.stdout.write("Dropped the benchmark dataset.")
                return
        size = options["size"]
        started = time.perf_counter()
        namespaces, epoch, state = background.dataset(size, self.stderr.write)
        build_seconds = time.perf_counter() - started
        config = SweepConfig.from_settings(
            batch_size=options["batch_size"] or settings.SWEEP_BATCH_SIZE
        )
        figures: dict[str, Any] = {
            "vendor": vendor(),
            "memories": background.memory_count(namespaces),
            "build_seconds": round(build_seconds, 1),
            "batch_size": config.batch_size,
            "churn": options["churn"],
        }
        if not state.get("settled"):
            figures["settling_sweep"] = background.settle(namespaces, epoch, config, state)
        if options["explain"]:
            self.stdout.write(background.explain(epoch, config))
        figures |= background.timed_sweeps(
            namespaces,
            size,
            epoch,
            config,
            runs=options["runs"],
            churn=options["churn"],
            state=state,
            progress=self.stderr.write,
        )
        figures["due_cards"] = background.bench_queue(
            namespaces[0],
            epoch,
            runs=options["queue_runs"],
            limit=options["queue_limit"] or settings.SIMULATED_RECALL_BATCH,
        )
        figures["worker_run"] = background.bench_worker(namespaces[0], epoch)
        if options["json"]:
            self.stdout.write(json.dumps(figures, indent=2))
            return
        for key, value in figures.items():
            self.stdout.write(f"{key}: {value}")
