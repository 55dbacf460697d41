"""Sign codes of the stored embeddings: the first, coarse step of Se.

A memory's code is one bit per dimension of its vector, set where the component is
positive (48 bytes for 384 dimensions, against 1,536 for the float32 vector). The
Hamming distance between two codes estimates the angle between the vectors, so Se ranks
a namespace's codes against the query's code, keeps the best few hundred, and re-ranks
only those exactly by cosine from `Memory.embedding` (recall.stages.embeddings.embedding_search).

Codes live in `recall.EmbeddingCode` (one row per memory with a vector; a narrow table,
so the scan never touches memories_memory's wide rows) and are written wherever vectors
are: `recall.embeddings.embed_pending`, `recall.backfill.embeddings_backfill`, the
namespace import. `sync_codes` computes the missing ones and drops stale ones (the
embedding backfill task runs it, so a vector written by any other path gets its code
within one backfill interval); until then such a memory is invisible to Se, never wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from django.db import connection
from django.db.models import F

from memories.models import Memory
from recall.models import EmbeddingCode

# (memory id, namespace id, embedding model, float32 vector bytes)
CodeSource = tuple[int, int, str, bytes]
SYNC_BATCH = 2_000


def sign_code(vector) -> bytes:
    """One bit per dimension, set where the component is positive, packed big-endian.

    The sign does not depend on the vector's length, so normalised or not gives the same
    code. Dimensions not a multiple of 8 are padded with zero bits (alike in every code
    of a model, so they never count in a distance).
    """
    return np.packbits(np.asarray(vector, dtype=np.float32).ravel() > 0).tobytes()


def sign_codes(blobs: Sequence[bytes]) -> list[bytes | None]:
    """sign_code of each float32 vector blob, vectorised per dimension; None for a blob
    that is empty or not whole float32s."""
    out: list[bytes | None] = [None] * len(blobs)
    by_length: dict[int, list[int]] = {}
    for index, blob in enumerate(blobs):
        if blob and len(blob) % 4 == 0:
            by_length.setdefault(len(blob), []).append(index)
    for length, indexes in by_length.items():
        matrix = np.frombuffer(b"".join(bytes(blobs[i]) for i in indexes), dtype=np.float32)
        packed = np.packbits(matrix.reshape(len(indexes), length // 4) > 0, axis=1)
        for row, index in enumerate(indexes):
            out[index] = packed[row].tobytes()
    return out


def write_codes(sources: Iterable[CodeSource]) -> int:
    """Insert or replace the codes of these vectors; returns how many were written.

    Call it in the transaction that writes the vectors. A missing or malformed vector
    removes the memory's code instead.
    """
    sources = list(sources)
    if not sources:
        return 0
    codes = sign_codes([blob for _, _, _, blob in sources])
    rows = [
        EmbeddingCode(memory_id=memory_id, namespace_id=namespace_id, model=model, code=code)
        for (memory_id, namespace_id, model, _), code in zip(sources, codes, strict=True)
        if code is not None and model
    ]
    written = {row.memory_id for row in rows}
    dropped = [memory_id for memory_id, *_ in sources if memory_id not in written]
    if dropped:
        EmbeddingCode.objects.filter(memory_id__in=dropped).delete()
    if rows:
        EmbeddingCode.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["memory"],
            update_fields=["namespace", "model", "code"],
            batch_size=500,
        )
    return len(rows)


def sync_codes(*, namespace_ids: Sequence[int] | None = None, batch_size: int = SYNC_BATCH) -> int:
    """Give every stored vector its code and drop codes whose vector is gone or replaced.

    Returns how many codes were written. Missing means no code row, or one of another
    model than the memory's vector; stale means the memory has no vector any more (its
    content changed) or its vector is of another model.
    """
    stale = EmbeddingCode.objects.exclude(
        memory__embedding__isnull=False, memory__embedding_model=F("model")
    )
    if namespace_ids is not None:
        stale = stale.filter(namespace_id__in=namespace_ids)
    stale.delete()
    pending = Memory.objects.filter(embedding__isnull=False).exclude(embedding_model="")
    pending = pending.exclude(embedding_code__model=F("embedding_model"))
    if namespace_ids is not None:
        pending = pending.filter(namespace_id__in=namespace_ids)
    pending = pending.order_by("id")
    written = 0
    last_id = 0
    while True:
        batch = list(
            pending.filter(id__gt=last_id).values_list(
                "id", "namespace_id", "embedding_model", "embedding"
            )[:batch_size]
        )
        if not batch:
            return written
        written += write_codes(
            (memory_id, namespace_id, model, bytes(blob))
            for memory_id, namespace_id, model, blob in batch
        )
        last_id = batch[-1][0]


def query_code_bits(code: bytes) -> str:
    """A code as PostgreSQL's bit string literal ('0101...')."""
    return "".join(f"{byte:08b}" for byte in code)


def register_sqlite_distance(query_code: bytes) -> None:
    """Register engram_code_distance(code) on this SQLite connection: the Hamming distance
    of a stored code to query_code (NULL for a code of another length).

    The query code is bound in the function rather than passed per row: converting it
    once instead of 100,000 times is a third of the scan's cost.
    """
    query = int.from_bytes(query_code, "big")
    length = len(query_code)
    from_bytes = int.from_bytes

    def distance(code: bytes | None) -> int | None:
        if code is None or len(code) != length:
            return None
        return (from_bytes(code, "big") ^ query).bit_count()

    connection.ensure_connection()
    connection.connection.create_function("engram_code_distance", 1, distance, deterministic=True)
