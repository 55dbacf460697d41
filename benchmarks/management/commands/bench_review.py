"""Time the due queue of one namespace with N cards (about half due) and print the figures."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from benchmarks.review import bench_due_queue


class Command(BaseCommand):
    help = "Build a namespace of N cards, time review_queue on it, drop it, print the figures."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--cards", type=int, default=100_000)
        parser.add_argument("--runs", type=int, default=30)
        parser.add_argument("--limit", type=int, default=50)
        parser.add_argument("--scheduler", choices=["sm2", "fsrs"], default="sm2")
        parser.add_argument("--plan", action="store_true", help="Also print the query plan.")

    def handle(
        self, *args, cards: int, runs: int, limit: int, scheduler: str, plan: bool, **options
    ) -> None:
        self.stdout.write(f"Building {cards:,} cards…")
        result = bench_due_queue(cards, runs=runs, limit=limit, scheduler=scheduler)
        self.stdout.write(
            f"{result['vendor']} {result['scheduler']}: {result['cards']:,} cards, "
            f"queue of {result['returned']} (limit {result['limit']}) — median "
            f"{result['median_ms']} ms, p95 {result['p95_ms']} ms, min {result['min_ms']} ms "
            f"(build {result['build_seconds']} s)"
        )
        if plan:
            self.stdout.write(result["plan"])
