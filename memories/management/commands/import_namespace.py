"""Import a JSON Lines export into a namespace, all or nothing."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memories.importer import ImportFailed, namespace_import
from memories.models import Namespace


class Command(BaseCommand):
    help = "Import a JSON Lines export into an existing namespace (owner/slug)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("namespace", help="owner/slug, e.g. demo/personal")
        parser.add_argument("file")
        parser.add_argument(
            "--apply-settings",
            action="store_true",
            help="Copy the exported namespace settings too.",
        )

    def handle(self, *args, namespace: str, file: str, apply_settings: bool, **options) -> None:
        owner, _, slug = namespace.partition("/")
        ns = Namespace.objects.filter(owner__username=owner, slug=slug).first()
        if ns is None:
            raise CommandError(f"No namespace {namespace!r} (write it as owner/slug).")
        try:
            # Bytes: the import decodes each line itself, refusing invalid UTF-8 by line.
            with open(file, "rb") as lines:
                result = namespace_import(namespace=ns, lines=lines, apply_settings=apply_settings)
        except ImportFailed as exc:
            raise CommandError(f"{file}: {exc}; nothing was imported.") from None
        self.stdout.write(
            self.style.SUCCESS(
                "Imported " + ", ".join(f"{n} {kind}" for kind, n in sorted(result.counts.items()))
            )
        )
