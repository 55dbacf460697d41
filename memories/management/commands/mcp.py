"""`manage.py mcp`: Engram's MCP server over stdio, for desktop clients that start it."""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError
from rest_framework import exceptions

from memories.mcp import run_stdio


class Command(BaseCommand):
    help = (
        "Serve MCP over stdin/stdout with one API token (ENGRAM_TOKEN or --token); "
        "the token's namespaces, access and ceiling apply to every tool."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--token", help="An API token (default: $ENGRAM_TOKEN).")

    def handle(self, *args, token: str | None = None, **options) -> None:
        secret = token or os.environ.get("ENGRAM_TOKEN", "")
        if not secret:
            raise CommandError("An API token is needed: set ENGRAM_TOKEN or pass --token.")
        try:
            run_stdio(secret)
        except exceptions.AuthenticationFailed as exc:
            raise CommandError(f"The token was refused: {exc.detail}") from exc
