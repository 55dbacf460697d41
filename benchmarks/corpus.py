"""A synthetic, reproducible corpus for `manage.py bench`, kept between runs.

One namespace of the user `engram-bench` holds N memories written by memory_bulk_create
in batches: words drawn from a fixed-seed vocabulary with a Zipf-like frequency, lengths
from 4 to about 80 words, 30 topics, keywords, entities named in the text with relations
between them, associations between about a fifth of the memories, creation dates spread
over 180 days, and SM-2 cards of which about 40 % are due. The namespace's description
stamps the size and CORPUS_VERSION, so an unchanged corpus is reused.
"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import json
import multiprocessing
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from benchmarks.sql import plus_days
from config.db import is_postgres
from memories.models import (
    Association,
    Entity,
    Memory,
    MemoryEvent,
    MemorySketch,
    Namespace,
    Relation,
)
from memories.services import memories_insert
from memories.signatures import simhash
from memories.text import content_key, fold
from recall import termstats
from recall.models import RecallEvent
from review.models import Card, ReviewLog

BENCH_USER = "engram-bench"
CORPUS_SLUG = "bench-corpus"
SCRATCH_SLUG = "bench-ingest"
CORPUS_VERSION = 5
SEED = 9
BATCH = 1_000  # memories per bulk request in the ingest figures
LOAD_BATCH = 5_000  # memories per insert batch when building the corpus
TOPICS = 30
ENTITIES = 200
DUE_SHARE_PERCENT = 40
_SYLLABLES = ("ka", "ro", "mi", "tel", "san", "vor", "li", "ne", "qua", "bri", "dus", "fen")
_SYLLABLES += ("gal", "hor", "ith", "jun", "kel", "lum", "mar", "nos", "pel", "rin", "sor")
_SYLLABLES += ("tam", "ul", "ven", "wix", "yor", "zan", "an", "be", "ci", "do", "ex", "fa")
_PREDICATES = ("works_with", "lives_in", "owns", "knows", "uses", "visited")


@dataclass(frozen=True)
class Vocabulary:
    words: list[str]
    weights: list[float]
    topics: list[str]
    entities: list[str]

    @functools.cached_property
    def cum_weights(self) -> list[float]:
        return list(itertools.accumulate(self.weights))

    def sample(self, rng: random.Random, k: int) -> list[str]:
        # The same draws as choices(weights=...), which accumulates the 4,000 weights on
        # every call: for a 1,000,000-memory corpus that was ten minutes of the build.
        return rng.choices(self.words, cum_weights=self.cum_weights, k=k)


def vocabulary(size: int = 4_000) -> Vocabulary:
    """Pseudo-words from syllables, the same on every run (fixed seed)."""
    rng = random.Random(SEED)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4)))
        if len(word) >= 3 and word not in seen:
            seen.add(word)
            words.append(word)
    weights = [1.0 / (rank + 1) ** 0.9 for rank in range(size)]  # Zipf-like
    topics = [f"topic-{words[i]}" for i in range(TOPICS)]
    entities = [f"{words[100 + i].title()} {words[400 + i].title()}" for i in range(ENTITIES)]
    return Vocabulary(words=words, weights=weights, topics=topics, entities=entities)


QUERY_SEED = SEED + 2


def queries(count: int, seed: int = QUERY_SEED) -> list[str]:
    """Recall queries of 1-4 corpus words, weighted like the corpus, a fifth with an entity
    name; the same list for the same seed (bench and bench_peer ask the same)."""
    vocab = vocabulary()
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        words = vocab.sample(rng, rng.randint(1, 4))
        if rng.random() < 0.2:
            words.append(rng.choice(vocab.entities))
        found.append(" ".join(words))
    return found


def typo_queries(count: int, seed: int = QUERY_SEED) -> list[str]:
    """queries(count, seed) as a hurried typist writes them: one letter of every word of
    four letters or more replaced, so that the stemmed match finds few of them or none
    and the typo sub-queries (and, below the limit, stage Ss) do the work."""
    rng = random.Random(seed + 1)
    typed = []
    for query in queries(count, seed):
        words = []
        for word in query.split():
            if len(word) >= 4:
                at = rng.randrange(1, len(word))
                word = word[:at] + ("x" if word[at] != "x" else "q") + word[at + 1 :]
            words.append(word)
        typed.append(" ".join(words))
    return typed


def _owner():
    owner, _ = get_user_model().objects.get_or_create(username=BENCH_USER)
    return owner


def _namespace(slug: str) -> Namespace:
    namespace, _ = Namespace.objects.get_or_create(
        owner=_owner(),
        slug=slug,
        defaults={"name": slug, "mode": Namespace.Mode.PERSONAL},
    )
    return namespace


def _stamp(namespace: Namespace) -> dict[str, Any]:
    try:
        return json.loads(namespace.description or "{}")
    except ValueError:
        return {}


def refill_namespace(
    namespace: Namespace, size: int, *, seed: int, progress: Callable[[str], None]
) -> datetime:
    """Empty the namespace and write `size` corpus memories into it (created over the
    corpus's span before now, as _bulk_memories writes them); returns that now."""
    clear_namespace(namespace)
    now = timezone.now()
    _bulk_memories(
        namespace,
        vocabulary(),
        random.Random(seed),
        size,
        now,
        0,
        size,
        time.perf_counter(),
        progress,
    )
    return now


def clear_namespace(namespace: Namespace) -> None:
    """Delete a namespace's rows with plain DELETEs (the ORM would load every row first)."""
    qn = connection.ops.quote_name
    with transaction.atomic(), connection.cursor() as cursor:
        for model in (
            ReviewLog,
            Card,
            Relation,
            Entity,
            Association,
            MemoryEvent,
            RecallEvent,
            MemorySketch,
        ):
            cursor.execute(
                f"DELETE FROM {qn(model._meta.db_table)} WHERE namespace_id = %s", [namespace.pk]
            )
        cursor.execute(
            f"DELETE FROM {qn(Memory._meta.db_table)} WHERE namespace_id = %s", [namespace.pk]
        )


def scratch_namespace() -> Namespace:
    """An empty namespace for the ingest figures, so the corpus itself never changes."""
    namespace = _namespace(SCRATCH_SLUG)
    clear_namespace(namespace)
    # As a new namespace is (the import figure turns duplicates off for its run).
    Namespace.objects.filter(pk=namespace.pk).update(dedupe=Namespace.Dedupe.EXACT)
    namespace.dedupe = Namespace.Dedupe.EXACT
    return namespace


def memory_items(
    namespace: Namespace, vocab: Vocabulary, rng: random.Random, count: int, now: datetime
) -> list[dict[str, Any]]:
    """Create arguments for `count` varied memories (also used for the ingest figures)."""
    items = []
    for _ in range(count):
        length = min(80, max(4, int(rng.lognormvariate(2.8, 0.6))))
        words = vocab.sample(rng, length)
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words) + 1), rng.choice(vocab.entities))
        content = " ".join(words).capitalize() + "."
        items.append(
            {
                "namespace": namespace,
                "content": content,
                "keywords": vocab.sample(rng, rng.randint(0, 3)),
                "topic": rng.choice(vocab.topics),
                "created_at": now - timedelta(seconds=rng.uniform(0, 180 * 86400)),
                "strength": round(rng.uniform(0.5, 2.0), 2),
                "utility": round(rng.random(), 2),
            }
        )
    return items


def corpus_slug(index: int, namespaces: int) -> str:
    """The slug of the index-th corpus namespace (0-based); one namespace keeps CORPUS_SLUG."""
    return CORPUS_SLUG if namespaces == 1 else f"{CORPUS_SLUG}-{index + 1:04d}"


def corpus(
    size: int,
    *,
    namespaces: int = 1,
    rebuild: bool = False,
    progress: Callable[[str], None] = print,
) -> tuple[Namespace, bool]:
    """The corpus: `size` memories over `namespaces` namespaces; (first namespace, built now).

    Recall and the due queue are measured on the first namespace, which holds
    size // namespaces memories; the others only make the tables as large as a service
    with that many tenants. A corpus with another layout is deleted first.
    """
    if namespaces < 1 or size < namespaces:
        raise ValueError("need at least one memory per namespace")
    stamp_wanted = {"version": CORPUS_VERSION, "size": size, "namespaces": namespaces}
    first = _namespace(corpus_slug(0, namespaces))
    have = Memory.objects.filter(namespace=first).count()
    if not rebuild and _stamp(first) == stamp_wanted and have == size // namespaces:
        # Recall writes an event even with track=False; drop the last run's, so that
        # every run starts from the same rows.
        RecallEvent.objects.filter(namespace__owner=first.owner).delete()
        return first, False
    for old in Namespace.objects.filter(owner=first.owner, slug__startswith=CORPUS_SLUG):
        progress(f"  corpus: clearing {old.slug} ...")
        clear_namespace(old)
        if old.pk != first.pk:
            old.delete()
    Namespace.objects.filter(pk=first.pk).update(description="")
    targets = [first] + [_namespace(corpus_slug(i, namespaces)) for i in range(1, namespaces)]
    vocab = vocabulary()
    rng = random.Random(SEED)
    now = timezone.now()
    per_namespace = size // namespaces
    started = time.perf_counter()
    done = 0
    for number, namespace in enumerate(targets):
        # The measured first namespace holds exactly size // namespaces; the last the rest.
        count = size - done if number == len(targets) - 1 else per_namespace
        ids = _bulk_memories(namespace, vocab, rng, count, now, done, size, started, progress)
        done += len(ids)
        _links(namespace, ids, vocab, rng, n_entities=min(ENTITIES, max(2, count // 5)))
        _schedule_cards(namespace, now)
    progress(f"  corpus: {size:,} memories in {time.perf_counter() - started:.0f} s; analyze ...")
    Namespace.objects.filter(pk=first.pk).update(description=json.dumps(stamp_wanted))
    analyze()
    return first, True


def _derived(texts: list[tuple[str, str]]) -> list[tuple[str, bytes, str]]:
    """(search_text, signature, content_key) per (content, keywords): the service's derived
    fields (memory_derive)."""
    bits = settings.SIGNATURE_BITS
    return [
        (fold(f"{c} {k}".strip()), simhash(f"{c} {k}".strip(), bits=bits), content_key(c))
        for c, k in texts
    ]


def _bulk_memories(
    namespace: Namespace,
    vocab: Vocabulary,
    rng: random.Random,
    count: int,
    now: datetime,
    done: int,
    size: int,
    started: float,
    progress: Callable[[str], None],
) -> list[int]:
    """Insert `count` memories with their history events and cards; their ids.

    Rows are built as the services build them (search fields and signature from the same
    functions) but inserted in large batches without per-item validation: the data is
    ours and valid, and at 1,000,000 memories the service's per-item checks would take
    most of an hour. The derived fields are computed in a second process while this one
    writes the previous batch.
    """
    batches = [
        memory_items(namespace, vocab, rng, min(LOAD_BATCH, count - start), now)
        for start in range(0, count, LOAD_BATCH)
    ]
    texts = [[(i["content"], " ".join(i["keywords"])) for i in batch] for batch in batches]
    ids: list[int] = []
    analyzed_at = max(done, 1)
    with _pool(len(batches)) as pool:
        derived_batches = pool.map(_derived, texts) if pool else map(_derived, texts)
        for batch, derived in zip(batches, derived_batches, strict=True):
            memories = []
            for item, (search_text, signature, key) in zip(batch, derived, strict=True):
                memories.append(
                    Memory(
                        **item,
                        last_used_at=item["created_at"],
                        valid_from=item["created_at"],  # memory_build's default
                        search_text=search_text,
                        signature=signature,
                        content_key=key,
                    )
                )
            with transaction.atomic():
                memories_insert(memories, source="bench")
            created = memories
            ids += [memory.pk for memory in created]
            loaded = done + len(ids)
            if loaded >= analyzed_at * 1.2:
                _analyze_growing()
                analyzed_at = loaded
            rate = loaded / max(time.perf_counter() - started, 1e-9)
            progress(f"  corpus: {loaded:,} / {size:,} memories ({rate:,.0f}/s)")
    return ids


class _pool:
    """A one-process pool for the derived fields of long builds (nothing for short ones)."""

    def __init__(self, batches: int) -> None:
        self.executor = None
        if batches > 2 and (os.cpu_count() or 1) > 1:
            # The child never touches the database connection it inherits, and a pool
            # process ends with os._exit, so it never closes the parent's socket either.
            context = multiprocessing.get_context("fork")
            self.executor = concurrent.futures.ProcessPoolExecutor(1, mp_context=context)

    def __enter__(self):
        return self.executor

    def __exit__(self, *exc) -> None:
        if self.executor:
            self.executor.shutdown(cancel_futures=True)


def _links(
    namespace: Namespace,
    ids: list[int],
    vocab: Vocabulary,
    rng: random.Random,
    *,
    n_entities: int = ENTITIES,
) -> None:
    """Associations for about 20 % of the memories; entities and relations between them."""
    pairs = set()
    for source in rng.sample(ids, len(ids) // 5):
        target = rng.choice(ids)
        if target != source:
            pairs.add((source, target))
    Association.objects.bulk_create(
        (
            Association(
                namespace=namespace,
                source_id=s,
                target_id=t,
                weight=round(rng.uniform(0.2, 1.0), 2),
            )
            for s, t in pairs
        ),
        batch_size=2_000,
    )
    entities = Entity.objects.bulk_create(
        Entity(namespace=namespace, name=fold(name), display_name=name, kind="person")
        for name in vocab.entities[:n_entities]
    )
    triples = set()
    for _ in range(max(1, len(ids) // 20) if len(entities) > 1 else 0):
        subject, obj = rng.sample(range(len(entities)), 2)
        triples.add((subject, rng.choice(_PREDICATES), obj))
    Relation.objects.bulk_create(
        (
            Relation(
                namespace=namespace,
                subject=entities[s],
                predicate=p,
                object=entities[o],
                memory_id=rng.choice(ids),
            )
            for s, p, o in triples
        ),
        batch_size=2_000,
    )


def _schedule_cards(namespace: Namespace, now: datetime) -> None:
    """Reviewed SM-2 cards, DUE_SHARE_PERCENT of them due now, the rest within 60 days."""
    qn = connection.ops.quote_name
    due = plus_days("%s", "(id %% 100) - %s")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {qn(Card._meta.db_table)} SET next_review = {due}, "
            "easiness = 1.3 + (id %% 13) / 10.0, interval_days = 1 + id %% 30, "
            "repetitions = 1 + id %% 6 WHERE namespace_id = %s",
            [connection.ops.adapt_datetimefield_value(now), DUE_SHARE_PERCENT, namespace.pk],
        )


def vacuum_after_writes() -> None:
    """What autovacuum would do after the ingest figures' inserts and deletes (PostgreSQL).

    Autovacuum may be off (it is on the development machine); without a vacuum the
    deleted scratch rows stay in the indexes and the GIN pending lists keep growing, and
    every later full-text search pays for them.
    """
    if not is_postgres() or connection.in_atomic_block:
        return
    with connection.cursor() as cursor:
        for model in (Memory, MemoryEvent, Card):
            cursor.execute(f"VACUUM ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


def _analyze_growing() -> None:
    """ANALYZE the tables the write path looks up while the corpus grows, as autovacuum
    does once a table has grown by a tenth or so (PostgreSQL). Autovacuum is off on some
    machines (CI's): never-analyzed tables made the near-duplicate lookup read a
    namespace's whole sketch (2.4 s a batch at 45,000 memories, minutes later on)."""
    if not is_postgres() or connection.in_atomic_block:
        return
    with connection.cursor() as cursor:
        for model in (Memory, MemorySketch):
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


def analyze() -> None:
    """The steady state after a bulk load: what autovacuum and the worker would leave.

    VACUUM merges the GIN indexes' pending lists (until then every full-text search reads
    them linearly) and sets the visibility map; ANALYZE gives the planner statistics; the
    full-text statistics of the worker (recall.termstats) are computed for every namespace.
    """
    with connection.cursor() as cursor:
        # VACUUM cannot run inside a transaction (the test suite's).
        vacuum = is_postgres() and not connection.in_atomic_block
        cursor.execute("VACUUM ANALYZE" if vacuum else "ANALYZE")
    termstats.refresh(force=True)
