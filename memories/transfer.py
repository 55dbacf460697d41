"""Namespace export and import as JSON Lines.

Format (one JSON object per line, `type` first):

    {"type": "header", "format": "engram-export", "version": 1, "namespace": {...settings}}
    {"type": "memory", "id": 17, "content": "...", ...every field...}
    {"type": "association", "source": 17, "target": 18, "weight": 0.6, "kind": "related",
     "classification": "internal"}
    {"type": "entity", "name": "alice", "display_name": "Alice", "kind": "person", ...}
    {"type": "relation", "subject": "alice", "predicate": "works_with", "object": "bob", ...}
    {"type": "consolidation", "period": "daily", "period_start": "2026-11-20", ...}
    {"type": "card", "memory": 17, ...scheduling state}
    {"type": "review_log", "memory": 17, "grade": 4, ...}
    {"type": "event", "memory": 17, "kind": "created", ...}
    {"type": "end", "lines": 123}

Ids: memory ids in the file are the exporter's. Import gives every memory a new id and
rewrites every reference (associations, relations, digests, cards, logs, history) through
the old -> new mapping, which the import returns. Search fields and signatures are derived
again on import; embeddings travel as base64 float32 bytes. Derived lines (associations,
entities, relations, digests, events) carry the level they are stored at, which may be
above their memories' levels now (written while a memory was more sensitive): an import
keeps it, and raises it to their memories' levels, never lowers it. The end record makes a
truncated file detectable: an import without it, or with a wrong line count, writes nothing.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import date, datetime
from typing import Any

from django.utils import timezone

from memories import services
from memories.hooks import transfer_parts
from memories.models import (
    Association,
    Classification,
    Consolidation,
    Entity,
    Memory,
    MemoryEvent,
    Namespace,
    Relation,
    quotes_hidden,
)

FORMAT = "engram-export"
VERSION = 1
BATCH = 1000

# A memory line: every stored field but those the import gives anew (id, namespace,
# updated_at) or derives again from the text (search fields, signature), in model order.
MEMORY_FIELDS = services.in_model_order(
    {
        *services.EDITABLE_FIELDS,
        *services.SERVER_FIELDS,
        *services.EMBEDDING_FIELDS,
        *services.IDENTITY_FIELDS,
        *services.CREATE_ONLY_FIELDS,
    }
    - {"id", "namespace", "updated_at"}
)


def _encode(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, bytes | memoryview):
        return base64.b64encode(bytes(value)).decode()
    return value


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def namespace_export(*, namespace: Namespace, ceiling: int) -> Iterator[str]:
    """Every line of a namespace's export, streamed from the database in batches."""
    count = 0

    def emit(record: dict[str, Any]) -> str:
        nonlocal count
        count += 1
        return _line(record)

    settings_fields = {
        name: getattr(namespace, name)
        for name in ("name", "slug", *services.NAMESPACE_EDITABLE_FIELDS)
    }
    yield emit(
        {
            "type": "header",
            "format": FORMAT,
            "version": VERSION,
            "exported_at": timezone.now().isoformat(),
            "namespace": settings_fields,
        }
    )

    visible = Memory.objects.filter(namespace=namespace, classification__lte=ceiling)
    for memory in visible.order_by("pk").iterator(chunk_size=BATCH):
        record: dict[str, Any] = {"type": "memory", "id": memory.pk}
        for name in MEMORY_FIELDS:
            record[name] = _encode(getattr(memory, name))
        record["classification"] = Classification(memory.classification).label
        yield emit(record)

    links = Association.objects.filter(
        namespace=namespace,
        source__classification__lte=ceiling,
        target__classification__lte=ceiling,
        classification__lte=ceiling,
    ).order_by("pk")
    for link in links.iterator(chunk_size=BATCH):
        yield emit(
            {
                "type": "association",
                "source": link.source_id,
                "target": link.target_id,
                "weight": link.weight,
                "kind": link.kind,
                "classification": Classification(link.classification).label,
                "created_at": _encode(link.created_at),
            }
        )

    entities = Entity.objects.filter(namespace=namespace).within_ceiling(ceiling)
    for entity in entities.order_by("pk").iterator():
        yield emit(
            {
                "type": "entity",
                "name": entity.name,
                "display_name": entity.display_name,
                "kind": entity.kind,
                "classification": Classification(entity.classification).label,
                "created_at": _encode(entity.created_at),
            }
        )

    relations = (
        Relation.objects.filter(namespace=namespace)
        .within_ceiling(ceiling)
        .select_related("subject", "object")
        .order_by("pk")
    )
    for relation in relations.iterator(chunk_size=BATCH):
        yield emit(
            {
                "type": "relation",
                "subject": relation.subject.name,
                "predicate": relation.predicate,
                "object": relation.object.name,
                "memory": relation.memory_id,
                "weight": relation.weight,
                "classification": Classification(relation.classification).label,
                "created_at": _encode(relation.created_at),
            }
        )

    digests = Consolidation.objects.filter(namespace=namespace).within_ceiling(ceiling)
    for digest in _without_hidden_quotes(digests.order_by("pk"), ceiling, visible):
        yield emit(
            {
                "type": "consolidation",
                "period": digest.period,
                "period_start": _encode(digest.period_start),
                "topic": digest.topic,
                "text": digest.text,
                "memory_ids": digest.memory_ids,
                "classification": Classification(digest.classification).label,
                "created_at": _encode(digest.created_at),
            }
        )

    # Other apps' records of these memories (review's cards and logs): memories.hooks.
    for part in transfer_parts():
        for record in part.export(memories=visible, ceiling=ceiling, encode=_encode):
            yield emit(record)

    # Only what was written while the memory sat within the ceiling (each event keeps the
    # level it was written at), never the values of a time the memory was above it.
    events = MemoryEvent.objects.filter(memory__in=visible).within_ceiling(ceiling)
    events = events.order_by("pk")
    for event in events.iterator(chunk_size=BATCH):
        yield emit(
            {
                "type": "event",
                "memory": event.memory_ref,
                "kind": event.kind,
                "before": event.before,
                "after": event.after,
                "source": event.source,
                "classification": Classification(event.classification).label,
                "created_at": _encode(event.created_at),
            }
        )

    yield _line({"type": "end", "lines": count + 1})


def _without_hidden_quotes(digests, ceiling: int, exported) -> Iterator[Consolidation]:
    """The digests, minus those quoting a memory now above the ceiling, each naming only
    the memories the file holds: one it quoted that has since been purged is in no line, and
    an import refuses a reference to a memory not earlier in the file (two queries a
    batch)."""

    def visible(batch: list[Consolidation]) -> Iterator[Consolidation]:
        hidden = quotes_hidden(batch, ceiling)
        kept = [digest for digest in batch if digest.pk not in hidden]
        quoted = {pk for digest in kept for pk in digest.memory_ids}
        present = set(exported.filter(pk__in=quoted).values_list("pk", flat=True))
        for digest in kept:
            digest.memory_ids = [pk for pk in digest.memory_ids if pk in present]
        return iter(kept)

    batch: list[Consolidation] = []
    for digest in digests.iterator(chunk_size=BATCH):
        batch.append(digest)
        if len(batch) == BATCH:
            yield from visible(batch)
            batch = []
    yield from visible(batch)
