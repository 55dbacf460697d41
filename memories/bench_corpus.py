"""A synthetic, reproducible corpus for `manage.py bench`, kept between runs.

One namespace of the user `engram-bench` holds N memories written by memory_bulk_create
in batches: words drawn from a fixed-seed vocabulary with a Zipf-like frequency, lengths
from 4 to about 80 words, 30 topics, keywords, entities named in the text with relations
between them, associations between about a fifth of the memories, creation dates spread
over 180 days, and SM-2 cards of which about 40 % are due. The namespace's description
stamps the size and CORPUS_VERSION, so an unchanged corpus is reused.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from memories.models import Association, Entity, Memory, MemoryEvent, Namespace, Relation

BENCH_USER = "engram-bench"
CORPUS_SLUG = "bench-corpus"
SCRATCH_SLUG = "bench-ingest"
CORPUS_VERSION = 2
SEED = 9
BATCH = 1_000
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

    def sample(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.words, weights=self.weights, k=k)


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


def clear_namespace(namespace: Namespace) -> None:
    """Delete a namespace's rows with plain DELETEs (the ORM would load every row first)."""
    from recall.models import RecallEvent
    from review.models import Card, ReviewLog

    qn = connection.ops.quote_name
    with transaction.atomic(), connection.cursor() as cursor:
        for model in (ReviewLog, Card, Relation, Entity, Association, MemoryEvent, RecallEvent):
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


def corpus(
    size: int, *, rebuild: bool = False, progress: Callable[[str], None] = print
) -> tuple[Namespace, bool]:
    """The corpus namespace with `size` memories; (namespace, True) when it was (re)built."""
    from memories.services import memory_bulk_create

    namespace = _namespace(CORPUS_SLUG)
    stamp = _stamp(namespace)
    have = Memory.objects.filter(namespace=namespace).count()
    if not rebuild and stamp == {"version": CORPUS_VERSION, "size": size} and have == size:
        # Recall writes an event even with track=False; drop the last run's, so that
        # every run starts from the same rows.
        from recall.models import RecallEvent

        RecallEvent.objects.filter(namespace=namespace).delete()
        return namespace, False
    clear_namespace(namespace)
    Namespace.objects.filter(pk=namespace.pk).update(description="")
    vocab = vocabulary()
    rng = random.Random(SEED)
    now = timezone.now()
    ids: list[int] = []
    for start in range(0, size, BATCH):
        items = memory_items(namespace, vocab, rng, min(BATCH, size - start), now)
        ids += [m.pk for m in memory_bulk_create(items=items, source="bench")]
        progress(f"  corpus: {len(ids):,} / {size:,} memories")
    _links(namespace, ids, vocab, rng)
    _schedule_cards(namespace, now)
    stamp = {"version": CORPUS_VERSION, "size": size}
    Namespace.objects.filter(pk=namespace.pk).update(description=json.dumps(stamp))
    analyze()
    return namespace, True


def _links(namespace: Namespace, ids: list[int], vocab: Vocabulary, rng: random.Random) -> None:
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
    from memories.text import fold

    entities = Entity.objects.bulk_create(
        Entity(namespace=namespace, name=fold(name), display_name=name, kind="person")
        for name in vocab.entities
    )
    triples = set()
    for _ in range(max(1, len(ids) // 20)):
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
    from review.models import Card

    qn = connection.ops.quote_name
    if connection.vendor == "postgresql":
        due = "%s::timestamptz + ((id %% 100) - %s) * interval '1 day'"
    else:
        due = "strftime('%%Y-%%m-%%d %%H:%%M:%%f', %s, ((id %% 100) - %s) || ' days')"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {qn(Card._meta.db_table)} SET next_review = {due}, "
            "easiness = 1.3 + (id %% 13) / 10.0, interval_days = 1 + id %% 30, "
            "repetitions = 1 + id %% 6 WHERE namespace_id = %s",
            [connection.ops.adapt_datetimefield_value(now), DUE_SHARE_PERCENT, namespace.pk],
        )


def analyze() -> None:
    """Fresh planner statistics after a bulk load."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
