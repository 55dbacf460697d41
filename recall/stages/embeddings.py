"""Stage Se of seed 002: memories by cosine similarity of their embedding to the query's.

Two steps, both in SQL for the filters: the sign codes of the stored vectors
(recall.vectorcodes) ranked by Hamming distance to the query's code, then the best of
them re-ranked exactly by cosine from their float32 vectors. The query's own embedding is
computed by recall.embeddings (the pipeline starts it early, in a thread).
"""

from __future__ import annotations

import numpy as np
from django.db import connection

from config.db import is_postgres
from recall import vectorcodes
from recall.stages.filters import RecallFilters
from recall.stages.sql import in_list

# Step 1 filters the best PREFILTER x keep codes of the namespace before falling back to
# ranking only the filtered ones: at 4, the usual filters (live, hot, unexpired, within
# the ceiling) would have to hide three memories in four to force the fallback.
PREFILTER = 4
# Most vectors re-ranked by cosine (1.5 kB each read), whatever the limit: 900 for the
# usual limit of 10 (Se is asked for 30) at RECALL_VECTOR_RERANK = 30.
RERANK_CAP = 3_000


def embedding_search(
    vector,
    filters: RecallFilters,
    *,
    model: str,
    threshold: float,
    limit: int,
    rerank: int = 30,
) -> list[tuple[int, float]]:
    """Cosine similarity of the query vector to the namespace's stored vectors, in two steps.

    1. The sign codes of the filtered memories' vectors (recall.vectorcodes) are ranked by
       Hamming distance to the query's code, in SQL, and the best `rerank x limit` kept
       (at most RERANK_CAP rows, or limit if more);
    2. those are re-ranked exactly by cosine from their float32 vectors.

    Returns (id, cosine) best first, at most limit, at or above threshold. Step 1 first
    ranks the namespace's codes alone (a narrow table) and applies the filters to the best
    PREFILTER times as many as it keeps; when fewer pass, it ranks the filtered codes
    (a join per memory: slower, same result). Either way the filters are in SQL, so nothing
    outside them is read. Only vectors of `model` (and of the query's length) are compared.
    """
    query = np.asarray(vector, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(query))
    if norm == 0 or limit <= 0:
        return []
    query = query / norm
    code = vectorcodes.sign_code(query)
    keep = max(limit, min(rerank * limit, RERANK_CAP))
    rows = _nearest_codes(code, filters, model=model, keep=keep, prefilter=PREFILTER * keep)
    if len(rows) < keep:
        rows = _nearest_codes(code, filters, model=model, keep=keep, prefilter=None)
    dim = query.shape[0]
    ids = []
    blobs = []
    for memory_id, blob in rows:
        data = bytes(blob)
        if len(data) == 4 * dim:
            ids.append(memory_id)
            blobs.append(data)
    if not ids:
        return []
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), dim)
    scores = matrix @ query
    order = np.argsort(-scores, kind="stable")[:limit]
    return [(ids[i], float(scores[i])) for i in order if scores[i] >= threshold]


def _nearest_codes(
    code: bytes, filters: RecallFilters, *, model: str, keep: int, prefilter: int | None
) -> list[tuple[int, bytes]]:
    """(id, vector bytes) of the `keep` filtered memories whose codes are nearest `code`.

    With `prefilter`, only the nearest `prefilter` codes of the namespaces (no join) are
    looked up in memories_memory; without, every filtered memory's code is ranked.
    """
    where, params = filters.sql("m")
    namespaces, namespace_params = in_list("c.namespace_id", filters.namespace_ids)
    if is_postgres():
        distance = "bit_count(c.code # %s::varbit)"
        distance_params = [vectorcodes.query_code_bits(code)]
        length_sql, length = "bit_length(c.code)", 8 * len(code)
    else:
        vectorcodes.register_sqlite_distance(code)
        distance = "engram_code_distance(c.code)"
        distance_params = []
        length_sql, length = "length(c.code)", len(code)
    codes_where = f"{namespaces} AND c.model = %s AND {length_sql} = %s"
    memory_where = f"m.embedding IS NOT NULL AND m.embedding_model = %s AND {where}"
    codes_params = [*namespace_params, model, length]
    if prefilter is not None:
        sql = (
            "SELECT n.memory_id, m.embedding FROM ("
            f"SELECT c.memory_id, {distance} AS distance FROM recall_embeddingcode c "
            f"WHERE {codes_where} ORDER BY distance, c.memory_id DESC LIMIT %s) n "
            f"JOIN memories_memory m ON m.id = n.memory_id WHERE {memory_where} "
            "ORDER BY n.distance, n.memory_id DESC LIMIT %s"
        )
        all_params = [*distance_params, *codes_params, prefilter, model, *params, keep]
    else:
        sql = (
            f"SELECT c.memory_id, m.embedding FROM recall_embeddingcode c "
            f"JOIN memories_memory m ON m.id = c.memory_id "
            f"WHERE {codes_where} AND {memory_where} "
            f"ORDER BY {distance}, c.memory_id DESC LIMIT %s"
        )
        all_params = [*codes_params, model, *params, *distance_params, keep]
    with connection.cursor() as cursor:
        cursor.execute(sql, all_params)
        return cursor.fetchall()
