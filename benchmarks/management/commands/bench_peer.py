"""Engram side by side with a peer memory system (CortexGraph), in the same run.

    DATABASE_URL=... manage.py migrate
    DATABASE_URL=... manage.py bench_peer [--size 10000] [--queries 200] [--eval FILE]
                                          [--skip-eval] [--json FILE]

The peer runs in its own virtualenv (var/peer-venv by default; created with
`python3.11 -m venv` and `pip install cortexgraph==1.2.1 "mcp<2"` on first use, reused
afterwards), through our driver benchmarks/peer_driver/cortexgraph_driver.py, with its
store in a temporary directory. Both systems get the same memories (the bench
corpus's texts from its seed, loaded into Engram's scratch namespace `bench-peer` of the
bench user through memory_bulk_create, and into CortexGraph through save_memory), the same
queries, and a decay pass over the same ages with the same power-law formula; then
recall@k on a LoCoMo file (Engram through eval_recall's evaluation, benchmarks.locomo;
CortexGraph with the same turns, questions and definition). Prints one table; --json
writes every figure. docs/peer-comparison.md has the figures and what they mean.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from benchmarks import corpus, peer, peer_table, peer_venv
from benchmarks.peer import DEFAULT_EVAL


class Command(BaseCommand):
    help = "Compare Engram with CortexGraph on the same corpus, queries and LoCoMo file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--size", type=int, default=10_000, help="Corpus memories (10k).")
        parser.add_argument("--queries", type=int, default=200, help="Search queries (200).")
        parser.add_argument(
            "--eval",
            default=DEFAULT_EVAL,
            help=f"LoCoMo-format file, relative to the project (default {DEFAULT_EVAL}).",
        )
        parser.add_argument("--skip-eval", action="store_true", help="No LoCoMo recall@k.")
        parser.add_argument("--k", default="1,5,10", help="recall@k values (1,5,10).")
        parser.add_argument("--conversations", type=int, help="Only the first N conversations.")
        parser.add_argument("--json", dest="json_out", help="Write the figures to this file.")
        parser.add_argument(
            "--peer-venv",
            default=str(Path(settings.BASE_DIR) / "var" / "peer-venv"),
            help="The peer's virtualenv (created when missing).",
        )
        parser.add_argument(
            "--no-peer", action="store_true", help="Engram only (no peer venv, no driver)."
        )
        parser.add_argument(
            "--keep", action="store_true", help="Keep the scratch namespace afterwards."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["size"] < 10:
            raise CommandError("--size must be at least 10.")
        if options["queries"] < 1:
            raise CommandError("--queries must be at least 1.")
        try:
            ks = sorted({int(k) for k in options["k"].split(",") if k.strip()})
        except ValueError:
            raise CommandError("--k takes comma-separated integers, e.g. 1,5,10") from None
        if not ks or ks[0] < 1:
            raise CommandError("--k values must be positive")
        data = None
        if not options["skip_eval"]:
            data = peer.read_eval(options["eval"], options["conversations"])

        figures: dict[str, Any] = {"machine": peer.machine_info(), "engram": peer.engram_info()}
        python = None
        if not options["no_peer"]:
            python = peer_venv.ensure_peer_venv(Path(options["peer_venv"]), self._progress)
            figures["peer"] = {}

        query_list = peer.queries(options["queries"])
        namespace = peer.scratch_namespace()
        try:
            items = peer.corpus_items(
                namespace, options["size"], timezone.now().replace(microsecond=0)
            )
            figures["engram"]["corpus"] = peer.engram_corpus(
                namespace, items, query_list, self._progress
            )
        finally:
            if not options["keep"]:
                corpus.clear_namespace(namespace)
                namespace.delete()
        with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
            work = Path(tmp)
            if python:
                figures["peer"] = peer.peer_corpus(
                    python, items, query_list, work / "corpus", self._progress
                )
            if data is not None:
                # eval_recall's latency is taken without the query log, as in production.
                settings.DEBUG = False
                figures["engram"]["locomo"] = peer.engram_locomo(
                    options["eval"], options["conversations"], ks, self._progress
                )
                if python:
                    figures["peer"]["locomo"] = peer.peer_locomo(
                        python, data, ks, work, self._progress
                    )
        figures["rows"] = [
            [r.figure, r.engram, r.peer, r.ratio] for r in peer_table.table_rows(figures)
        ]
        self._print(figures)
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(figures, indent=2, default=str))

    def _progress(self, message: str) -> None:
        self.stderr.write(message)

    def _print(self, figures: dict[str, Any]) -> None:
        machine = figures["machine"]
        self.stdout.write(
            f"{machine['cores']} cores, {machine['memory_gib']} GiB, load "
            f"{machine['load_1min_at_start']} at start, Python {machine['python']}, "
            f"Django {machine['django']}, {machine['date']}"
        )
        rows = [peer_table.Row(*row) for row in figures["rows"]]
        self.stdout.write(peer_table.format_table(rows))
