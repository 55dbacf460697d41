"""Read Markdown digests (DIR/daily, DIR/weekly, DIR/quarterly) back into the database."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memories.consolidation import consolidations_import
from memories.sweep import namespace_lookup


class Command(BaseCommand):
    help = (
        "Import consolidation digests written by export_consolidations (or by hand, in the "
        "same format). Files name their namespace as owner/slug unless --namespace is given."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("directory", help="Folder holding daily/, weekly/, quarterly/.")
        parser.add_argument("--namespace", help="Import every file into this namespace.")

    def handle(self, *args, directory: str, namespace: str | None, **options) -> None:
        ns = None
        if namespace:
            ns = namespace_lookup(namespace)
            if ns is None:
                raise CommandError(f"No namespace {namespace!r} (write it as owner/slug or id).")
        report = consolidations_import(directory=directory, namespace=ns)
        self.stdout.write(
            f"Imported {report.created} new, {report.updated} updated, "
            f"{report.unchanged} unchanged digests."
        )
        for error in report.errors:
            self.stderr.write(f"skipped {error}")
        if report.errors:
            raise CommandError(f"{len(report.errors)} files could not be imported.")
