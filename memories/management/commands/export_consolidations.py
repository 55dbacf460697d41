"""Write consolidation digests as Markdown files in DIR/daily, DIR/weekly, DIR/quarterly."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memories.consolidation import consolidations_export
from memories.sweep import namespace_lookup


class Command(BaseCommand):
    help = "Export consolidation digests as Markdown (one file per digest, front matter first)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("directory", help="Folder to write daily/, weekly/, quarterly/ in.")
        parser.add_argument("--namespace", help="Only this namespace: owner/slug or id.")

    def handle(self, *args, directory: str, namespace: str | None, **options) -> None:
        ns = None
        if namespace:
            ns = namespace_lookup(namespace)
            if ns is None:
                raise CommandError(f"No namespace {namespace!r} (write it as owner/slug or id).")
        count = consolidations_export(directory=directory, namespace=ns)
        self.stdout.write(f"Wrote {count} digests under {directory}.")
