"""Create or update the background schedules (idempotent: run it on every start)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from memories.tasks import SCHEDULES, schedules_setup


class Command(BaseCommand):
    help = (
        "Create or update the django-q2 schedules of the decay sweep, simulated recall, "
        "consolidation digests and embedding backfill, by name, with intervals from the "
        "settings. Running it twice creates nothing twice."
    )

    def handle(self, *args, **options) -> None:
        outcome = schedules_setup()
        minutes = {spec.name: spec.minutes for spec in SCHEDULES}
        for name, what in outcome.items():
            every = f" every {minutes[name]} min" if what != "removed" else ""
            self.stdout.write(f"{name}: {what}{every if what != 'unchanged' else ''}")
