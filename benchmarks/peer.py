"""Side-by-side comparison with a peer memory system (CortexGraph), for `manage.py bench_peer`.

Everything here runs in Engram's process and never imports the peer: the peer runs in
its own virtualenv (created and reused by benchmarks.peer_venv) through our driver script
benchmarks/peer_driver/cortexgraph_driver.py, which gets a job as JSON and answers with
JSON. This module builds the shared inputs (the corpus texts, the queries, the LoCoMo
turns and questions), measures both systems on them and scores recall@k;
benchmarks.peer_table lays out the table.
"""

from __future__ import annotations

import collections
import os
import platform
import random
import statistics
import subprocess
import time
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import django
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.utils import timezone

from benchmarks import corpus, locomo, machine
from benchmarks.peer_venv import PEER_NAME, Progress, run_driver
from benchmarks.stats import percentile
from memories.models import Classification, Namespace
from memories.services import memory_bulk_create
from memories.sweep import sweep_run
from recall.pipeline import RecallConfig
from recall.services import recall_run

SCRATCH_SLUG = "bench-peer"
QUERY_SEED = corpus.QUERY_SEED
MIN_STRENGTH, MAX_STRENGTH = 1.0, 2.0  # CortexGraph's save_memory accepts only 1.0-2.0
DEFAULT_EVAL = "../shared/data/locomo-dev.json"
WIDE_TOP_K = 100  # search_memory's largest top_k
LOAD_BATCH = 1_000
WARMUP = 5


# --- Shared inputs ---------------------------------------------------------------------


def corpus_items(namespace: Any, size: int, now: datetime) -> list[dict[str, Any]]:
    """`size` create arguments for Engram: benchmarks.corpus's texts, from its seed.

    The texts, keywords, topics and creation dates are those of memory_items with
    random.Random(corpus.SEED); two things are adjusted so both systems hold the
    same data: creation dates are whole seconds (CortexGraph keeps Unix seconds) and
    strengths are clamped to CortexGraph's range 1.0-2.0.
    """
    rng = random.Random(corpus.SEED)
    items = corpus.memory_items(namespace, corpus.vocabulary(), rng, size, now)
    for item in items:
        item["created_at"] = item["created_at"].replace(microsecond=0)
        item["strength"] = min(MAX_STRENGTH, max(MIN_STRENGTH, item["strength"]))
    return items


def peer_tag(text: str) -> str:
    """A tag CortexGraph accepts: its validate_tag lower-cases and replaces spaces, then
    rejects any letter outside ASCII ("Chloé"), so accents are dropped here."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


def peer_records(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same memories for the peer: content, tags (topic + keywords), strength, age."""
    records = []
    for item in items:
        tags = list(dict.fromkeys(peer_tag(t) for t in [item["topic"], *item["keywords"]]))
        records.append(
            {
                "content": item["content"],
                "tags": tags,
                "strength": item["strength"],
                "last_used": int(item["created_at"].timestamp()),
            }
        )
    return records


def queries(count: int, seed: int = QUERY_SEED) -> list[str]:
    """bench's recall queries (corpus.queries), so the two benchmarks ask the same."""
    return corpus.queries(count, seed)


@dataclass(frozen=True)
class Question:
    category: int
    question: str
    evidence: list[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[dict[str, Any]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def locomo_conversations(data: Sequence[dict[str, Any]]) -> list[Conversation]:
    """Turns and questions of a LoCoMo file, by eval_recall's rules.

    One memory per non-empty turn, content "Speaker: text" (no captions), tagged with
    the speaker (eval_recall's keyword), used last at its session's date plus one second
    per turn (eval_recall's created_at); the questions of categories 1-4 with evidence.
    """
    base = datetime(2000, 1, 1, tzinfo=UTC)
    found = []
    for item in data:
        conversation = Conversation(sample_id=str(item.get("sample_id") or "conversation"))
        for index, (_number, date, turns) in enumerate(
            locomo.sessions(item.get("conversation") or {})
        ):
            start = date or base + timedelta(days=index)
            for position, turn in enumerate(turns):
                if not str(turn.get("text", "")).strip():
                    continue
                speaker = str(turn.get("speaker", "")).strip()
                conversation.turns.append(
                    {
                        "content": locomo.turn_content(turn, captions=False),
                        "tags": [peer_tag(speaker)] if peer_tag(speaker) else [],
                        "last_used": int((start + timedelta(seconds=position)).timestamp()),
                        "dia_id": locomo.dia_id(turn.get("dia_id")),
                    }
                )
        in_file = locomo.turn_ids(item.get("conversation") or {})
        for qa in item.get("qa") or []:
            category = qa.get("category")
            evidence, _ = locomo.scored_evidence(qa, in_file)
            if category in locomo.CATEGORIES and evidence and qa.get("question"):
                conversation.questions.append(
                    Question(category=category, question=str(qa["question"]), evidence=evidence)
                )
        found.append(conversation)
    return found


# --- recall@k and latency --------------------------------------------------------------


def score_answers(
    questions: Sequence[Question],
    returned: Sequence[Sequence[str | Sequence[str] | None]],
    ks: Sequence[int],
) -> dict[str, Any]:
    """recall@k overall and per category, averaged over questions (eval_recall's shape)."""
    if len(questions) != len(returned):
        raise ValueError("one list of results per question")
    overall: dict[int, list[float]] = collections.defaultdict(list)
    by_category: dict[int, dict[int, list[float]]] = collections.defaultdict(
        lambda: collections.defaultdict(list)
    )
    for question, results in zip(questions, returned, strict=True):
        for k in ks:
            share = locomo.recall_at_k(results, question.evidence, k)
            overall[k].append(share)
            by_category[question.category][k].append(share)
    return {
        "questions": len(questions),
        "recall": {k: statistics.fmean(overall[k]) if overall[k] else 0.0 for k in ks},
        "by_category": {
            c: {"questions": len(by_category[c][ks[0]])}
            | {k: statistics.fmean(by_category[c][k]) for k in ks}
            for c in sorted(by_category)
        },
    }


def latency(values: Sequence[float]) -> dict[str, float]:
    return {"p50": percentile(list(values), 0.5), "p95": percentile(list(values), 0.95)}


# --- The run: what it ran on ----------------------------------------------------------


def eval_path(name: str) -> Path:
    """The LoCoMo file: as given, or relative to the project when not found as given."""
    path = Path(name)
    if not path.is_absolute() and not path.exists():
        path = Path(settings.BASE_DIR) / name
    return path


def read_eval(name: str, conversations: int | None) -> list[dict]:
    return locomo.read_locomo(eval_path(name), conversations, hint=" (or pass --skip-eval)")


def machine_info() -> dict[str, Any]:
    memory = machine.memory_gib()
    return {
        "cores": os.cpu_count(),
        "memory_gib": None if memory is None else round(memory, 1),
        "load_1min_at_start": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "django": django.__version__,
        "date": timezone.now().isoformat(timespec="seconds"),
    }


def engram_info() -> dict[str, Any]:
    storage = machine.database_server()
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


def scratch_namespace() -> Namespace:
    """The empty scratch namespace, with the decay formula the peer applies."""
    owner, _ = get_user_model().objects.get_or_create(username=corpus.BENCH_USER)
    namespace, _ = Namespace.objects.get_or_create(
        owner=owner,
        slug=SCRATCH_SLUG,
        defaults={"name": SCRATCH_SLUG, "mode": Namespace.Mode.PERSONAL},
    )
    corpus.clear_namespace(namespace)
    # CortexGraph 1.2.1 is configured for the power law by default, but its
    # calculate_score always takes the exponential branch (3-day half-life, beta 0.6),
    # which is Engram's default too; pinned here so DECAY_MODEL cannot change it.
    Namespace.objects.filter(pk=namespace.pk).update(decay_model="exponential")
    namespace.refresh_from_db()
    return namespace


# --- The run: Engram -------------------------------------------------------------------


def engram_corpus(
    namespace: Namespace, items: list[dict[str, Any]], query_list: list[str], progress: Progress
) -> dict[str, Any]:
    """Load the items through memory_bulk_create, search, sweep (dry, then writing)."""
    size = len(items)
    started = time.perf_counter()
    for start in range(0, size, LOAD_BATCH):
        memory_bulk_create(items=items[start : start + LOAD_BATCH], source="bench")
        done = min(size, start + LOAD_BATCH)
        if done % 5_000 == 0 or done == size:
            progress(f"  Engram: {done:,} / {size:,} loaded")
    load_seconds = time.perf_counter() - started
    corpus.analyze()  # fresh planner statistics, as the bench corpus does (not timed)

    progress(f"  Engram: {len(query_list)} searches ...")

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

    progress("  Engram: sweep dry run and sweep ...")
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
        "search_ms": latency(timings),
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


def _counts(report) -> dict[str, int]:
    return {
        name: getattr(report, name)
        for name in ("examined", "core", "promoted", "forgotten", "cold", "archived", "purged")
    }


def engram_locomo(
    name: str, conversations: int | None, ks: list[int], progress: Progress
) -> dict[str, Any]:
    """eval_recall's figures with its default options (benchmarks.locomo.evaluate)."""
    path = eval_path(name)
    progress(f"  Engram: eval_recall {path} ...")
    data = locomo.read_locomo(path, conversations)
    found = locomo.evaluate(data, file=str(path), ks=ks, config=RecallConfig.from_settings())
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


# --- The run: the peer -----------------------------------------------------------------


def peer_corpus(
    python: Path,
    items: list[dict[str, Any]],
    query_list: list[str],
    work: Path,
    progress: Progress,
) -> dict[str, Any]:
    """The same memories and queries through the driver's corpus job."""
    job = {
        "mode": "corpus",
        "records": peer_records(items),
        "queries": query_list,
        "top_k": 10,
        "warmup": WARMUP,
    }
    progress(f"  {PEER_NAME}: loading {len(items):,} memories ...")
    answer = run_driver(python, job, work, progress)
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
            "search_ms": latency(answer["search_ms"]),
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


def peer_locomo(
    python: Path, data: list[dict], ks: list[int], work: Path, progress: Progress
) -> dict[str, Any]:
    """recall@k of the peer on the LoCoMo conversations, one fresh store each."""
    questions: list[Question] = []
    returned: list[list[str]] = []
    wide: list[list[str]] = []
    recent: list[list[str]] = []
    latencies: list[float] = []
    memories = 0
    for index, conversation in enumerate(locomo_conversations(data)):
        if not conversation.questions:
            continue
        progress(
            f"  {PEER_NAME}: {conversation.sample_id}, "
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
        answer = run_driver(python, job, work / f"eval-{index}", progress)
        memories += answer["memories"]
        questions += conversation.questions
        for row in answer["answers"]:
            returned.append(row["returned"])
            wide.append(row["returned_wide"])
            recent.append(row["returned_recent"])
            latencies.append(row["ms"])
    if not questions:
        raise CommandError("no question of categories 1-4 with evidence in the file")
    scored = score_answers(questions, returned, ks)
    return {
        "memories": memories,
        "questions": scored["questions"],
        "recall": scored["recall"],
        "by_category": scored["by_category"],
        "wide_top_k": WIDE_TOP_K,
        "recall_wide": score_answers(questions, wide, ks)["recall"],
        "recall_recent": score_answers(questions, recent, ks)["recall"],
        "latency_ms": latency(latencies),
    }
