"""Time the worker's fit of one namespace's decay to its uses (issue 19).

    DATABASE_URL=postgres://.../bench_main manage.py migrate
    DATABASE_URL=postgres://.../bench_main manage.py bench_decay_fit --size 100000

About ten uses a memory are drawn (1,000,000 for 100,000 memories).

The namespace and its uses are built once (benchmarks.decay_fit) and kept; run it again
for a figure whose peak memory is the fit's alone. docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchmarks import decay_fit


class Command(BaseCommand):
    help = "Build (once) a namespace of N memories and their uses and time the decay fit on it."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--size", type=int, default=100_000, help="Memories (100k).")
        parser.add_argument("--runs", type=int, default=3, help="Timed fits (3).")
        parser.add_argument("--rebuild", action="store_true", help="Build the namespace anew.")

    def handle(self, *args, **options) -> None:
        if options["size"] < 100 or options["runs"] < 1:
            raise CommandError("--size must be at least 100 and --runs at least 1.")
        settings.DEBUG = False  # no query log in the timings
        figures = decay_fit.run(
            options["size"],
            runs=options["runs"],
            rebuild=options["rebuild"],
            progress=self.stderr.write,
        )
        self.stdout.write(json.dumps(figures, indent=2))
