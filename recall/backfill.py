"""Embedding backfill: live memories without a vector from the current model get one.

The service talks to a small protocol (`Embedder`: a model name and embed_texts), so it
does not care which provider is behind it; recall.tasks adapts recall.embeddings to it.
Batches are read by id (keyset), embedded, and written in one short transaction each,
only where the memory's text is still the text that was embedded. A provider error is
retried with exponential backoff; when the retries run out the run stops with
BackfillError, carrying what it did so far. Memories are never touched by a failed
batch: they keep no vector and the next run takes them again.
"""

from __future__ import annotations

import math
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import transaction
from django.db.models import Q

from memories.models import Memory, Namespace
from recall.vectorcodes import write_codes


class Embedder(Protocol):
    """Anything that turns texts into vectors; `model` names the vectors it makes."""

    model: str

    def embed_texts(self, texts: list[str]) -> Sequence[Sequence[float]]: ...


class BackfillError(Exception):
    """The provider kept failing; `counts` is what the run had done until then."""

    def __init__(self, message: str, counts: dict[str, Any]) -> None:
        super().__init__(message)
        self.counts = counts


@dataclass
class BackfillReport:
    embedded: int = 0
    batches: int = 0
    retries: int = 0
    skipped_changed: int = 0  # text edited while its vector was being computed
    stopped_early: bool = False  # the time budget ran out with memories still pending
    errors: list[str] = field(default_factory=list)
    duration_seconds: float = 0.0

    def counts(self) -> dict[str, Any]:
        return {
            "embedded": self.embedded,
            "batches": self.batches,
            "retries": self.retries,
            "skipped_changed": self.skipped_changed,
            "stopped_early": self.stopped_early,
            "errors": self.errors[-5:],
            "duration_seconds": round(self.duration_seconds, 3),
        }


def pending_embeddings(*, model: str, namespace: Namespace | int | None = None):
    """Live memories without a vector from `model`."""
    memories = Memory.objects.live().filter(Q(embedding__isnull=True) | ~Q(embedding_model=model))
    if namespace is not None:
        memories = memories.filter(
            namespace_id=namespace.pk if isinstance(namespace, Namespace) else namespace
        )
    return memories


def _vectors_to_bytes(vectors: Sequence[Sequence[float]], expected: int) -> list[bytes]:
    """float32 bytes per vector (what recall reads); ValueError on anything unusable."""
    rows = list(vectors)
    if len(rows) != expected:
        raise ValueError(f"the provider returned {len(rows)} vectors for {expected} texts")
    dims = {len(row) for row in rows}
    if len(dims) != 1 or 0 in dims:
        raise ValueError("the provider returned empty or ragged vectors")
    out = []
    for row in rows:
        values = [float(x) for x in row]
        if not all(math.isfinite(x) for x in values):
            raise ValueError("the provider returned a non-finite number")
        out.append(array("f", values).tobytes())
    return out


def embeddings_backfill(
    *,
    embedder: Embedder,
    namespace: Namespace | int | None = None,
    batch_size: int = 32,
    max_batches: int = 100,
    retries: int = 3,
    backoff_seconds: float = 2.0,
    time_budget_seconds: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> BackfillReport:
    """Embed up to max_batches x batch_size pending memories, oldest id first.

    Raises BackfillError (with the report's counts) when a batch still fails after
    `retries` retries, waiting backoff_seconds x 2^n before retry n + 1.
    """
    started = time.perf_counter()
    report = BackfillReport()
    pending = pending_embeddings(model=embedder.model, namespace=namespace).order_by("id")
    last_id = 0
    while report.batches < max_batches:
        if time_budget_seconds is not None and time.perf_counter() - started > time_budget_seconds:
            report.stopped_early = True
            break
        batch = list(
            pending.filter(id__gt=last_id).values_list("id", "content", "namespace_id")[:batch_size]
        )
        if not batch:
            break
        last_id = batch[-1][0]
        texts = [content for _, content, _ in batch]
        blobs = _embed_with_retries(embedder, texts, retries, backoff_seconds, sleep, report)
        if blobs is None:
            report.duration_seconds = time.perf_counter() - started
            raise BackfillError(
                f"embedding provider failed {retries + 1} times on memories "
                f"#{batch[0][0]}-#{batch[-1][0]}: {report.errors[-1]}",
                report.counts(),
            )
        with transaction.atomic():
            coded = []
            for (memory_id, content, namespace_id), blob in zip(batch, blobs, strict=True):
                written = Memory.objects.filter(pk=memory_id, content=content).update(
                    embedding=blob, embedding_model=embedder.model
                )
                if written:
                    report.embedded += 1
                    coded.append((memory_id, namespace_id, embedder.model, blob))
                else:
                    report.skipped_changed += 1
            # Recall's first step ranks the vectors' sign codes (recall.vectorcodes).
            write_codes(coded)
        report.batches += 1
    report.duration_seconds = time.perf_counter() - started
    return report


def _embed_with_retries(
    embedder: Embedder,
    texts: list[str],
    retries: int,
    backoff_seconds: float,
    sleep: Callable[[float], None],
    report: BackfillReport,
) -> list[bytes] | None:
    for attempt in range(retries + 1):
        try:
            return _vectors_to_bytes(embedder.embed_texts(texts), len(texts))
        except Exception as error:  # any provider failure is retried, then reported
            report.errors.append(f"{type(error).__name__}: {error}")
            if attempt < retries:
                report.retries += 1
                sleep(backoff_seconds * 2**attempt)
    return None
