"""The about-to-forget digest's query on one namespace of N memories, for
`manage.py bench_forgetting`.

The namespace (`bench-forgetting` of the corpus's user) is written by the corpus loader
(benchmarks.corpus: the product's memories_insert, memories as an agent writes them, with
created_at spread over 180 days and so last used then) and kept for the next run with its
epoch, the `now` every figure is taken at. Two states are timed:

- as written: every memory active and short-term, most of them long under the forget
  threshold (nothing has swept them), so the statement scores all N and lists nearly all;
- after the product's decay sweep at the epoch (the steady state of a worker that sweeps
  every 15 minutes): what is left active and short-term is what was used lately.

Figures per state: the digest page's selector (count + the 100 soonest with their exact
moment), the home page's count (limit 0) and the daily webhook's statement (every id).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection

from benchmarks import corpus
from config.db import is_postgres, vendor
from memories.auth import Scope
from memories.models import Memory, Namespace
from memories.selectors import about_to_forget, about_to_forget_ids
from memories.sweep import sweep_run

SLUG = "bench-forgetting"
SEED = corpus.SEED + 19
Progress = Callable[[str], None]


def dataset(size: int, *, rebuild: bool, progress: Progress) -> tuple[Namespace, dict[str, Any]]:
    """The namespace of `size` memories and its stamp (epoch, size, swept), built now
    unless an equal one is kept."""
    namespace = corpus._namespace(SLUG)
    stamp = corpus._stamp(namespace)
    have = Memory.objects.filter(namespace=namespace).count()
    if not rebuild and stamp.get("size") == size and have == size:
        return namespace, stamp
    progress(f"  forgetting: clearing {SLUG} ...")
    started = time.perf_counter()
    now = corpus.refill_namespace(namespace, size, seed=SEED, progress=progress)
    stamp = {"size": size, "epoch": now.isoformat(), "swept": False}
    stamp["build_seconds"] = round(time.perf_counter() - started, 1)
    _save(namespace, stamp)
    progress("  forgetting: analyze ...")
    corpus.analyze()
    return namespace, stamp


def _save(namespace: Namespace, stamp: dict[str, Any]) -> None:
    Namespace.objects.filter(pk=namespace.pk).update(description=json.dumps(stamp))


def _timed(work: Callable[[], Any], runs: int) -> tuple[list[float], Any]:
    result = work()  # warm-up
    timings = []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = work()
        timings.append((time.perf_counter() - t0) * 1000)
    return timings, result


def _ms(timings: list[float]) -> dict[str, float]:
    ordered = sorted(timings)
    return {
        "median_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 1),
        "min_ms": round(ordered[0], 1),
    }


def measure(namespace: Namespace, now: datetime, runs: int) -> dict[str, Any]:
    """The three figures at `now`, with the counts they saw."""
    scope = Scope(user=namespace.owner, token=None)
    days = settings.FORGET_DIGEST_DAYS
    page, digest = _timed(
        lambda: about_to_forget(scope=scope, now=now, days=days, namespace=namespace), runs
    )
    count, counted = _timed(
        lambda: about_to_forget(scope=scope, now=now, days=days, namespace=namespace, limit=0),
        runs,
    )
    ids, every = _timed(lambda: about_to_forget_ids(namespace=namespace, now=now, days=days), runs)
    short_term = Memory.objects.filter(
        namespace=namespace, status=Memory.Status.ACTIVE, tier=Memory.Tier.SHORT_TERM
    ).count()
    assert counted.count == digest.count == len(every)
    return {
        "active_short_term": short_term,
        "in_digest": digest.count,
        "page (count + 100 soonest)": _ms(page),
        "home count (limit 0)": _ms(count),
        "webhook ids (all)": _ms(ids),
    }


def sweep(namespace: Namespace, stamp: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """The product's decay sweep at the epoch, once (what a running worker would leave)."""
    progress("  forgetting: decay sweep at the epoch ...")
    report = sweep_run(namespace=namespace, now=datetime.fromisoformat(stamp["epoch"]))
    stamp["swept"] = True
    _save(namespace, stamp)
    corpus.analyze()
    return report.counts()


def explain(namespace: Namespace, now: datetime) -> str:
    """The plan of the page's statement (PostgreSQL: EXPLAIN ANALYZE, BUFFERS)."""
    captured: list[tuple[str, Any]] = []
    scope = Scope(user=namespace.owner, token=None)

    def wrapper(run, sql, params, many, context):
        captured.append((sql, params))
        return run(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        about_to_forget(
            scope=scope, now=now, days=settings.FORGET_DIGEST_DAYS, namespace=namespace, limit=0
        )
    sql, params = next((s, p) for s, p in captured if "scored" in s)
    prefix = "EXPLAIN (ANALYZE, BUFFERS) " if is_postgres() else "EXPLAIN QUERY PLAN "
    with connection.cursor() as cursor:
        cursor.execute(prefix + sql, params)
        return "\n".join(" ".join(str(c) for c in row) for row in cursor.fetchall())


def run(size: int, *, runs: int, rebuild: bool, plan: bool, progress: Progress) -> dict[str, Any]:
    """Build or reuse the namespace, time it as written (once, before its sweep) and swept."""
    namespace, stamp = dataset(size, rebuild=rebuild, progress=progress)
    now = datetime.fromisoformat(stamp["epoch"])
    figures: dict[str, Any] = {
        "vendor": vendor(),
        "memories": size,
        "build_seconds": stamp.get("build_seconds"),
        "runs": runs,
    }
    if not stamp.get("swept"):
        progress("  forgetting: timing the namespace as written ...")
        figures["as written"] = measure(namespace, now, runs)
        if plan:
            figures["plan as written"] = explain(namespace, now)
        figures["sweep"] = sweep(namespace, stamp, progress)
    progress("  forgetting: timing the swept namespace ...")
    figures["swept"] = measure(namespace, now, runs)
    if plan:
        figures["plan swept"] = explain(namespace, now)
    return figures
