"""Run the decay sweep now, or show what it would do (--dry-run)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from memories.models import BackgroundRun, Namespace
from memories.sweep import SweepReport, namespace_lookup, sweep_run
from memories.tasks import run_recorded

RULE_NAMES = {
    "core": "made core",
    "promote": "promoted to long-term",
    "forget": "forgotten",
    "cold": "moved to cold storage",
    "archive": "archived",
}


class Command(BaseCommand):
    help = (
        "Apply the decay rules to every live memory (promote, forget, cold storage, archive, "
        "core) and purge forgotten memories past their retention. --dry-run only reports."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Compute, write nothing.")
        parser.add_argument("--namespace", help="Only this namespace: owner/slug or id.")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")

    def handle(self, *args, dry_run: bool, namespace: str | None, **options) -> None:
        ns: Namespace | None = None
        if namespace:
            ns = namespace_lookup(namespace)
            if ns is None:
                raise CommandError(f"No namespace {namespace!r} (write it as owner/slug or id).")
        if dry_run:
            report = sweep_run(namespace=ns, dry_run=True)
        else:
            holder: dict[str, SweepReport] = {}

            def work() -> dict:
                holder["report"] = sweep_run(namespace=ns)
                return holder["report"].counts()

            run_recorded(BackgroundRun.Kind.SWEEP, work, namespace_id=ns.pk if ns else None)
            report = holder["report"]
        if options["json"]:
            data = report.counts()
            data["by_namespace"] = {str(k): v for k, v in report.by_namespace.items()}
            data["samples"] = report.samples
            self.stdout.write(json.dumps(data, indent=2))
            return
        self._print(report)

    def _print(self, report: SweepReport) -> None:
        verb = "would be" if report.dry_run else "were"
        scope = f"namespace #{report.namespace_id}" if report.namespace_id else "all namespaces"
        self.stdout.write(
            f"{'Dry run' if report.dry_run else 'Sweep'} at {report.now:%Y-%m-%d %H:%M:%S %Z} "
            f"over {scope}: {report.examined} live memories in {report.batches} batches, "
            f"{report.duration_seconds:.2f} s."
        )
        counts = {
            "core": report.core,
            "promote": report.promoted,
            "forget": report.forgotten,
            "cold": report.cold,
            "archive": report.archived,
        }
        for rule, count in counts.items():
            line = f"  {count:>8} {verb} {RULE_NAMES[rule]}"
            sample = report.samples.get(rule)
            if sample:
                line += f"  (e.g. #{', #'.join(str(i) for i in sample)})"
            self.stdout.write(line)
        self.stdout.write(f"  {report.purged:>8} {verb} purged (forgotten past the retention)")
        if report.dry_run and report.by_namespace:
            names = dict(
                Namespace.objects.filter(pk__in=report.by_namespace).values_list("pk", "slug")
            )
            self.stdout.write("  by namespace:")
            for ns_id, rules in sorted(report.by_namespace.items()):
                detail = ", ".join(f"{rule} {n}" for rule, n in sorted(rules.items()))
                self.stdout.write(f"    {names.get(ns_id, ns_id)} (#{ns_id}): {detail}")
