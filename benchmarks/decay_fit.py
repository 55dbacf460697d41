"""Fitting one namespace's decay to its uses, for `manage.py bench_decay_fit`.

The namespace (`bench-decay-fit` of the corpus's user) is written once by the corpus loader
(benchmarks.corpus: memories as an agent writes them, created_at spread over 180 days) and
its uses by the product's recall tracking (memories.tracking.memories_track_recall, the
writer of every recall's uses and so of the use log), at times drawn from a known model
(memories.decay_fit.simulate: GENERATING, half-life 2 days, beta 0.3), up to TRACK_CHUNK
direct hits per call in time order, each recorded at most CHUNK_SECONDS late. Kept for the
next run with its epoch.

The figure is the worker's whole fit (memories.services.decay_fits.decay_fit_run: reading
the memories and the use log, the fit of the three models, the validation, the stored
row), its median over `runs`, and the process's peak resident memory.
"""

from __future__ import annotations

import json
import resource
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from django.db import connection

from benchmarks import corpus
from config.db import vendor
from memories import decay_fit
from memories.decay import DecayParams
from memories.models import DecayFit, Memory, MemoryUse, Namespace
from memories.services.decay_fits import decay_fit_run
from memories.tracking import memories_track_recall

SLUG = "bench-decay-fit"
SEED = corpus.SEED + 191
HISTORY_DAYS = 180
GENERATING = DecayParams(half_life_days=2.0, beta=0.3)
# Uses per second per unit of score: about ten uses per memory over the history (the process
# is near critical: 5e-6 gives 8.5 a memory, 6e-6 23), so 1,000,000 for 100,000 memories.
RATE = 5.2e-6
TRACK_CHUNK = 2_000
# A use is recorded at most this late (against a half-life of two days).
CHUNK_SECONDS = 1_800.0
Progress = Callable[[str], None]


def dataset(size: int, *, rebuild: bool, progress: Progress) -> tuple[Namespace, dict[str, Any]]:
    """The namespace of `size` memories and their uses, built now unless kept."""
    namespace = corpus._namespace(SLUG)
    stamp = corpus._stamp(namespace)
    have = Memory.objects.filter(namespace=namespace).count()
    if not rebuild and stamp.get("size") == size and have == size:
        return namespace, stamp
    progress(f"  decay fit: clearing {SLUG} ...")
    MemoryUse.objects.filter(namespace=namespace).delete()
    DecayFit.objects.filter(namespace=namespace).delete()
    started = time.perf_counter()
    now = corpus.refill_namespace(namespace, size, seed=SEED, progress=progress)
    written = _uses(namespace, size=size, now=now, progress=progress)
    stamp = {"size": size, "uses": written, "epoch": now.isoformat()}
    stamp["build_seconds"] = round(time.perf_counter() - started, 1)
    Namespace.objects.filter(pk=namespace.pk).update(description=json.dumps(stamp))
    corpus.analyze()
    return namespace, stamp


def _uses(namespace: Namespace, *, size: int, now: datetime, progress: Progress) -> int:
    """Draw the uses from GENERATING (each memory from its own created_at) and record them
    through recall tracking, in time order."""
    rows = list(
        Memory.objects.filter(namespace=namespace)
        .order_by("created_at")
        .values_list("id", "created_at")
    )
    ids = np.array([pk for pk, _ in rows], dtype=np.int64)
    created = np.array([at.timestamp() for _, at in rows])
    rng = np.random.default_rng(SEED)
    drawn = decay_fit.simulate(
        GENERATING, RATE, n_memories=size, days=HISTORY_DAYS, rng=rng, start_spread_days=170
    )
    # Simulated memory i is ours of the same rank by creation; its uses move with it.
    start = drawn["memory_start"]
    offset = created - start
    who = drawn["use_memory"]
    at = drawn["use_at"] + offset[who]
    keep = at < now.timestamp()
    who, at = who[keep], at[keep]
    order = np.argsort(at, kind="stable")
    who, at = who[order], at[order]
    written = 0
    for chunk in _chunks(ids[who], at):
        moment = datetime.fromtimestamp(float(at[chunk[-1]]), UTC)
        memories_track_recall(
            direct_ids=[int(pk) for pk in ids[who[chunk]]],
            associative_ids=[],
            now=moment,
        )
        written += len(chunk)
        if written // 50_000 != (written - len(chunk)) // 50_000:
            progress(f"  decay fit: {written:,} uses recorded ...")
    return written


def _chunks(memory_ids: np.ndarray, at: np.ndarray) -> list[list[int]]:
    """Consecutive uses (indices, in time order) recorded by one call: at most TRACK_CHUNK,
    within CHUNK_SECONDS (each is recorded at the chunk's last moment), each memory once."""
    chunks: list[list[int]] = []
    current: list[int] = []
    seen: set[int] = set()
    for index, (pk, moment) in enumerate(zip(memory_ids.tolist(), at.tolist(), strict=True)):
        if current and (
            len(current) >= TRACK_CHUNK or pk in seen or moment - at[current[0]] > CHUNK_SECONDS
        ):
            chunks.append(current)
            current, seen = [], set()
        current.append(index)
        seen.add(pk)
    if current:
        chunks.append(current)
    return chunks


def run(size: int, *, runs: int, rebuild: bool, progress: Progress) -> dict[str, Any]:
    namespace, stamp = dataset(size, rebuild=rebuild, progress=progress)
    now = datetime.fromisoformat(stamp["epoch"]) + timedelta(seconds=1)
    namespace = Namespace.objects.get(pk=namespace.pk)
    timings: list[float] = []
    fit = None
    for _ in range(runs):
        started = time.perf_counter()
        fit = decay_fit_run(namespace=namespace, now=now)
        timings.append(time.perf_counter() - started)
    assert fit is not None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM memories_memoryuse WHERE namespace_id = %s", [namespace.pk]
        )
        logged = cursor.fetchone()[0]
    return {
        "engine": vendor(),
        "memories": size,
        "uses_logged": logged,
        "generating": f"exponential, half-life {GENERATING.half_life_days} d, "
        f"beta {GENERATING.beta}",
        "fitted": f"{fit.model}, half-life {fit.half_life_days:.3f} d, beta {fit.beta:.3f}",
        "accepted": fit.accepted,
        "reason": fit.reason,
        "validation_loss": {
            "fitted": fit.validation_loss,
            "constants": fit.default_validation_loss,
        },
        "fit_seconds": {
            "median": round(statistics.median(timings), 2),
            "runs": [round(t, 2) for t in timings],
        },
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
