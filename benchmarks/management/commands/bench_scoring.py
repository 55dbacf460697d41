"""Microbenchmark of the pure scoring functions; no database is touched."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from benchmarks.scoring import measure


class Command(BaseCommand):
    help = "Print the time per call (microseconds) of the pure scoring functions."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--iterations",
            type=int,
            default=2000,
            help="calls per function (mmr_rerank runs a tenth as many)",
        )

    def handle(self, *args: object, **options: object) -> None:
        for name, micros, runs in measure(max(1, int(options["iterations"]))):
            self.stdout.write(f"{name:<24} {micros:>10.2f} µs/call  ({runs} calls)")
