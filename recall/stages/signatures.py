"""Stage Ss of seed 002: near-duplicates of the query by 256-bit SimHash similarity.

PostgreSQL compares signatures in SQL (XOR and bit_count); SQLite through a registered
function. Both scan only the newest filtered rows (see signature_search).
"""

from __future__ import annotations

from django.db import connection

from config.db import is_postgres
from memories.signatures import hamming_similarity, simhash
from recall.stages.filters import RecallFilters


def _register_sqlite_hamming() -> None:
    """Register the Hamming similarity SQL function on this connection (cheap, idempotent)."""

    def similarity(a: bytes | None, b: bytes | None) -> float | None:
        if a is None or b is None or len(a) != len(b) or not a:
            return None
        return hamming_similarity(bytes(a), bytes(b))

    connection.connection.create_function(
        "engram_hamming_similarity", 2, similarity, deterministic=True
    )


def signature_search(
    text: str,
    filters: RecallFilters,
    *,
    bits: int,
    threshold: float,
    cap: int,
    scan_cap: int = 5_000,
) -> list[tuple[int, float]]:
    """Memories whose SimHash is within the Hamming similarity threshold, best first.

    PostgreSQL compares in SQL (bytea to bit string, XOR, bit_count); SQLite through a
    registered function. Both scan the newest scan_cap filtered rows; a signature of
    another length (from another SIGNATURE_BITS) is read and matches nothing. A 0.65
    threshold is too loose for LSH banding to prune anything (see docs/recall.md).
    """
    signature = simhash(text, bits=bits)
    if not any(signature) or cap <= 0:
        return []
    n_bytes = bits // 8
    where, params = filters.sql("m")
    # The signature's length is not a condition of the scan: there PostgreSQL, which keeps
    # no statistics on octet_length(signature), guessed that 1 row in 200 passes, and read
    # and sorted the whole namespace rather than walk its newest rows by the created_at
    # index (106 against 22 ms at 100,000 memories).
    newest = (
        f"SELECT m.id, m.signature FROM memories_memory m WHERE {where} "
        "ORDER BY m.created_at DESC LIMIT %s"
    )
    connection.ensure_connection()
    if is_postgres():
        # CASE, not a WHERE beside the similarity: the planner may evaluate ANDed
        # conditions in any order, and a bit string of another length cannot be cast.
        sim = (
            "CASE WHEN octet_length(n.signature) = %s THEN 1.0 - bit_count(('x' || "
            f"encode(n.signature, 'hex'))::bit({bits}) # q.bits)::float / {bits} END"
        )
        sql = (
            f"WITH q AS (SELECT ('x' || %s)::bit({bits}) AS bits) "
            f"SELECT id, sim FROM (SELECT n.id, {sim} AS sim FROM ({newest}) n, q) s "
            "WHERE sim >= %s ORDER BY sim DESC, id LIMIT %s"
        )
        all_params = [signature.hex(), n_bytes, *params, scan_cap, threshold, cap]
    else:
        _register_sqlite_hamming()  # None for a signature of another length
        sql = (
            "SELECT id, sim FROM (SELECT n.id, engram_hamming_similarity(n.signature, %s) "
            f"AS sim FROM ({newest}) n) WHERE sim >= %s ORDER BY sim DESC, id LIMIT %s"
        )
        all_params = [signature, *params, scan_cap, threshold, cap]
    with connection.cursor() as cursor:
        cursor.execute(sql, all_params)
        return [(memory_id, float(sim)) for memory_id, sim in cursor.fetchall()]
