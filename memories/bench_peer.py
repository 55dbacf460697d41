"""Side-by-side comparison with a peer memory system (CortexGraph), for `manage.py bench_peer`.

Everything here runs in Engram's process and never imports the peer: the peer runs in
its own virtualenv (created and reused by ensure_peer_venv) through our driver script
memories/peer_driver/cortexgraph_driver.py, which gets a job as JSON and answers with
JSON. This module builds the shared inputs (the corpus texts, the queries, the LoCoMo
turns and questions), scores recall@k, and lays out the table.
"""

from __future__ import annotations

import collections
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memories import bench_corpus

PEER_NAME = "CortexGraph"
PEER_VERSION = "1.2.1"
# cortexgraph 1.2.1 asks for mcp>=1.2.0 without an upper bound, but imports
# mcp.server.fastmcp, which mcp 2.x removed: without the pin it does not import.
PEER_REQUIREMENTS = (f"cortexgraph=={PEER_VERSION}", "mcp<2")
DRIVER = Path(__file__).resolve().parent / "peer_driver" / "cortexgraph_driver.py"
SCRATCH_SLUG = "bench-peer"
QUERY_SEED = bench_corpus.QUERY_SEED
MIN_STRENGTH, MAX_STRENGTH = 1.0, 2.0  # CortexGraph's save_memory accepts only 1.0-2.0
Progress = Callable[[str], None]


# --- Shared inputs ---------------------------------------------------------------------


def corpus_items(namespace: Any, size: int, now: datetime) -> list[dict[str, Any]]:
    """`size` create arguments for Engram: bench_corpus's texts, from its seed.

    The texts, keywords, topics and creation dates are those of memory_items with
    random.Random(bench_corpus.SEED); two things are adjusted so both systems hold the
    same data: creation dates are whole seconds (CortexGraph keeps Unix seconds) and
    strengths are clamped to CortexGraph's range 1.0-2.0.
    """
    rng = random.Random(bench_corpus.SEED)
    items = bench_corpus.memory_items(namespace, bench_corpus.vocabulary(), rng, size, now)
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
    """bench.py's recall queries (bench_corpus.queries), so the two benchmarks ask the same."""
    return bench_corpus.queries(count, seed)


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
    from recall.management.commands.eval_recall import (
        CATEGORIES,
        evidence_ids,
        sessions,
        turn_content,
    )

    base = datetime(2000, 1, 1, tzinfo=UTC)
    found = []
    for item in data:
        conversation = Conversation(sample_id=str(item.get("sample_id") or "conversation"))
        for index, (_number, date, turns) in enumerate(sessions(item.get("conversation") or {})):
            start = date or base + timedelta(days=index)
            for position, turn in enumerate(turns):
                if not str(turn.get("text", "")).strip():
                    continue
                speaker = str(turn.get("speaker", "")).strip()
                conversation.turns.append(
                    {
                        "content": turn_content(turn, captions=False),
                        "tags": [peer_tag(speaker)] if peer_tag(speaker) else [],
                        "last_used": int((start + timedelta(seconds=position)).timestamp()),
                        "dia_id": str(turn.get("dia_id", "")),
                    }
                )
        for qa in item.get("qa") or []:
            category = qa.get("category")
            evidence = evidence_ids(qa.get("evidence"))
            if category in CATEGORIES and evidence and qa.get("question"):
                conversation.questions.append(
                    Question(category=category, question=str(qa["question"]), evidence=evidence)
                )
        found.append(conversation)
    return found


# --- recall@k --------------------------------------------------------------------------


def recall_at_k(returned: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Share of the evidence turns among the first k results (eval_recall's definition)."""
    top = set(returned[:k])
    return sum(1 for e in evidence if e in top) / len(evidence)


def score_answers(
    questions: Sequence[Question], returned: Sequence[Sequence[str]], ks: Sequence[int]
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
            share = recall_at_k(results, question.evidence, k)
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


# --- The peer's virtualenv and driver --------------------------------------------------


def _peer_versions(python: Path) -> dict[str, str] | None:
    """Installed cortexgraph and mcp versions in a venv, or None when missing."""
    probe = (
        "import json; from importlib.metadata import version as v; "
        "print(json.dumps({'cortexgraph': v('cortexgraph'), 'mcp': v('mcp')}))"
    )
    try:
        done = subprocess.run(
            [str(python), "-c", probe], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError:
        return None
    if done.returncode != 0:
        return None
    return json.loads(done.stdout)


def _usable(versions: dict[str, str] | None) -> bool:
    return bool(
        versions
        and versions.get("cortexgraph") == PEER_VERSION
        and versions.get("mcp", "2").split(".")[0] in {"0", "1"}
    )


def ensure_peer_venv(venv: Path, progress: Progress) -> Path:
    """The peer venv's python: reused when it has the pinned packages, else created.

    `python3.11 -m venv` then pip install of PEER_REQUIREMENTS from the configured
    package index; nothing else is fetched.
    """
    python = venv / "bin" / "python"
    if python.exists() and _usable(_peer_versions(python)):
        return python
    if not python.exists():
        base = shutil.which("python3.11") or sys.executable
        progress(f"  peer: creating {venv} with {base} -m venv ...")
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
    progress(f"  peer: pip install {' '.join(PEER_REQUIREMENTS)} ...")
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-qq",
            "--disable-pip-version-check",
            *PEER_REQUIREMENTS,
        ],
        check=True,
    )
    versions = _peer_versions(python)
    if not _usable(versions):
        raise RuntimeError(f"{venv}: expected cortexgraph {PEER_VERSION} and mcp<2, got {versions}")
    return python


def driver_env(workdir: Path) -> dict[str, str]:
    """A small environment that keeps CortexGraph's store and config inside workdir."""
    config = workdir / "config"
    (config / "cortexgraph").mkdir(parents=True, exist_ok=True)
    # An empty .env: its absence only prints a warning; defaults apply either way.
    (config / "cortexgraph" / ".env").write_text("# bench_peer: CortexGraph defaults\n")
    (workdir / "home").mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(workdir / "home"),
        "XDG_CONFIG_HOME": str(config),
        "CORTEXGRAPH_STORAGE_PATH": str(workdir / "store"),
        "CORTEXGRAPH_ENABLE_EMBEDDINGS": "false",
        "GIT_AUTO_COMMIT": "false",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def run_driver(python: Path, job: dict[str, Any], workdir: Path, progress: Progress) -> dict:
    """Run one job through the driver in a fresh work directory; its JSON answer."""
    workdir.mkdir(parents=True, exist_ok=True)
    job_file, result_file = workdir / "job.json", workdir / "result.json"
    job_file.write_text(json.dumps(job))
    process = subprocess.Popen(
        [str(python), str(DRIVER), str(job_file), str(result_file)],
        cwd=workdir,  # CortexGraph also reads ./.env
        env=driver_env(workdir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    tail: collections.deque[str] = collections.deque(maxlen=20)
    assert process.stderr is not None
    for line in process.stderr:
        tail.append(line.rstrip())
        progress(tail[-1])
    if process.wait() != 0:
        raise RuntimeError(f"the {PEER_NAME} driver failed:\n" + "\n".join(tail))
    return json.loads(result_file.read_text())


# --- The table -------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    figure: str
    engram: str
    peer: str
    ratio: str = ""


def ratio(engram: float | None, peer: float | None) -> str:
    """Engram / peer, or n/a when either is missing or the peer's is zero."""
    if engram is None or peer is None or peer == 0:
        return "n/a"
    return f"{engram / peer:.2f}"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def latency(values: Sequence[float]) -> dict[str, float]:
    from recall.management.commands.eval_recall import percentile

    return {"p50": percentile(list(values), 0.5), "p95": percentile(list(values), 0.95)}


def table_rows(figures: dict[str, Any]) -> list[Row]:
    """The rows of the printed table from the JSON figures (either side may be absent)."""
    rows: list[Row] = []
    engram, peer = figures.get("engram") or {}, figures.get("peer") or {}
    rows.append(Row("version", engram.get("version", "-"), peer.get("version", "-")))
    rows.append(Row("storage", engram.get("storage", "-"), peer.get("storage", "-")))
    e, p = engram.get("corpus") or {}, peer.get("corpus") or {}
    if e or p:
        size = e.get("memories") or p.get("memories") or 0
        rows.append(
            Row(
                f"load {size:,} memories, s",
                _num(e.get("load_seconds")),
                _num(p.get("load_seconds")),
                ratio(e.get("load_seconds"), p.get("load_seconds")),
            )
        )
        rows.append(
            Row(
                "load rate, memories/s",
                _num(e.get("load_rate"), 0),
                _num(p.get("load_rate"), 0),
                ratio(e.get("load_rate"), p.get("load_rate")),
            )
        )
        if p.get("cold_start_seconds") is not None:
            rows.append(
                Row("peer cold start (read JSONL), s", "-", _num(p["cold_start_seconds"], 2))
            )
        n = e.get("queries") or p.get("queries") or 0
        for q in ("p50", "p95"):
            ev, pv = (e.get("search_ms") or {}).get(q), (p.get("search_ms") or {}).get(q)
            rows.append(
                Row(f"search {q} ({n} queries, k=10), ms", _num(ev), _num(pv), ratio(ev, pv))
            )
        rows.append(
            Row(
                "results per query (mean) / distinct memories returned",
                _pair(e.get("results_per_query"), e.get("distinct_results")),
                _pair(p.get("results_per_query"), p.get("distinct_results")),
            )
        )
        for key, label in (
            ("decay_dry", "decay pass, dry run (Engram sweep / peer gc), s"),
            ("decay", "decay pass, writing, s"),
        ):
            ev, pv = (e.get(key) or {}).get("seconds"), (p.get(key) or {}).get("seconds")
            rows.append(Row(label, _num(ev, 3), _num(pv, 3), ratio(ev, pv)))
            rows.append(
                Row(
                    "  memories forgotten / removed",
                    _int((e.get(key) or {}).get("changed")),
                    _int((p.get(key) or {}).get("changed")),
                )
            )
    e, p = engram.get("locomo") or {}, peer.get("locomo") or {}
    if e or p:
        ks = sorted(int(k) for k in (e.get("recall") or p.get("recall") or {}))
        questions = e.get("questions") or p.get("questions") or 0
        for k in ks:
            ev, pv = _at(e.get("recall"), k), _at(p.get("recall"), k)
            rows.append(
                Row(
                    f"LoCoMo recall@{k} ({questions} questions)",
                    _num(ev, 3),
                    _num(pv, 3),
                    ratio(ev, pv),
                )
            )
        for key, label in (
            ("recall_wide", "peer, top_k={n} cut to {k}"),
            ("recall_recent", "peer, turns saved just now, top_k={n} cut to {k}"),
        ):
            for k in ks if p.get(key) else ():
                text = label.format(n=p.get("wide_top_k"), k=k)
                rows.append(Row(f"  recall@{k}: {text}", "-", _num(_at(p[key], k), 3)))
        ev, pv = (e.get("latency_ms") or {}).get("p50"), (p.get("latency_ms") or {}).get("p50")
        rows.append(Row("LoCoMo search p50, ms", _num(ev), _num(pv), ratio(ev, pv)))
    return rows


def _at(mapping: dict | None, k: int) -> float | None:
    if not mapping:
        return None
    value = mapping.get(k, mapping.get(str(k)))
    return None if value is None else float(value)


def _int(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _pair(a: float | None, b: int | None) -> str:
    return "-" if a is None else f"{a:.1f} / {b:,}"


def format_table(rows: Sequence[Row], peer: str = PEER_NAME) -> str:
    header = Row("figure", "Engram", peer, f"Engram / {peer}")
    cells = [header, *rows]
    widths = [max(len(getattr(r, name)) for r in cells) for name in Row.__dataclass_fields__]
    lines = []
    for index, row in enumerate(cells):
        parts = [
            row.figure.ljust(widths[0]),
            row.engram.rjust(widths[1]),
            row.peer.rjust(widths[2]),
            row.ratio.rjust(widths[3]),
        ]
        lines.append("  ".join(parts).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
