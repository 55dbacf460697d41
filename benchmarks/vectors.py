"""Se (recall.stages.embeddings.embedding_search) on a large namespace of synthetic vectors.

For `manage.py bench_vectors`. The namespace holds N memories whose vectors are drawn
around `clusters` random centres (unit centre + Gaussian noise of relative length
`noise`, optionally plus a direction shared by every vector, `offset`, as real embedding
models have), L2-normalised, with their sign codes. It is written with set-based inserts
(COPY on PostgreSQL) and kept between runs: the namespace's description stamps the
parameters, and an unchanged one is reused. Queries are drawn from the same distribution
with another seed.

Measured: embedding_search as the pipeline calls it (limit 3 x limit) over several runs;
recall of the two-step search against the exact one (the share of the exact top `limit`
found in the two-step top `limit`, and in its whole list, and how close the cosines it
returns are to the exact ones: where many memories are almost equally near, missing one
costs almost nothing); and the exact scan of every vector, which is what Se did before
the codes, for comparison.
"""

from __future__ import annotations

import json
import statistics
import time
from datetime import timedelta
from typing import Any, Protocol

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone
from django.utils.text import slugify

from benchmarks.stats import percentile
from config.db import is_postgres
from memories.bulk import insert_rows
from memories.models import Classification, Memory, Namespace
from recall.models import EmbeddingCode
from recall.stages.embeddings import embedding_search
from recall.stages.filters import RecallFilters
from recall.vectorcodes import sign_codes

BENCH_USER = "engram-bench"
MODEL = "bench-vectors-v1"
VERSION = 1
SEED = 17
CHUNK = 5_000


class Progress(Protocol):
    def __call__(self, text: str, ending: str = "\n") -> None: ...


def _vectors(rng, centres, shared, noise: float, count: int):
    """count unit vectors around random centres (and the labels of those centres)."""
    labels = rng.integers(0, len(centres), count)
    offsets = rng.standard_normal((count, centres.shape[1])).astype(np.float32)
    offsets *= noise / np.linalg.norm(offsets, axis=1, keepdims=True)
    vectors = centres[labels] + offsets + shared
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32), labels


def _distribution(dim: int, clusters: int, offset: float):
    rng = np.random.default_rng(SEED)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    shared = rng.standard_normal(dim).astype(np.float32)
    shared *= offset / np.linalg.norm(shared)
    return centres, shared


# --- The corpus ------------------------------------------------------------------------


def corpus(stamp: dict, *, rebuild: bool, progress: Progress) -> tuple[Namespace, str]:
    """The namespace for `stamp` (size, dim, clusters, noise, offset) and "reused" or
    "built in N s"."""
    owner, _ = get_user_model().objects.get_or_create(username=BENCH_USER)
    slug = slugify(
        f"bench-vectors-{stamp['size']}-{stamp['dim']}-{stamp['clusters']}-"
        f"{stamp['noise']}-{stamp['offset']}".replace(".", "_")
    )
    namespace, _ = Namespace.objects.get_or_create(
        owner=owner, slug=slug, defaults={"name": slug, "mode": Namespace.Mode.PERSONAL}
    )
    try:
        current = json.loads(namespace.description or "{}")
    except ValueError:
        current = {}
    if current == stamp and not rebuild:
        return namespace, "reused"
    started = time.perf_counter()
    _build(namespace, stamp, progress)
    Namespace.objects.filter(pk=namespace.pk).update(description=json.dumps(stamp))
    with connection.cursor() as cursor:
        if is_postgres() and not connection.in_atomic_block:
            cursor.execute("VACUUM ANALYZE memories_memory")
            cursor.execute("VACUUM ANALYZE recall_embeddingcode")
        else:
            cursor.execute("ANALYZE")
    return namespace, f"built in {time.perf_counter() - started:.1f} s"


def _build(namespace: Namespace, stamp: dict, progress: Progress) -> None:
    centres, shared = _distribution(stamp["dim"], stamp["clusters"], stamp["offset"])
    rng = np.random.default_rng(SEED + 2)
    now = timezone.now()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM recall_embeddingcode WHERE namespace_id = %s", [namespace.pk]
            )
            cursor.execute(
                "DELETE FROM memories_memorysketch WHERE namespace_id = %s", [namespace.pk]
            )
            cursor.execute("DELETE FROM memories_memory WHERE namespace_id = %s", [namespace.pk])
        Namespace.objects.filter(pk=namespace.pk).update(description="")
        for start in range(0, stamp["size"], CHUNK):
            count = min(CHUNK, stamp["size"] - start)
            vectors, labels = _vectors(rng, centres, shared, stamp["noise"], count)
            blobs = [vector.tobytes() for vector in vectors]
            rows = []
            for i in range(count):
                text = f"bench vector {start + i} of cluster {labels[i]}"
                created = now - timedelta(seconds=stamp["size"] - start - i)
                rows.append((namespace.pk, text, text, created, blobs[i], MODEL))
            new_ids = insert_rows(
                Memory,
                [
                    "namespace_id",
                    "content",
                    "search_text",
                    "created_at",
                    "embedding",
                    "embedding_model",
                ],
                rows,
                ids=True,
            )
            codes = sign_codes(blobs)
            insert_rows(
                EmbeddingCode,
                ["memory", "namespace", "model", "code"],
                [
                    (memory_id, namespace.pk, MODEL, code)
                    for memory_id, code in zip(new_ids, codes, strict=True)
                ],
            )
            progress(f"  {start + count:,} written", ending="\r")
    progress("")


# --- The measurement -------------------------------------------------------------------


def measure(
    namespace: Namespace,
    stamp: dict,
    *,
    queries: int,
    runs: int,
    limit: int,
    rerank: int,
    exact_queries: int,
    progress: Progress,
) -> dict[str, Any]:
    """Time the two-step search (a line per run through progress), score it against the
    exact top `limit`, and time the exact scan on the first `exact_queries` queries."""
    centres, shared = _distribution(stamp["dim"], stamp["clusters"], stamp["offset"])
    rng = np.random.default_rng(SEED + 1)
    query_vectors, _ = _vectors(rng, centres, shared, stamp["noise"], queries)
    filters = RecallFilters(
        namespace_ids=(namespace.pk,), ceiling=Classification.RESTRICTED, now=timezone.now()
    )
    se_limit = 3 * limit  # what the pipeline asks Se for

    ids, matrix = _all_vectors(namespace)
    exact = []
    exact_cosine = []  # mean cosine of the exact top `limit`, per query
    for query in query_vectors:
        scores = matrix @ query
        top = np.argsort(-scores, kind="stable")[:limit]
        exact.append([int(ids[i]) for i in top])
        exact_cosine.append(float(scores[top].mean()))

    embedding_search(query_vectors[0], filters, model=MODEL, threshold=-1.0, limit=se_limit)
    p50s, p95s = [], []
    found_top, found_list, cosine_ratio = [], [], []
    for run in range(runs):
        times = []
        for index, query in enumerate(query_vectors):
            started = time.perf_counter()
            hits = embedding_search(
                query, filters, model=MODEL, threshold=-1.0, limit=se_limit, rerank=rerank
            )
            times.append((time.perf_counter() - started) * 1000)
            if run == 0:
                got = [memory_id for memory_id, _ in hits]
                truth = set(exact[index])
                found_top.append(len(truth & set(got[:limit])) / len(truth))
                found_list.append(len(truth & set(got)) / len(truth))
                mean_cosine = statistics.mean(score for _, score in hits[:limit])
                cosine_ratio.append(mean_cosine / exact_cosine[index])
        p50s.append(percentile(times, 0.5))
        p95s.append(percentile(times, 0.95))
        progress(f"  run {run + 1}: p50 {p50s[-1]:.1f} ms, p95 {p95s[-1]:.1f} ms")

    exact_times = []
    for query in query_vectors[:exact_queries]:
        started = time.perf_counter()
        _exact_scan(query, filters, se_limit)
        exact_times.append((time.perf_counter() - started) * 1000)
    return {
        "queries": len(query_vectors),
        "vectors": len(ids),
        "se_limit": se_limit,
        "kept": rerank * se_limit,
        "p50_ms": statistics.median(p50s),
        "p95_ms": statistics.median(p95s),
        "found_top": statistics.mean(found_top),
        "found_list": statistics.mean(found_list),
        "worst_found_top": min(found_top),
        "cosine_ratio": statistics.mean(cosine_ratio),
        "exact_queries": len(exact_times),
        "exact_p50_ms": percentile(exact_times, 0.5),
        "exact_p95_ms": percentile(exact_times, 0.95),
    }


def _all_vectors(namespace: Namespace):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, embedding FROM memories_memory WHERE namespace_id = %s "
            "AND embedding_model = %s ORDER BY id",
            [namespace.pk, MODEL],
        )
        rows = cursor.fetchall()
    ids = np.array([memory_id for memory_id, _ in rows], dtype=np.int64)
    matrix = np.frombuffer(b"".join(bytes(blob) for _, blob in rows), dtype=np.float32)
    return ids, matrix.reshape(len(rows), -1)


def _exact_scan(query, filters: RecallFilters, limit: int) -> list[tuple[int, float]]:
    """What Se did before the codes: every filtered vector read and compared."""
    where, params = filters.sql("m")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, m.embedding FROM memories_memory m "
            f"WHERE m.embedding IS NOT NULL AND m.embedding_model = %s AND {where}",
            [MODEL, *params],
        )
        rows = cursor.fetchall()
    matrix = np.frombuffer(b"".join(bytes(blob) for _, blob in rows), dtype=np.float32)
    scores = matrix.reshape(len(rows), -1) @ query
    order = np.argsort(-scores)[:limit]
    return [(rows[i][0], float(scores[i])) for i in order]
