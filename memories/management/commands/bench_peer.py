"""Engram side by side with a peer memory system (CortexGraph), in the same run.

    DATABASE_URL=... manage.py migrate
    DATABASE_URL=... manage.py bench_peer [--size 10000] [--queries 200] [--eval FILE]
                                          [--skip-eval] [--json FILE]

The peer runs in its own virtualenv (var/peer-venv by default; created with
`python3.11 -m venv` and `pip install cortexgraph==1.2.1 "mcp<2"` on first use, reused
afterwards), through our driver memories/peer_driver/cortexgraph_driver.py, with its
store in a temporary directory. Both systems get the same memories (bench_corpus's
texts from its seed, loaded into Engram's scratch namespace `bench-peer` of the bench
user through memory_bulk_create, and into CortexGraph through save_memory), the same
queries, and a decay pass over the same ages with the same power-law formula; then
recall@k on a LoCoMo file (Engram through eval_recall, CortexGraph with the same turns,
questions and definition). Prints one table; --json writes every figure.
docs/peer-comparison.md has the figures and what they mean.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
import time
from io import StringIO
from pathlib import Path
from typing import Any

import django
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.utils import timezone

from memories import bench_corpus, bench_peer
from memories.models import Classification, Namespace

DEFAULT_EVAL = "../shared/data/locomo-dev.json"
WIDE_TOP_K = 100  # search_memory's largest top_k
LOAD_BATCH = 1_000
WARMUP = 5


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
            data = self._read_eval(options["eval"], options["conversations"])

        figures: dict[str, Any] = {"machine": self._machine(), "engram": self._engram_info()}
        python = None
        if not options["no_peer"]:
            python = bench_peer.ensure_peer_venv(Path(options["peer_venv"]), self._progress)
            figures["peer"] = {}

        query_list = bench_peer.queries(options["queries"])
        namespace = self._scratch()
        try:
            items = bench_peer.corpus_items(
                namespace, options["size"], timezone.now().replace(microsecond=0)
            )
            figures["engram"]["corpus"] = self._engram_corpus(namespace, items, query_list)
        finally:
            if not options["keep"]:
                bench_corpus.clear_namespace(namespace)
                namespace.delete()
        with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
            work = Path(tmp)
            if python:
                figures["peer"] = self._peer_corpus(python, items, query_list, work / "corpus")
            if data is not None:
                figures["engram"]["locomo"] = self._engram_locomo(
                    options["eval"], options["conversations"], ks, work
                )
                if python:
                    figures["peer"]["locomo"] = self._peer_locomo(python, data, ks, work)
        figures["rows"] = [
            [r.figure, r.engram, r.peer, r.ratio] for r in bench_peer.table_rows(figures)
        ]
        self._print(figures)
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(figures, indent=2, default=str))

    # --- Helpers ---------------------------------------------------------------------

    def _progress(self, message: str) -> None:
        self.stderr.write(message)

    def _read_eval(self, name: str, conversations: int | None) -> list[dict]:
        path = Path(name)
        if not path.is_absolute() and not path.exists():
            path = Path(settings.BASE_DIR) / name
        from recall.management.commands.eval_recall import read_locomo

        return read_locomo(path, conversations, hint=" (or pass --skip-eval)")

    def _machine(self) -> dict[str, Any]:
        memory = None
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemTotal:"):
                    memory = round(int(line.split()[1]) / 1024 / 1024, 1)
        except OSError:
            pass
        return {
            "cores": os.cpu_count(),
            "memory_gib": memory,
            "load_1min_at_start": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
            "django": django.__version__,
            "date": timezone.now().isoformat(timespec="seconds"),
        }

    def _engram_info(self) -> dict[str, Any]:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SHOW server_version")
                storage = f"PostgreSQL {cursor.fetchone()[0].split()[0]}"
            elif connection.vendor == "sqlite":
                cursor.execute("SELECT sqlite_version()")
                storage = f"SQLite {cursor.fetchone()[0]}"
            else:
                storage = connection.vendor
        try:
            commit = subprocess.run(
                ["git", "describe", "--always", "--dirty"],
                cwd=settings.BASE_DIR,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            commit = "?"
        return {"version": f"engram {commit}", "storage": storage}

    def _scratch(self) -> Namespace:
        """The empty scratch namespace, with the decay formula the peer applies."""
        owner, _ = get_user_model().objects.get_or_create(username=bench_corpus.BENCH_USER)
        namespace, _ = Namespace.objects.get_or_create(
            owner=owner,
            slug=bench_peer.SCRATCH_SLUG,
            defaults={"name": bench_peer.SCRATCH_SLUG, "mode": Namespace.Mode.PERSONAL},
        )
        bench_corpus.clear_namespace(namespace)
        # CortexGraph 1.2.1 is configured for the power law by default, but its
        # calculate_score always takes the exponential branch (3-day half-life, beta 0.6),
        # which is Engram's default too; pinned here so DECAY_MODEL cannot change it.
        Namespace.objects.filter(pk=namespace.pk).update(decay_model="exponential")
        namespace.refresh_from_db()
        return namespace

    # --- Engram ----------------------------------------------------------------------

    def _engram_corpus(
        self, namespace: Namespace, items: list[dict[str, Any]], query_list: list[str]
    ) -> dict[str, Any]:
        from memories.services import memory_bulk_create
        from memories.sweep import sweep_run
        from recall.services import recall_run

        size = len(items)
        started = time.perf_counter()
        for start in range(0, size, LOAD_BATCH):
            memory_bulk_create(items=items[start : start + LOAD_BATCH], source="bench")
            done = min(size, start + LOAD_BATCH)
            if done % 5_000 == 0 or done == size:
                self._progress(f"  Engram: {done:,} / {size:,} loaded")
        load_seconds = time.perf_counter() - started
        bench_corpus.analyze()  # fresh planner statistics, as bench_corpus does (not timed)

        self._progress(f"  Engram: {len(query_list)} searches ...")

        def search(query: str):
            return recall_run(
                namespaces=[namespace],
                ceiling=Classification.RESTRICTED,
                query=query,
                limit=10,
                track=False,
            )

        for query in query_list[:WARMUP]:
            search(query)
        timings: list[float] = []
        results = 0
        distinct: set[int] = set()
        for query in query_list:
            t0 = time.perf_counter()
            result = search(query)
            timings.append((time.perf_counter() - t0) * 1000)
            results += len(result.results)
            distinct.update(hit.memory_id for hit in result.results)

        self._progress("  Engram: sweep dry run and sweep ...")
        t0 = time.perf_counter()
        dry = sweep_run(namespace=namespace, dry_run=True)
        dry_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        real = sweep_run(namespace=namespace)
        real_seconds = time.perf_counter() - t0
        return {
            "memories": size,
            "load_seconds": load_seconds,
            "load_rate": size / load_seconds,
            "queries": len(query_list),
            "search_ms": bench_peer.latency(timings),
            "results_per_query": results / len(query_list),
            "distinct_results": len(distinct),
            "decay_dry": {
                "seconds": dry_seconds,
                "changed": dry.forgotten,
                "examined": dry.examined,
                "report": _counts(dry),
            },
            "decay": {
                "seconds": real_seconds,
                "changed": real.forgotten,
                "examined": real.examined,
                "report": _counts(real),
            },
        }

    def _engram_locomo(
        self, name: str, conversations: int | None, ks: list[int], work: Path
    ) -> dict[str, Any]:
        path = Path(name)
        if not path.is_absolute() and not path.exists():
            path = Path(settings.BASE_DIR) / name
        out = work / "eval_recall.json"
        self._progress(f"  Engram: eval_recall {path} ...")
        options: dict[str, Any] = {"k": ",".join(map(str, ks)), "json_out": str(out)}
        if conversations:
            options["conversations"] = conversations
        call_command("eval_recall", str(path), stdout=StringIO(), **options)
        found = json.loads(out.read_text())
        return {
            "file": str(path),
            "conversations": found["conversations"],
            "memories": found["memories"],
            "questions": found["questions"],
            "recall": {int(k): v for k, v in found["recall"].items()},
            "by_category": found["by_category"],
            "latency_ms": found["latency_ms"],
            "configuration": found["configuration"],
        }

    # --- The peer --------------------------------------------------------------------

    def _peer_corpus(
        self, python: Path, items: list[dict[str, Any]], query_list: list[str], work: Path
    ) -> dict[str, Any]:
        job = {
            "mode": "corpus",
            "records": bench_peer.peer_records(items),
            "queries": query_list,
            "top_k": 10,
            "warmup": WARMUP,
        }
        self._progress(f"  {bench_peer.PEER_NAME}: loading {len(items):,} memories ...")
        answer = bench_peer.run_driver(python, job, work, self._progress)
        return {
            "version": f"cortexgraph {answer['cortexgraph_version']} (mcp {answer['mcp_version']})",
            "storage": "JSONL file, held in RAM",
            "python": answer["python"],
            "corpus": {
                "memories": answer["memories"],
                "load_seconds": answer["load_seconds"],
                "load_rate": answer["memories"] / answer["load_seconds"],
                "file_bytes": answer["file_bytes"],
                "cold_start_seconds": answer["cold_start_seconds"],
                "queries": len(query_list),
                "search_ms": bench_peer.latency(answer["search_ms"]),
                "results_per_query": answer["results_per_query"],
                "distinct_results": answer["distinct_results"],
                "decay_dry": {
                    "seconds": answer["gc_dry_seconds"],
                    "changed": answer["gc_dry_would_remove"],
                },
                "decay": {"seconds": answer["gc_seconds"], "changed": answer["gc_removed"]},
                "memories_after_gc": answer["memories_after_gc"],
            },
        }

    def _peer_locomo(
        self, python: Path, data: list[dict], ks: list[int], work: Path
    ) -> dict[str, Any]:
        questions: list[bench_peer.Question] = []
        returned: list[list[str]] = []
        wide: list[list[str]] = []
        recent: list[list[str]] = []
        latencies: list[float] = []
        memories = 0
        for index, conversation in enumerate(bench_peer.locomo_conversations(data)):
            if not conversation.questions:
                continue
            self._progress(
                f"  {bench_peer.PEER_NAME}: {conversation.sample_id}, "
                f"{len(conversation.turns)} turns, {len(conversation.questions)} questions ..."
            )
            job = {
                "mode": "eval",
                "turns": conversation.turns,
                "questions": [q.question for q in conversation.questions],
                "top_k": max(ks),
                "wide_top_k": WIDE_TOP_K,
            }
            # A fresh process and store per conversation: conversations stay separate.
            answer = bench_peer.run_driver(python, job, work / f"eval-{index}", self._progress)
            memories += answer["memories"]
            questions += conversation.questions
            for row in answer["answers"]:
                returned.append(row["returned"])
                wide.append(row["returned_wide"])
                recent.append(row["returned_recent"])
                latencies.append(row["ms"])
        if not questions:
            raise CommandError("no question of categories 1-4 with evidence in the file")
        scored = bench_peer.score_answers(questions, returned, ks)
        return {
            "memories": memories,
            "questions": scored["questions"],
            "recall": scored["recall"],
            "by_category": scored["by_category"],
            "wide_top_k": WIDE_TOP_K,
            "recall_wide": bench_peer.score_answers(questions, wide, ks)["recall"],
            "recall_recent": bench_peer.score_answers(questions, recent, ks)["recall"],
            "latency_ms": bench_peer.latency(latencies),
        }

    # --- Output ----------------------------------------------------------------------

    def _print(self, figures: dict[str, Any]) -> None:
        machine = figures["machine"]
        self.stdout.write(
            f"{machine['cores']} cores, {machine['memory_gib']} GiB, load "
            f"{machine['load_1min_at_start']} at start, Python {machine['python']}, "
            f"Django {machine['django']}, {machine['date']}"
        )
        rows = [bench_peer.Row(*row) for row in figures["rows"]]
        self.stdout.write(bench_peer.format_table(rows))


def _counts(report) -> dict[str, int]:
    return {
        name: getattr(report, name)
        for name in ("examined", "core", "promoted", "forgotten", "cold", "archived", "purged")
    }
