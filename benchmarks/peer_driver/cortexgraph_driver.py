"""Drive CortexGraph's public Python API for `manage.py bench_peer`, inside its own venv.

    <peer-venv>/bin/python cortexgraph_driver.py JOB.json RESULT.json

Our code, not CortexGraph's: it imports only the standard library and the installed
`cortexgraph` package, and calls the functions its MCP server exposes as tools
(save_memory, search_memory, gc) directly, in process, not over MCP. The store is
CortexGraph's default JSONL storage (the one its tools use); where it lives is set by
the caller through CORTEXGRAPH_STORAGE_PATH, which must be set before the first
cortexgraph import (its tool modules bind a global storage object at import time).

Jobs (JSON), answered with JSON:

- {"mode": "corpus", "records": [{"content", "tags", "strength", "last_used"}],
  "queries": [...], "top_k": 10, "warmup": 5}: save_memory for every record (timed),
  then update_memory(last_used=...) so the memories have the corpus's ages, compact,
  a cold start (a new storage object reading the JSONL), search_memory for each query
  (timed one by one), gc(dry_run=True), then gc(dry_run=False).
- {"mode": "eval", "turns": [{"content", "tags", "last_used", "dia_id"}],
  "questions": [...], "top_k": 10, "wide_top_k": 100}: one conversation in a fresh
  store; for each question the dia_ids of search_memory(top_k) and of
  search_memory(wide_top_k), in rank order, and the latency of the first; then, with
  every turn's last_used moved to "just now" in turn order, search_memory(wide_top_k)
  again.

Progress goes to stderr. Nothing here downloads anything: embeddings stay off (the
default; sentence-transformers is not installed) and without spaCy the entity
extractor uses its regular expressions.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ids_to_refs(results: list[dict[str, Any]], ref_of: dict[str, str]) -> list[str]:
    """The caller's reference (e.g. a dia_id) of each search result, in rank order."""
    return [ref_of.get(result.get("id", ""), "") for result in results]


def _tools():
    # Imported here, not at the top: cortexgraph is installed only in the peer's venv, and
    # Engram's tests import this module (ids_to_refs) without it.
    from cortexgraph.context import db
    from cortexgraph.tools.gc import gc
    from cortexgraph.tools.save import save_memory
    from cortexgraph.tools.search import search_memory

    db.connect()
    return db, save_memory, search_memory, gc


def _save_all(db, save_memory, records: list[dict[str, Any]], label: str) -> tuple[list, float]:
    """save_memory for each record (timed), then the recorded last_used (not timed)."""
    ids: list[str] = []
    started = time.perf_counter()
    for index, record in enumerate(records, 1):
        answer = save_memory(
            content=record["content"],
            tags=record.get("tags") or None,
            strength=record.get("strength"),
        )
        ids.append(answer["memory_id"])
        if index % 1000 == 0:
            progress(f"  {label}: {index:,} / {len(records):,} saved")
    seconds = time.perf_counter() - started
    for memory_id, record in zip(ids, records, strict=True):
        if record.get("last_used") is not None:
            db.update_memory(memory_id=memory_id, last_used=int(record["last_used"]))
    return ids, seconds


def run_corpus(job: dict[str, Any]) -> dict[str, Any]:
    db, save_memory, search_memory, gc = _tools()
    records = job["records"]
    top_k = int(job.get("top_k", 10))
    ids, load_seconds = _save_all(db, save_memory, records, "CortexGraph corpus")
    # update_memory appends a second line per memory; compact so the file holds one each.
    db.compact()
    file_bytes = db.memories_path.stat().st_size

    from cortexgraph.storage.jsonl_storage import JSONLStorage  # peer venv only (see _tools)

    started = time.perf_counter()
    cold = JSONLStorage(storage_path=db.storage_dir)
    cold.connect()
    cold_seconds = time.perf_counter() - started
    cold_count = cold.count_memories()
    cold.close()

    queries = job["queries"]
    progress(f"  CortexGraph: {len(queries)} searches ...")
    for query in queries[: int(job.get("warmup", 5))]:
        search_memory(query=query, top_k=top_k)
    latencies: list[float] = []
    results = 0
    distinct: set[str] = set()
    for query in queries:
        t0 = time.perf_counter()
        answer = search_memory(query=query, top_k=top_k)
        latencies.append((time.perf_counter() - t0) * 1000)
        results += answer["count"]
        distinct.update(result["id"] for result in answer["results"])

    progress("  CortexGraph: gc dry run and gc ...")
    t0 = time.perf_counter()
    dry = gc(dry_run=True)
    dry_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    real = gc(dry_run=False)
    real_seconds = time.perf_counter() - t0
    return {
        "memories": len(ids),
        "load_seconds": load_seconds,
        "file_bytes": file_bytes,
        "cold_start_seconds": cold_seconds,
        "cold_start_memories": cold_count,
        "search_ms": latencies,
        "results_per_query": results / max(1, len(queries)),
        "distinct_results": len(distinct),
        "gc_dry_seconds": dry_seconds,
        "gc_dry_would_remove": dry["total_affected"],
        "gc_seconds": real_seconds,
        "gc_removed": real["removed_count"],
        "memories_after_gc": db.count_memories(),
    }


def run_eval(job: dict[str, Any]) -> dict[str, Any]:
    db, save_memory, search_memory, _gc = _tools()
    turns = job["turns"]
    top_k = int(job.get("top_k", 10))
    wide = int(job.get("wide_top_k", 0))
    ids, load_seconds = _save_all(db, save_memory, turns, "CortexGraph turns")
    ref_of = {memory_id: turn["dia_id"] for memory_id, turn in zip(ids, turns, strict=True)}
    answers = []
    for question in job["questions"]:
        t0 = time.perf_counter()
        answer = search_memory(query=question, top_k=top_k)
        ms = (time.perf_counter() - t0) * 1000
        row = {"returned": ids_to_refs(answer["results"], ref_of), "ms": ms}
        if wide:
            wider = search_memory(query=question, top_k=wide)
            row["returned_wide"] = ids_to_refs(wider["results"], ref_of)
        answers.append(row)
    if wide:
        # The same turns as if an agent had just saved them live, one second apart in
        # turn order: decay no longer separates the sessions, so the ranking is the
        # text similarity within the 3 x top_k most recently used turns.
        now = int(time.time())
        for position, memory_id in enumerate(ids):
            db.update_memory(memory_id=memory_id, last_used=now - (len(ids) - 1 - position))
        for row, question in zip(answers, job["questions"], strict=True):
            recent = search_memory(query=question, top_k=wide)
            row["returned_recent"] = ids_to_refs(recent["results"], ref_of)
    return {"memories": len(ids), "load_seconds": load_seconds, "answers": answers}


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        progress("usage: cortexgraph_driver.py JOB.json RESULT.json")
        return 2
    job = json.loads(Path(argv[1]).read_text())
    runner = {"corpus": run_corpus, "eval": run_eval}[job["mode"]]
    result = runner(job)
    result["cortexgraph_version"] = metadata.version("cortexgraph")
    result["mcp_version"] = metadata.version("mcp")
    result["python"] = platform.python_version()
    Path(argv[2]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
