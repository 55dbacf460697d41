"""Write a namespace's JSON Lines export to a file (or stdout)."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from memories.models import Classification, Namespace
from memories.transfer import namespace_export


class Command(BaseCommand):
    help = "Export a namespace (every classification) as JSON Lines."

    def add_arguments(self, parser) -> None:
        parser.add_argument("namespace", help="owner/slug, e.g. demo/personal")
        parser.add_argument("--output", "-o", help="File to write; default stdout.")

    def handle(self, *args, namespace: str, output: str | None, **options) -> None:
        owner, _, slug = namespace.partition("/")
        ns = Namespace.objects.filter(owner__username=owner, slug=slug).first()
        if ns is None:
            raise CommandError(f"No namespace {namespace!r} (write it as owner/slug).")
        out = open(output, "w", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
        try:
            for line in namespace_export(namespace=ns, ceiling=Classification.RESTRICTED):
                out.write(line)
        finally:
            if output:
                out.close()
