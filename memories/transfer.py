"""Namespace export and import as JSON Lines.

Format (one JSON object per line, `type` first):

    {"type": "header", "format": "engram-export", "version": 1, "namespace": {...settings}}
    {"type": "memory", "id": 17, "content": "...", ...every field...}
    {"type": "association", "source": 17, "target": 18, "weight": 0.6, "kind": "related"}
    {"type": "entity", "name": "alice", "display_name": "Alice", "kind": "person"}
    {"type": "relation", "subject": "alice", "predicate": "works_with", "object": "bob", ...}
    {"type": "consolidation", "period": "daily", "period_start": "2026-11-20", ...}
    {"type": "card", "memory": 17, ...scheduling state}
    {"type": "review_log", "memory": 17, "grade": 4, ...}
    {"type": "event", "memory": 17, "kind": "created", ...}
    {"type": "end", "lines": 123}

Ids: memory ids in the file are the exporter's. Import gives every memory a new id and
rewrites every reference (associations, relations, digests, cards, logs, history) through
the old -> new mapping, which the import returns. Search fields and signatures are derived
again on import; embeddings travel as base64 float32 bytes. The end record makes a
truncated file detectable: an import without it, or with a wrong line count, writes nothing.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from memories import services
from memories.models import (
    Association,
    Classification,
    Consolidation,
    Entity,
    Memory,
    MemoryEvent,
    Namespace,
    Relation,
)

FORMAT = "engram-export"
VERSION = 1
BATCH = 1000

MEMORY_FIELDS = (
    "content",
    "content_original",
    "language",
    "keywords",
    "topic",
    "cue",
    "memory_type",
    "tier",
    "storage",
    "status",
    "status_changed_at",
    "promoted_at",
    "forgotten_at",
    "forgotten_reason",
    "forgotten_score",
    "classification",
    "strength",
    "stability",
    "utility",
    "confidence",
    "emotion_score",
    "emotion_tags",
    "trust",
    "credibility",
    "relevance_score",
    "importance_flags",
    "use_count",
    "last_used_at",
    "access_count",
    "last_accessed_at",
    "recall_count",
    "last_recalled_at",
    "recall_timestamps",
    "session_ids",
    "created_at",
    "expires_at",
    "embedding",
    "embedding_model",
)
DATETIME_FIELDS = {
    "status_changed_at",
    "promoted_at",
    "forgotten_at",
    "last_used_at",
    "last_accessed_at",
    "last_recalled_at",
    "created_at",
    "expires_at",
}
CARD_FIELDS = (
    "scheduler",
    "easiness",
    "interval_days",
    "repetitions",
    "next_review",
    "last_quality",
    "last_reviewed_at",
    "first_reviewed_at",
    "total_reviews",
    "correct_reviews",
    "fsrs_state",
    "created_at",
)
LOG_FIELDS = (
    "grade",
    "source",
    "mode",
    "state_before",
    "state_after",
    "reviewed_at",
    "undone_at",
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
    from review.models import Card, ReviewLog

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
    ).order_by("pk")
    for link in links.iterator(chunk_size=BATCH):
        yield emit(
            {
                "type": "association",
                "source": link.source_id,
                "target": link.target_id,
                "weight": link.weight,
                "kind": link.kind,
                "created_at": _encode(link.created_at),
            }
        )

    for entity in Entity.objects.filter(namespace=namespace).order_by("pk").iterator():
        yield emit(
            {
                "type": "entity",
                "name": entity.name,
                "display_name": entity.display_name,
                "kind": entity.kind,
                "created_at": _encode(entity.created_at),
            }
        )

    relations = (
        Relation.objects.filter(namespace=namespace)
        .exclude(memory__classification__gt=ceiling)
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
                "created_at": _encode(relation.created_at),
            }
        )

    hidden = set(
        Memory.objects.filter(namespace=namespace, classification__gt=ceiling).values_list(
            "pk", flat=True
        )
    )
    for digest in Consolidation.objects.filter(namespace=namespace).order_by("pk").iterator():
        if hidden.intersection(digest.memory_ids):
            continue
        yield emit(
            {
                "type": "consolidation",
                "period": digest.period,
                "period_start": _encode(digest.period_start),
                "topic": digest.topic,
                "text": digest.text,
                "memory_ids": digest.memory_ids,
                "created_at": _encode(digest.created_at),
            }
        )

    cards = Card.objects.filter(memory__in=visible).order_by("pk")
    for card in cards.iterator(chunk_size=BATCH):
        yield emit(
            {
                "type": "card",
                "memory": card.memory_id,
                **{name: _encode(getattr(card, name)) for name in CARD_FIELDS},
            }
        )
    logs = ReviewLog.objects.filter(card__memory__in=visible).select_related("card")
    for log in logs.order_by("pk").iterator(chunk_size=BATCH):
        yield emit(
            {
                "type": "review_log",
                "memory": log.card.memory_id,
                **{name: _encode(getattr(log, name)) for name in LOG_FIELDS},
            }
        )

    events = MemoryEvent.objects.filter(memory__in=visible).order_by("pk")
    for event in events.iterator(chunk_size=BATCH):
        yield emit(
            {
                "type": "event",
                "memory": event.memory_ref,
                "kind": event.kind,
                "before": event.before,
                "after": event.after,
                "source": event.source,
                "created_at": _encode(event.created_at),
            }
        )

    yield _line({"type": "end", "lines": count + 1})


class ImportFailed(Exception):
    """A bad line: nothing was written. `line` is 1-based."""

    api_status = 400
    api_code = "invalid_import"

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.field = f"line {line}"


@dataclass
class ImportResult:
    memories: dict[int, int] = field(default_factory=dict)  # old id -> new id
    counts: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "counts": self.counts,
            "memory_ids": {str(old): new for old, new in self.memories.items()},
        }


def _datetime(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None:
        raise ValueError(f"{name}: not an ISO 8601 date-time")
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed)


class _Importer:
    def __init__(self, *, namespace: Namespace, ceiling: int, actor, apply_settings: bool):
        self.namespace = namespace
        self.ceiling = ceiling
        self.actor = actor
        self.apply_settings = apply_settings
        self.result = ImportResult()
        self.pending: list[tuple[int, Memory]] = []
        self.entities: dict[str, Entity] = {}
        self.cards: dict[int, Any] = {}
        self.header = False
        self.ended = False

    def count(self, kind: str) -> None:
        self.result.counts[kind] = self.result.counts.get(kind, 0) + 1

    def memory_id(self, old: Any, name: str = "memory") -> int:
        self.flush()
        if old not in self.result.memories:
            raise ValueError(f"{name}: memory {old!r} is not earlier in the file")
        return self.result.memories[old]

    def flush(self) -> None:
        if not self.pending:
            return
        from recall.vectorcodes import write_codes

        created = Memory.objects.bulk_create([memory for _, memory in self.pending])
        for (old, _), memory in zip(self.pending, created, strict=True):
            self.result.memories[old] = memory.pk
        # Imported vectors get their sign codes, which recall ranks first.
        write_codes(
            (memory.pk, memory.namespace_id, memory.embedding_model, memory.embedding)
            for memory in created
            if memory.embedding is not None and memory.embedding_model
        )
        self.pending.clear()

    def handle(self, record: dict[str, Any]) -> None:
        kind = record.pop("type", None)
        if not self.header and kind != "header":
            raise ValueError("the first line must be the header record")
        if self.ended:
            raise ValueError("nothing may follow the end record")
        handler = getattr(self, f"_{kind}", None) if isinstance(kind, str) else None
        if handler is None:
            raise ValueError(f"unknown record type {kind!r}")
        handler(record)
        if kind not in ("header", "end"):
            self.count(kind)

    def _header(self, record: dict[str, Any]) -> None:
        if self.header:
            raise ValueError("a second header record")
        if record.get("format") != FORMAT or record.get("version") != VERSION:
            raise ValueError(f"not an {FORMAT} version {VERSION} file")
        self.header = True
        settings_fields = record.get("namespace") or {}
        if self.apply_settings:
            changes = {
                k: v
                for k, v in settings_fields.items()
                if k in services.NAMESPACE_EDITABLE_FIELDS and k != "name"
            }
            services.namespace_update(namespace=self.namespace, changes=changes)

    def _memory(self, record: dict[str, Any]) -> None:
        old = record.pop("id", None)
        if not isinstance(old, int):
            raise ValueError("id: an integer is required")
        if old in self.result.memories or any(o == old for o, _ in self.pending):
            raise ValueError(f"id: memory {old} appears twice")
        unknown = sorted(set(record) - set(MEMORY_FIELDS))
        if unknown:
            raise ValueError(f"unknown field(s): {', '.join(unknown)}")
        values = dict(record)
        try:
            values["classification"] = Classification.from_name(
                values.get("classification", "internal")
            ).value
        except ValueError:
            raise ValueError("classification: unknown level") from None
        if values["classification"] > self.ceiling:
            raise ValueError("classification: above this token's ceiling")
        for name in DATETIME_FIELDS & set(values):
            values[name] = _datetime(values[name], name)
        if values.get("embedding") is not None:
            try:
                values["embedding"] = base64.b64decode(values["embedding"], validate=True)
            except (ValueError, TypeError):
                raise ValueError("embedding: not base64") from None
        content = values.pop("content", None)
        if not isinstance(content, str):
            raise ValueError("content: a string is required")
        memory = Memory(namespace=self.namespace, content=content, **values)
        services._validate(memory)
        services._derive(memory)
        self.pending.append((old, memory))
        if len(self.pending) >= BATCH:
            self.flush()

    def _association(self, record: dict[str, Any]) -> None:
        link = Association(
            namespace=self.namespace,
            source_id=self.memory_id(record.get("source"), "source"),
            target_id=self.memory_id(record.get("target"), "target"),
            weight=record.get("weight", 0.5),
            kind=record.get("kind", "related"),
            created_at=_datetime(record.get("created_at"), "created_at") or timezone.now(),
        )
        link.full_clean(exclude=["namespace", "source", "target"])
        link.save(force_insert=True)

    def _entity(self, record: dict[str, Any]) -> None:
        entity = services.entity_get_or_create(
            namespace=self.namespace,
            name=record.get("display_name") or record.get("name", ""),
            kind=record.get("kind", "thing"),
        )
        self.entities[entity.name] = entity

    def _relation(self, record: dict[str, Any]) -> None:
        memory_old = record.get("memory")
        memory = (
            Memory.objects.get(pk=self.memory_id(memory_old)) if memory_old is not None else None
        )
        subject, obj = str(record.get("subject", "")), str(record.get("object", ""))
        services.relation_create(
            namespace=self.namespace,
            subject=subject,
            predicate=str(record.get("predicate", "")),
            object=obj,
            memory=memory,
            weight=record.get("weight", 0.6),
        )

    def _consolidation(self, record: dict[str, Any]) -> None:
        ids = [self.memory_id(old, "memory_ids") for old in record.get("memory_ids", [])]
        start = parse_date(str(record.get("period_start", "")))
        if start is None:
            raise ValueError("period_start: not an ISO date")
        digest = Consolidation(
            namespace=self.namespace,
            period=record.get("period"),
            period_start=start,
            topic=record.get("topic", ""),
            text=record.get("text", ""),
            memory_ids=ids,
            created_at=_datetime(record.get("created_at"), "created_at") or timezone.now(),
        )
        digest.full_clean(exclude=["namespace"])
        digest.save(force_insert=True)

    def _card(self, record: dict[str, Any]) -> None:
        from review.models import Card

        memory_id = self.memory_id(record.pop("memory", None))
        unknown = sorted(set(record) - set(CARD_FIELDS))
        if unknown:
            raise ValueError(f"unknown field(s): {', '.join(unknown)}")
        for name in ("next_review", "last_reviewed_at", "first_reviewed_at", "created_at"):
            if name in record:
                record[name] = _datetime(record[name], name)
        card = Card(memory_id=memory_id, namespace=self.namespace, **record)
        card.full_clean(exclude=["memory", "namespace"])
        card.save(force_insert=True)
        self.cards[memory_id] = card

    def _review_log(self, record: dict[str, Any]) -> None:
        from review.models import ReviewLog

        memory_id = self.memory_id(record.pop("memory", None))
        card = self.cards.get(memory_id)
        if card is None:
            raise ValueError("memory: its card is not earlier in the file")
        unknown = sorted(set(record) - set(LOG_FIELDS))
        if unknown:
            raise ValueError(f"unknown field(s): {', '.join(unknown)}")
        record["reviewed_at"] = _datetime(record.get("reviewed_at"), "reviewed_at")
        record["undone_at"] = _datetime(record.get("undone_at"), "undone_at")
        log = ReviewLog(card=card, namespace=self.namespace, **record)
        log.full_clean(exclude=["card", "namespace", "user"])
        log.save(force_insert=True)

    def _event(self, record: dict[str, Any]) -> None:
        memory_id = self.memory_id(record.get("memory"))
        event = MemoryEvent(
            namespace=self.namespace,
            memory_id=memory_id,
            memory_ref=memory_id,
            kind=record.get("kind"),
            before=record.get("before") or {},
            after=record.get("after") or {},
            source=record.get("source", "import"),
            created_at=_datetime(record.get("created_at"), "created_at") or timezone.now(),
        )
        event.full_clean(exclude=["namespace", "memory", "actor"])
        event.save(force_insert=True)

    def _end(self, record: dict[str, Any]) -> None:
        self.ended = True
        self.expected_lines = record.get("lines")


def namespace_import(
    *,
    namespace: Namespace,
    lines: Iterable[str | bytes],
    ceiling: int = Classification.RESTRICTED,
    actor=None,
    apply_settings: bool = False,
) -> ImportResult:
    """Import an export into a namespace, all or nothing; raises ImportFailed naming the line."""
    importer = _Importer(
        namespace=namespace, ceiling=ceiling, actor=actor, apply_settings=apply_settings
    )
    number = 0
    with transaction.atomic():
        for number, raw in enumerate(lines, start=1):
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            if not text.strip():
                raise ImportFailed(number, "empty line")
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ImportFailed(number, f"not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise ImportFailed(number, "each line must be a JSON object")
            try:
                importer.handle(record)
            except ValidationError as exc:
                detail = (
                    "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
                    if hasattr(exc, "error_dict")
                    else "; ".join(exc.messages)
                )
                raise ImportFailed(number, detail) from None
            except (ValueError, TypeError) as exc:
                raise ImportFailed(number, str(exc)) from None
        if not importer.ended:
            raise ImportFailed(number + 1, "the file ends without its end record (truncated?)")
        if importer.expected_lines != number:
            raise ImportFailed(
                number,
                f"the end record counts {importer.expected_lines} lines, "
                f"the file has {number} (truncated or edited?)",
            )
        importer.flush()
    return importer.result
