"""Import of a namespace export (memories.transfer's JSON Lines), all or nothing.

Every line is parsed by config.jsonparse (strict JSON: no NaN or Infinity, no lone
surrogates, NUL or invalid UTF-8, no deep nesting) and validated by the API's own rules: a
memory's fields by MemoryCreateInput (plus what only the server writes, with the same
field classes), the header's namespace settings by NamespaceUpdateInput, cards and review
logs by their models' fields and check constraints. Every field class is a strict one of
config.serializers: JSON types as they are, datetimes and floats within config.bounds.
A refused line raises ImportFailed naming the line and the field, and nothing is written.

Rows are written set-based, BATCH at a time (memories.bulk: COPY on PostgreSQL, multi-row
INSERTs on SQLite), each chunk once what it refers to is written; no line costs a query of
its own. Should the database still refuse a chunk (a check constraint no field rule
mirrors), the chunk's rows are validated one by one to name the line.

A body too large for the request is spooled and imported by the worker: memories.import_jobs.

Duplicates, under the namespace's `dedupe` (after the header's settings, when applied): a
memory line that is itself live, current and unexpired, whose text (content_key) a live,
current, unexpired memory of the namespace at or below the importer's ceiling holds, or an
earlier such line of the file, is not stored: its id maps to that memory, which counts a
use, as a write through the API would (memories.services.duplicates; one query per batch).
Its card, review logs and history are left out (they describe the other copy); its
associations and relations attach to that memory, less any that would link it to itself or
repeat a link or relation already there. A line that is not live (forgotten, archived,
superseded, expired) is history, and is restored as it is. `counts` say what was written:
"memory" the memories created, "deduplicated" the lines answered by another memory.
Every created memory gets its sketch and its near_duplicate links once the file's own
links are in (services.near_index): a near-duplicate is linked, never refused, whatever
`dedupe` says, since an import restores what was exported.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from operator import or_
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError, models, transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework import serializers

from config.jsonparse import JsonInputError, loads
from memories import import_records as records
from memories import serializers as s
from memories import services
from memories.bulk import insert_new
from memories.consolidation import content_hash
from memories.hooks import memories_imported, transfer_parts
from memories.models import (
    LIVE_STATUSES,
    Association,
    Classification,
    Consolidation,
    Entity,
    Memory,
    MemoryEvent,
    Namespace,
    Relation,
)
from memories.services.duplicates import count_duplicate_uses, duplicates_lock, live_duplicates
from memories.text import fold
from memories.transfer import FORMAT, VERSION

BATCH = 1000
# Links raised to their line's level, a statement per this many (one OR term each).
RAISE_CHUNK = 100


class ImportFailed(Exception):
    """A refused line: nothing was written. `line` is 1-based; `messages` name the fields."""

    api_status = 400
    api_code = "invalid_import"

    def __init__(self, line: int, messages: str | Sequence[str]) -> None:
        self.messages = [messages] if isinstance(messages, str) else list(messages)
        super().__init__(f"line {line}: " + "; ".join(self.messages))
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


def messages(detail: Any, path: str = "") -> list[str]:
    """A DRF or Django error detail as "field.sub: message" strings."""
    if isinstance(detail, DjangoValidationError):
        detail = detail.message_dict if hasattr(detail, "error_dict") else detail.messages
    if isinstance(detail, dict):
        found: list[str] = []
        for key, value in detail.items():
            name = "" if key in ("non_field_errors", "__all__") else str(key)
            found += messages(value, f"{path}.{name}" if path and name else path or name)
        return found
    if isinstance(detail, list | tuple):
        return [text for item in detail for text in messages(item, path)]
    return [f"{path}: {detail}" if path else str(detail)]


# --- Names, as services.entity_get_or_create and relation_create derive them --------------


def entity_key(name: str) -> tuple[str, str]:
    """(folded key, display name) of an entity name, or ValueError."""
    display = " ".join(name.split())
    key = fold(display)
    if not key:
        raise ValueError("This field may not be blank.")
    if len(key) > 200:
        raise ValueError("At most 200 characters.")
    return key, display


def predicate_key(predicate: str) -> str:
    key = "_".join(fold(predicate).split())
    if not key:
        raise ValueError("This field may not be blank.")
    if len(key) > Relation._meta.get_field("predicate").max_length:
        raise ValueError("At most 100 characters once folded.")
    return key


# --- The importer ----------------------------------------------------------------------


@dataclass
class _Entity:
    line: int
    display: str
    kind: str
    level: int
    created_at: Any = None
    pk: int | None = None
    stored_level: int | None = None  # the level in the database, once written or found


class _Importer:
    def __init__(
        self, *, namespace: Namespace, ceiling: int, apply_settings: bool, actor=None
    ) -> None:
        self.namespace = namespace
        self.ceiling = ceiling
        self.actor = actor
        self.now = timezone.now()
        self.default_level = int(Classification.default_for(ceiling))
        self.apply_settings = apply_settings
        self.result = ImportResult()
        self.result.counts["deduplicated"] = 0
        self.line = 0
        self.header = False
        self.ended = False
        self.expected_lines: int | None = None
        self.shapes: dict[type, serializers.Serializer] = {}
        # Memories: old id -> level of every one seen; old id -> new id once written.
        self.levels: dict[int, int] = {}
        self.new_ids = self.result.memories
        self.memories: list[tuple[int, int, Memory]] = []  # (line, old id, memory)
        self.created: list[int] = []  # new ids of the memories written, in file order
        # Duplicates: content key -> (id, level) of the memory that answers it (a stored
        # one, or one this import wrote); the old ids answered so; the uses to count.
        self.answers: dict[str, tuple[int, int]] = {}
        self.stored: set[int] = set()  # ids of the stored memories among the answers
        self.deduplicated: set[int] = set()
        self.uses: Counter[tuple[int, int]] = Counter()  # (id, level) -> lines it answered
        self.link_pairs: set[tuple[int, int]] = set()  # (source, target) new ids written
        self.dimensions: dict[str, int] = {}  # embedding model -> vector bytes
        self.links: list[tuple[int, dict]] = []
        self.pairs: set[tuple[int, int]] = set()
        self.entities: dict[str, _Entity] = {}
        self.unwritten: list[str] = []
        self.found_entities: set[int] = set()  # pks of entities the namespace already had
        self.relations: list[tuple[int, dict]] = []
        self.triples: set[tuple[str, str, str, int]] = set()
        self.digests: list[tuple[int, dict]] = []
        self.digest_keys: set[tuple] | None = None
        # Other apps' records (review's cards and logs), each kind read by its part.
        self.parts = [part.start_import(self) for part in transfer_parts()]
        self.part_of = {
            kind: started
            for part, started in zip(transfer_parts(), self.parts, strict=True)
            for kind in part.record_types
        }
        self.events: list[tuple[int, dict]] = []

    # Validation helpers.

    def refuse(self, *texts: str) -> ImportFailed:
        return ImportFailed(self.line, texts)

    def valid(self, shape: type[serializers.Serializer], record: dict) -> dict[str, Any]:
        serializer = self.shapes.get(shape)
        if serializer is None:
            serializer = self.shapes[shape] = shape()
        try:
            return dict(serializer.run_validation(record))
        except (serializers.ValidationError, DjangoValidationError) as exc:
            raise self.refuse(*messages(getattr(exc, "detail", exc))) from None

    def seen(self, old: int, name: str = "memory") -> int:
        """The level of a memory earlier in the file."""
        level = self.levels.get(old)
        if level is None:
            raise self.refuse(f"{name}: memory {old} is not earlier in the file.")
        return level

    def level(self, data: dict[str, Any], default: int) -> int:
        level = data.get("classification", default)
        if level > self.ceiling:
            raise self.refuse("classification: Above this token's ceiling.")
        return level

    # Records.

    def handle(self, record: Any) -> None:
        if not isinstance(record, dict):
            raise self.refuse("Each line must be a JSON object.")
        kind = record.pop("type", None)
        if self.ended:
            raise self.refuse("Nothing may follow the end record.")
        if not self.header and kind != "header":
            raise self.refuse("type: The first line must be the header record.")
        handler = getattr(self, f"_{kind}", None) if isinstance(kind, str) else None
        part = self.part_of.get(kind) if isinstance(kind, str) else None
        if part is not None:
            part.read(kind, record)
        elif handler is not None:
            handler(record)
        else:
            raise self.refuse(f"type: Unknown record type {kind!r}.")
        if kind not in ("header", "end"):
            self.result.counts[kind] = self.result.counts.get(kind, 0) + 1

    def _header(self, record: dict[str, Any]) -> None:
        if self.header:
            raise self.refuse("type: A second header record.")
        version = record.get("version")
        if record.get("format") != FORMAT or type(version) is not int or version != VERSION:
            raise self.refuse(f"format: Not an {FORMAT} version {VERSION} file.")
        data = self.valid(records.HeaderRecord, record)
        self.header = True
        exported = dict(data.get("namespace") or {})
        exported.pop("slug", None)  # the exporter's; this namespace keeps its own
        try:
            settings = dict(s.NamespaceUpdateInput().run_validation(exported))
        except serializers.ValidationError as exc:
            raise self.refuse(*messages(exc.detail, "namespace")) from None
        settings.pop("name", None)  # this namespace keeps its name too
        if self.apply_settings and settings:
            try:
                updated = services.namespace_update(namespace=self.namespace, changes=settings)
            except DjangoValidationError as exc:
                raise self.refuse(*messages(exc, "namespace")) from None
            for name in settings:  # the import goes on under them (dedupe among them)
                setattr(self.namespace, name, getattr(updated, name))

    def _memory(self, record: dict[str, Any]) -> None:
        data = self.valid(records.MemoryRecord, record)
        old = data.pop("id")
        if old in self.levels:
            raise self.refuse(f"id: Memory {old} appears twice.")
        level = data["classification"] = self.level(data, self.default_level)
        if data.get("embedding") is not None and data.get("embedding_model"):
            self.check_dimensions(data["embedding_model"], len(data["embedding"]))
        if "created_at" in data:
            data.setdefault("last_used_at", data["created_at"])
        memory = Memory(namespace=self.namespace, **data)
        try:
            # blank text, NUL: the rules every write keeps
            services.memory_validate(memory, fields=())
        except DjangoValidationError as exc:
            raise self.refuse(*messages(exc)) from None
        services.memory_derive(memory)
        self.levels[old] = level
        self.memories.append((self.line, old, memory))
        if len(self.memories) >= BATCH:
            self.flush_memories()

    def check_dimensions(self, model: str, size: int) -> None:
        """Vectors of one embedding model have one length in a namespace."""
        expected = self.dimensions.get(model)
        if expected is None:
            stored = (
                Memory.objects.filter(namespace=self.namespace, embedding_model=model)
                .exclude(embedding=None)
                .values_list("embedding", flat=True)
                .first()
            )
            expected = self.dimensions[model] = size if stored is None else len(stored)
        if size != expected:
            raise self.refuse(
                f"embedding: {size // 4} dimensions, but this namespace's {model} vectors "
                f"have {expected // 4}."
            )

    def _association(self, record: dict[str, Any]) -> None:
        data = self.valid(records.AssociationRecord, record)
        source, target = data["source"], data["target"]
        ends = max(self.seen(source, "source"), self.seen(target, "target"))
        # The stored level is the higher of the line's and its ends' (the database's
        # trigger sets the ends'; flush_links raises it to the line's).
        data["classification"] = max(self.level(data, ends), ends)
        data["ends"] = ends
        if source == target:
            raise self.refuse("target: A memory cannot be linked to itself.")
        if (source, target) in self.pairs:
            raise self.refuse("target: These memories are already linked.")
        self.pairs.add((source, target))
        self.links.append((self.line, data))
        if len(self.links) >= BATCH:
            self.flush_links()

    def name_entity(self, name: str, field: str, level: int, kind: str = "thing") -> str:
        """The key of a named entity, noted (or lowered to `level`) for writing."""
        try:
            key, display = entity_key(name)
        except ValueError as exc:
            raise self.refuse(f"{field}: {exc}") from None
        entity = self.entities.get(key)
        if entity is None:
            self.entities[key] = _Entity(self.line, display, kind, level)
            self.unwritten.append(key)
        elif level < entity.level:
            # As entity_get_or_create: named at a lower level, it is shown at that level,
            # in that spelling.
            entity.level, entity.display = level, display
        return key

    def _entity(self, record: dict[str, Any]) -> None:
        data = self.valid(records.EntityRecord, record)
        level = self.level(data, self.default_level)
        name = data.get("display_name") or data["name"]
        key = self.name_entity(name, "name", level, data["kind"])
        if "created_at" in data and self.entities[key].line == self.line:
            self.entities[key].created_at = data["created_at"]

    def _relation(self, record: dict[str, Any]) -> None:
        data = self.valid(records.RelationRecord, record)
        old = data.get("memory")
        memory_level = None if old is None else self.seen(old)
        default = self.default_level if memory_level is None else memory_level
        level = max(self.level(data, default), memory_level or 0)
        try:
            predicate = predicate_key(data["predicate"])
        except ValueError as exc:
            raise self.refuse(f"predicate: {exc}") from None
        subject = self.name_entity(data["subject"], "subject", level)
        obj = self.name_entity(data["object"], "object", level)
        triple = (subject, predicate, obj, level)
        if triple in self.triples:
            raise self.refuse("predicate: This relation already exists.")
        self.triples.add(triple)
        data.update(subject=subject, predicate=predicate, object=obj, classification=level)
        self.relations.append((self.line, data))
        if len(self.relations) >= BATCH:
            self.flush_relations()

    def _consolidation(self, record: dict[str, Any]) -> None:
        data = self.valid(records.ConsolidationRecord, record)
        ids = data.get("memory_ids", [])
        levels = [self.seen(old, "memory_ids") for old in ids]
        # A digest quotes its memories: it is at least as sensitive as the most sensitive.
        data["classification"] = max(self.level(data, 0), *levels, 0)
        if data["classification"] > self.ceiling:
            raise self.refuse("classification: Above this token's ceiling.")
        if self.digest_keys is None:
            self.digest_keys = set(
                Consolidation.objects.filter(namespace=self.namespace).values_list(
                    "period", "period_start", "topic"
                )
            )
        key = (data["period"], data["period_start"], data.get("topic", ""))
        if key in self.digest_keys:
            raise self.refuse("period_start: A digest of this period and topic exists already.")
        self.digest_keys.add(key)
        self.digests.append((self.line, data))
        if len(self.digests) >= BATCH:
            self.flush_digests()

    def _event(self, record: dict[str, Any]) -> None:
        data = self.valid(records.EventRecord, record)
        data["classification"] = self.level(data, self.seen(data["memory"]))
        self.events.append((self.line, data))
        if len(self.events) >= BATCH:
            self.flush_events()

    def _end(self, record: dict[str, Any]) -> None:
        self.expected_lines = self.valid(records.EndRecord, record)["lines"]
        self.ended = True

    # Writing, a chunk at a time.

    def write(self, rows: list[tuple[int, models.Model]], *, ids: bool = False) -> None:
        """INSERT the chunk's rows; a refusal by the database is traced to its line."""
        if not rows:
            return
        objs = [obj for _, obj in rows]
        try:
            with transaction.atomic():
                insert_new(objs, ids=ids)
        except DatabaseError as exc:
            model = type(objs[0])
            relations = [f.name for f in model._meta.concrete_fields if f.is_relation]
            for line, obj in rows:
                try:
                    obj.full_clean(exclude=relations, validate_unique=False)
                except DjangoValidationError as error:
                    raise ImportFailed(line, messages(error)) from exc
            raise ImportFailed(
                rows[0][0], f"The database refused lines {rows[0][0]} to {rows[-1][0]}: {exc}"
            ) from exc

    def not_written(self, kind: str, count: int = 1) -> None:
        """Records of a kind read but not written (a duplicate's): the counts say so."""
        if count:
            self.result.counts[kind] = self.result.counts.get(kind, 0) - count

    def live(self, memory: Memory) -> bool:
        """A memory line that, stored, would be live, current and unexpired."""
        return (
            memory.status in LIVE_STATUSES
            and (memory.valid_until is None or memory.valid_until > self.now)
            and (memory.expires_at is None or memory.expires_at > self.now)
        )

    def dedupe_keys(self, batch: list[tuple[int, int, Memory]]) -> list[str | None]:
        """The content key of each line that may be a duplicate (None: it is stored as it
        is), with the stored memories answering the keys not seen before (one query)."""
        if self.namespace.dedupe == Namespace.Dedupe.OFF:
            return [None] * len(batch)
        keys = [memory.content_key if self.live(memory) else None for _, _, memory in batch]
        wanted = sorted({key for key in keys if key and key not in self.answers})
        if wanted:
            pairs = [(self.namespace.pk, key) for key in wanted]
            duplicates_lock(pairs)
            found = live_duplicates(pairs, ceiling=self.ceiling, now=self.now)
            for (_, key), memory in found.items():
                self.answers[key] = (memory.pk, memory.classification)
                self.stored.add(memory.pk)
        return keys

    def flush_memories(self) -> None:
        if not self.memories:
            return
        batch, self.memories = self.memories, []
        keys = self.dedupe_keys(batch)
        written: list[tuple[int, int, Memory]] = []
        holders: dict[str, Memory] = {}  # key -> the line of this batch that holds it
        answered: list[tuple[int, str]] = []  # (old id, key)
        for entry, key in zip(batch, keys, strict=True):
            if key is not None and (key in self.answers or key in holders):
                answered.append((entry[1], key))
            else:
                written.append(entry)
                if key is not None:
                    holders[key] = entry[2]
        self.write([(line, memory) for line, _, memory in written], ids=True)
        for _, old, memory in written:
            self.new_ids[old] = memory.pk
            self.created.append(memory.pk)
        for key, memory in holders.items():
            self.answers[key] = (memory.pk, memory.classification)
        for old, key in answered:
            answer = self.answers[key]
            self.new_ids[old] = answer[0]
            self.deduplicated.add(old)
            self.uses[answer] += 1
        self.not_written("memory", len(answered))
        self.result.counts["deduplicated"] += len(answered)
        if written:
            # Recall gives imported vectors their sign codes, which it ranks first.
            memories_imported.send(sender=Memory, memories=[memory for _, _, memory in written])

    def flush_links(self) -> None:
        self.flush_memories()
        ids = self.new_ids
        pairs = [(ids[data["source"]], ids[data["target"]]) for _, data in self.links]
        # Between two stored memories (both ends duplicates) a link may be there already.
        between = [pair for pair in pairs if pair[0] in self.stored and pair[1] in self.stored]
        there: set[tuple[int, int]] = set()
        if between:
            there = set(
                Association.objects.filter(
                    source_id__in={source for source, _ in between},
                    target_id__in={target for _, target in between},
                ).values_list("source_id", "target_id")
            )
        rows = []
        raise_to: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for (line, data), pair in zip(self.links, pairs, strict=True):
            # A duplicate's links move to the memory it is: none to itself, none twice.
            if pair[0] == pair[1] or pair in self.link_pairs or pair in there:
                continue
            self.link_pairs.add(pair)
            association = Association(
                namespace=self.namespace,
                source_id=pair[0],
                target_id=pair[1],
                weight=data["weight"],
                kind=data["kind"],
                created_at=data.get("created_at") or timezone.now(),
            )
            rows.append((line, association))
            if data["classification"] > data["ends"]:
                raise_to[data["classification"]].append(pair)
        self.not_written("association", len(self.links) - len(rows))
        # Supersession's one rule (services.supersedes_cycles): no cycle of replacements,
        # through the stored links, the file's earlier ones and this chunk's.
        replacing = [(line, a) for line, a in rows if a.kind == services.SUPERSEDES]
        cycles = services.supersedes_cycles([(a.source_id, a.target_id) for _, a in replacing])
        if cycles:
            raise ImportFailed(replacing[cycles[-1]][0], [f"target: {services.SUPERSEDE_CYCLE}"])
        self.write(rows)
        # A link written while an end was more sensitive keeps that level (the insert's
        # trigger gave it its ends' levels now): one UPDATE per level, at most four.
        for level, level_pairs in sorted(raise_to.items()):
            for start in range(0, len(level_pairs), RAISE_CHUNK):
                chunk = level_pairs[start : start + RAISE_CHUNK]
                Association.objects.filter(
                    reduce(or_, (Q(source_id=a, target_id=b) for a, b in chunk)),
                    namespace=self.namespace,
                    classification__lt=level,
                ).update(classification=level)
        self.links = []

    def flush_entities(self) -> None:
        """Find the namespace's entities of the new names (one query), create the rest."""
        if not self.unwritten:
            return
        keys, self.unwritten = self.unwritten, []
        found = Entity.objects.filter(namespace=self.namespace, name__in=keys).values_list(
            "name", "pk", "classification"
        )
        for key, pk, level in found:
            entity = self.entities[key]
            entity.pk, entity.stored_level = pk, level
            self.found_entities.add(pk)
        rows = []
        for key in keys:
            entity = self.entities[key]
            if entity.pk is None:
                entity.stored_level = entity.level
                row = Entity(
                    namespace=self.namespace,
                    name=key,
                    display_name=entity.display,
                    kind=entity.kind,
                    classification=entity.level,
                    created_at=entity.created_at or timezone.now(),
                )
                rows.append((entity.line, row))
        self.write(rows, ids=True)
        for _, row in rows:
            self.entities[row.name].pk = row.pk

    def flush_relations(self) -> None:
        self.flush_memories()
        self.flush_entities()
        entities, ids = self.entities, self.new_ids
        if self.found_entities:
            # Facts the namespace holds already, between entities it already had.
            known = self.found_entities
            pending = [
                (entities[d["subject"]].pk, d["predicate"], entities[d["object"]].pk)
                for _, d in self.relations
            ]
            pending = [p for p in pending if p[0] in known and p[2] in known]
            existing = set()
            if pending:
                existing = set(
                    Relation.objects.filter(
                        subject_id__in={p[0] for p in pending},
                        object_id__in={p[2] for p in pending},
                    ).values_list("subject_id", "predicate", "object_id", "classification")
                )
            kept = []
            for line, d in self.relations:
                fact = (entities[d["subject"]].pk, d["predicate"], entities[d["object"]].pk)
                if (*fact, d["classification"]) in existing:
                    if d.get("memory") in self.deduplicated:
                        continue  # drawn from a text the namespace holds: it is there
                    raise ImportFailed(line, "predicate: This relation already exists.")
                kept.append((line, d))
            self.not_written("relation", len(self.relations) - len(kept))
            self.relations = kept
        rows = [
            (
                line,
                Relation(
                    namespace=self.namespace,
                    subject_id=entities[d["subject"]].pk,
                    predicate=d["predicate"],
                    object_id=entities[d["object"]].pk,
                    memory_id=None if d.get("memory") is None else ids[d["memory"]],
                    weight=d["weight"],
                    classification=d["classification"],
                    created_at=d.get("created_at") or timezone.now(),
                ),
            )
            for line, d in self.relations
        ]
        self.write(rows)
        self.relations = []

    def flush_digests(self) -> None:
        self.flush_memories()
        ids = self.new_ids
        rows = []
        for line, data in self.digests:
            # dict.fromkeys: two lines answered by one memory name it once
            data["memory_ids"] = list(dict.fromkeys(ids[old] for old in data.get("memory_ids", [])))
            data["content_hash"] = content_hash(data["text"])
            rows.append((line, Consolidation(namespace=self.namespace, **data)))
        self.write(rows)
        self.digests = []

    def flush_events(self) -> None:
        self.flush_memories()
        ids = self.new_ids
        rows = []
        for line, data in self.events:
            old = data.pop("memory")
            if old in self.deduplicated:
                continue  # the other copy's history
            new = ids[old]
            data.setdefault("source", "import")
            data.setdefault("created_at", timezone.now())
            rows.append(
                (line, MemoryEvent(namespace=self.namespace, memory_id=new, memory_ref=new, **data))
            )
        self.not_written("event", len(self.events) - len(rows))
        self.write(rows)
        self.events = []

    def finish(self) -> None:
        self.flush_memories()
        self.flush_links()
        # The file's links are in; the links of its sessions it lacks are added (a file
        # written by hand has session ids and no links; an export has both). Duplicates
        # link nothing, as on the API.
        services.session_links_create(self.created)
        self.near_index()
        self.count_uses()
        self.flush_relations()
        self.flush_entities()  # entities no relation named
        self.flush_digests()
        for part in self.parts:
            part.finish()
        self.flush_events()
        # Entities named at a lower level than they were stored at (found in the namespace,
        # or lowered by a later line): rare, so one UPDATE each.
        for entity in self.entities.values():
            if entity.pk is not None and entity.level < entity.stored_level:
                Entity.objects.filter(pk=entity.pk).update(
                    classification=entity.level, display_name=entity.display
                )

    def near_index(self) -> None:
        """The created memories' sketches and near_duplicate links (to stored memories and
        to each other), BATCH at a time, each batch loaded in one query."""
        for start in range(0, len(self.created), BATCH):
            ids = self.created[start : start + BATCH]
            memories = list(
                Memory.objects.filter(pk__in=ids)
                .only("id", "namespace_id", "content", "signature")
                .order_by("id")
            )
            for memory in memories:
                memory.namespace = self.namespace  # what near_matches reads: no query each
            services.near_index(memories, ceiling=self.ceiling, now=self.now)

    def count_uses(self) -> None:
        """Each deduplicated line is a use of the memory that answered it (as on the API)."""
        uses = [
            (Memory(pk=pk, namespace_id=self.namespace.pk, classification=level), count)
            for (pk, level), count in self.uses.items()
        ]
        for start in range(0, len(uses), BATCH):
            count_duplicate_uses(
                dict(uses[start : start + BATCH]), actor=self.actor, source="import"
            )


def namespace_import(
    *,
    namespace: Namespace,
    lines: Iterable[str | bytes],
    ceiling: int = Classification.RESTRICTED,
    actor=None,
    apply_settings: bool = False,
) -> ImportResult:
    """Import an export into a namespace, all or nothing; raises ImportFailed naming the line.

    `lines` may be text or bytes (UTF-8, refused when invalid), one JSON object each.
    """
    importer = _Importer(
        namespace=namespace, ceiling=ceiling, apply_settings=apply_settings, actor=actor
    )
    number = 0
    with transaction.atomic():
        for number, raw in enumerate(lines, start=1):
            importer.line = number
            if not raw.strip():
                raise ImportFailed(number, "An empty line.")
            try:
                record = loads(raw)
            except JsonInputError as exc:
                raise ImportFailed(number, str(exc)) from None
            importer.handle(record)
        if not importer.ended:
            raise ImportFailed(number + 1, "The file ends without its end record (truncated?).")
        if importer.expected_lines != number:
            raise ImportFailed(
                number,
                f"lines: The end record counts {importer.expected_lines} lines, "
                f"the file has {number} (truncated or edited?).",
            )
        importer.finish()
    return importer.result
