"""Time the about-to-forget digest's query on one namespace of N memories.

    DATABASE_URL=postgres://.../bench_main manage.py migrate
    DATABASE_URL=postgres://.../bench_main manage.py bench_forgetting --size 1000000

The namespace is built once (benchmarks.forgetting, through the corpus loader) and kept;
the first run times it as written and after the decay sweep, later runs the swept state.
docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchmarks import forgetting


class Command(BaseCommand):
    help = "Build (once) a namespace of N memories and time the about-to-forget digest on it."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--size", type=int, default=100_000, help="Memories (100k).")
        parser.add_argument("--runs", type=int, default=20, help="Timed runs per figure (20).")
        parser.add_argument("--rebuild", action="store_true", help="Build the namespace anew.")
        parser.add_argument("--plan", action="store_true", help="Print the statement's plan.")
        parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")

    def handle(self, *args, **options) -> None:
        if options["size"] < 10 or options["runs"] < 1:
            raise CommandError("--size must be at least 10 and --runs at least 1.")
        settings.DEBUG = False  # no query log in the timings
        figures = forgetting.run(
            options["size"],
            runs=options["runs"],
            rebuild=options["rebuild"],
            plan=options["plan"],
            progress=self.stderr.write,
        )
        if options["json"]:
            self.stdout.write(json.dumps(figures, indent=2))
            return
        for key, value in figures.items():
            if isinstance(value, dict):
                self.stdout.write(f"{key}:")
                for name, figure in value.items():
                    self.stdout.write(f"  {name}: {figure}")
            elif isinstance(value, str) and "\n" in value:
                self.stdout.write(f"{key}:\n{value}")
            else:
                self.stdout.write(f"{key}: {value}")
