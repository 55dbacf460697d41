"""Writes to memories. Every write is atomic, keyword-only and records a history event."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.models.functions import Least
from django.utils import timezone
from django.utils.text import slugify

from config.dberrors import integrity_kind
from memories.bulk import insert_new, insert_rows, writer
from memories.hooks import memories_created
from memories.models import (
    ApiToken,
    Association,
    Classification,
    Entity,
    Memory,
    MemoryEvent,
    Namespace,
    Relation,
)
from memories.signatures import simhash_folded
from memories.text import fold

# A memory's fields by who writes them: the one declaration every list of memory fields is
# built from (the API's input and output, the admin, the export, the dashboard form), each
# list as these groups plus or minus named sets; tests/memories/test_field_lists.py pins
# every list and checks that the groups are exactly Memory's fields.
#
# Set by a caller on create and changed on update.
EDITABLE_FIELDS = (
    "content",
    "content_original",
    "language",
    "keywords",
    "topic",
    "cue",
    "memory_type",
    "tier",
    "classification",
    "strength",
    "utility",
    "confidence",
    "emotion_score",
    "emotion_tags",
    "trust",
    "credibility",
    "relevance_score",
    "importance_flags",
    "expires_at",
)
# Set once, on create: the id and namespace by the server, created_at by a caller or now.
IDENTITY_FIELDS = ("id", "namespace", "created_at")
# The server's: lifecycle, reinforcement counters and their times.
SERVER_FIELDS = (
    "storage",
    "status",
    "status_changed_at",
    "promoted_at",
    "forgotten_at",
    "forgotten_reason",
    "forgotten_score",
    "stability",
    "use_count",
    "last_used_at",
    "access_count",
    "last_accessed_at",
    "recall_count",
    "last_recalled_at",
    "recall_timestamps",
    "session_ids",
    "updated_at",
)
# Computed from the text by every write of it (_derive), never supplied.
DERIVED_FIELDS = ("search_text", "search_original", "signature")
# The vector: written by the embedding backfill, carried by exports.
EMBEDDING_FIELDS = ("embedding", "embedding_model")


def in_model_order(names: Iterable[str]) -> tuple[str, ...]:
    """The named memory fields in Memory's order (the order of exports and the API output)."""
    wanted = set(names)
    return tuple(field.name for field in Memory._meta.concrete_fields if field.name in wanted)


# What history records of a memory: everything a person could want to see change.
SNAPSHOT_FIELDS = (
    *EDITABLE_FIELDS,
    "status",
    "storage",
    "stability",
    "use_count",
    "forgotten_reason",
)
_EDITABLE = frozenset(EDITABLE_FIELDS)
# Set on every new memory by memory_build, whatever the caller passed.
_ALWAYS_SUPPLIED = ("content", "keywords", "created_at", "last_used_at")
STRENGTH_BOOST_FACTOR = 1.1
MAX_STRENGTH = 2.0


@contextmanager
def _unique_or(field: str, message: str) -> Iterator[None]:
    """Run an insert in a savepoint; a unique violation becomes {field: message}.

    The check before an insert ("already exists?") cannot see a concurrent writer's row
    until it commits, so two racing duplicates both pass it; the unique constraint stops
    the second, and this gives it the answer a sequential duplicate gets instead of an
    IntegrityError (a 500). The savepoint keeps a caller's transaction usable. Other
    integrity errors (check, not-null, foreign key) pass through unchanged.
    """
    try:
        with transaction.atomic():
            yield
    except IntegrityError as error:
        if integrity_kind(error) != "unique":
            raise
        raise ValidationError({field: message}) from error


def _snapshot(memory: Memory, fields: Iterable[str] = SNAPSHOT_FIELDS) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for field in fields:
        value = getattr(memory, field)
        if field == "classification":
            value = Classification(value).label
        elif isinstance(value, datetime):
            value = value.isoformat()
        data[field] = value
    return data


def _record(
    *,
    memory: Memory,
    kind: str,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    actor=None,
    source: str = "system",
    now: datetime | None = None,
    classification: int | None = None,
) -> MemoryEvent:
    """One history event. It carries the memory's level as it is written (or the higher
    level of a change of level): what is written while a memory sits above a caller's
    ceiling stays hidden from that caller, whatever the memory's level later."""
    return MemoryEvent.objects.create(
        namespace_id=memory.namespace_id,
        memory=memory,
        memory_ref=memory.pk,
        kind=kind,
        before=before or {},
        after=after or {},
        actor=actor,
        source=source,
        classification=memory.classification if classification is None else classification,
        created_at=now or timezone.now(),
    )


def _clean_keywords(keywords: Any) -> list[str]:
    if keywords is None:
        return []
    if not isinstance(keywords, list | tuple) or not all(isinstance(k, str) for k in keywords):
        raise ValidationError({"keywords": "Must be a list of strings."})
    return [k.strip() for k in keywords if k.strip()]


def _derive(memory: Memory) -> None:
    """Compute what every write of the text must recompute: search fields and signature."""
    keywords = " ".join(memory.keywords)
    memory.search_text = fold(f"{memory.content} {keywords}".strip())
    memory.search_original = fold(memory.content_original)
    # The signature's words are the search text's: fold once, not twice.
    memory.signature = simhash_folded(memory.search_text, bits=settings.SIGNATURE_BITS)


TEXT_FIELDS = ("content", "content_original", "language", "topic", "embedding_model")


def _validate(memory: Memory, fields: Iterable[str] | None = None) -> None:
    """Refuse blank content and NUL characters, then run model field validation.

    `fields` limits field validation to the fields a caller supplied; a new memory's other
    fields hold the model's defaults, which are valid by construction. None validates
    every field (updates and imports, where the other values come from elsewhere).
    """
    if not memory.content or not memory.content.strip():
        raise ValidationError({"content": "This field may not be blank."})
    # PostgreSQL text cannot hold NUL; refuse it on every engine so behaviour is the same.
    for name in TEXT_FIELDS:
        if "\x00" in (getattr(memory, name) or ""):
            raise ValidationError({name: "Null characters are not allowed."})
    for name in ("keywords", "emotion_tags", "importance_flags", "session_ids"):
        if any("\x00" in str(item) for item in getattr(memory, name) or []):
            raise ValidationError({name: "Null characters are not allowed."})
    # Search fields and signature are derived, never supplied; the rest is model validation.
    # The field validators carry the same ranges as Memory's check constraints, which the
    # database enforces anyway; validating the constraints here would cost three queries
    # per memory (80% of a bulk create's time).
    if fields is None:
        memory.full_clean(exclude=["namespace", *DERIVED_FIELDS], validate_constraints=False)
    elif names := set(fields):
        memory.clean_fields(exclude=[f.name for f in Memory._meta.fields if f.name not in names])


def _new_memory(namespace: Namespace, values: dict[str, Any]) -> Memory:
    """An unsaved memory of the namespace with these field values (Model.__init__'s own)."""
    return Memory(namespace=namespace, **values)


def memory_build(
    *,
    namespace: Namespace,
    content: str,
    keywords: list[str] | None = None,
    created_at: datetime | None = None,
    prevalidated: bool = False,
    **fields: Any,
) -> Memory:
    """An unsaved, validated memory with its derived fields (used by create and bulk).

    `prevalidated`: the values come from memories.serializers.MemoryCreateInput, whose
    rules include every rule of the model fields (tests/api/test_memory_input.py checks
    they stay so), so model field validation is skipped; the blank-content and NUL checks
    still run.
    """
    unknown = set(fields) - _EDITABLE
    if unknown:
        raise ValidationError({name: "Unknown field." for name in sorted(unknown)})
    now = created_at or timezone.now()
    memory = _new_memory(
        namespace,
        {
            **fields,
            "content": content,
            "keywords": _clean_keywords(keywords),
            "created_at": now,
            "last_used_at": now,
        },
    )
    _validate(memory, fields=() if prevalidated else (*_ALWAYS_SUPPLIED, *fields))
    _derive(memory)
    return memory


@transaction.atomic
def memory_create(
    *,
    namespace: Namespace,
    content: str,
    keywords: list[str] | None = None,
    created_at: datetime | None = None,
    actor=None,
    source: str = "system",
    prevalidated: bool = False,
    **fields: Any,
) -> Memory:
    """Store one memory in a namespace. `fields` are any of EDITABLE_FIELDS;
    `prevalidated` as in memory_build."""
    memory = memory_build(
        namespace=namespace,
        content=content,
        keywords=keywords,
        created_at=created_at,
        prevalidated=prevalidated,
        **fields,
    )
    memory.save(force_insert=True)
    _record(
        memory=memory,
        kind=MemoryEvent.Kind.CREATED,
        after=_snapshot(memory),
        actor=actor,
        source=source,
        now=memory.created_at,
    )
    memories_created.send(sender=Memory, memories=[memory])
    return memory


@transaction.atomic
def memory_update(
    *,
    memory: Memory,
    changes: Mapping[str, Any],
    actor=None,
    source: str = "system",
) -> Memory:
    """Change editable fields of a memory, recording before and after."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise ValidationError({name: "Unknown or read-only field." for name in sorted(unknown)})
    locked = Memory.objects.select_for_update().get(pk=memory.pk)
    changed = [field for field, value in changes.items() if getattr(locked, field) != value]
    if not changed:
        return locked
    before = _snapshot(locked, changed)
    level_before = locked.classification
    for field in changed:
        value = changes[field]
        setattr(locked, field, _clean_keywords(value) if field == "keywords" else value)
    _validate(locked)
    update_fields = [*changed, "updated_at"]
    if {"content", "content_original", "keywords"} & set(changed):
        _derive(locked)
        update_fields += ["search_text", "search_original", "signature"]
    if "content" in changed and locked.embedding is not None:
        # The vector described the old text; the backfill embeds the new one.
        locked.embedding, locked.embedding_model = None, ""
        update_fields += ["embedding", "embedding_model"]
    locked.save(update_fields=update_fields)
    if locked.classification > level_before:
        # What was derived from the memory is as sensitive as the memory now is.
        Relation.objects.filter(memory=locked, classification__lt=locked.classification).update(
            classification=locked.classification
        )
    _record(
        memory=locked,
        kind=MemoryEvent.Kind.UPDATED,
        before=before,
        after=_snapshot(locked, changed),
        actor=actor,
        source=source,
        classification=max(level_before, locked.classification),
    )
    return locked


@transaction.atomic
def memory_forget(
    *,
    memory: Memory,
    reason: str,
    score: float | None = None,
    actor=None,
    source: str = "system",
    now: datetime | None = None,
) -> Memory:
    """Mark a memory forgotten (hidden from recall and review, restorable until purged)."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why the memory is forgotten."})
    if len(reason) > 200:
        raise ValidationError({"reason": "At most 200 characters."})
    now = now or timezone.now()
    locked = Memory.objects.select_for_update().get(pk=memory.pk)
    if locked.status == Memory.Status.FORGOTTEN:
        return locked
    before = _snapshot(locked, ["status"])
    locked.status = Memory.Status.FORGOTTEN
    locked.status_changed_at = now
    locked.forgotten_at = now
    locked.forgotten_reason = reason
    locked.forgotten_score = score
    locked.save(
        update_fields=[
            "status",
            "status_changed_at",
            "forgotten_at",
            "forgotten_reason",
            "forgotten_score",
            "updated_at",
        ]
    )
    _record(
        memory=locked,
        kind=MemoryEvent.Kind.FORGOTTEN,
        before=before,
        after={"status": locked.status, "reason": reason, "score": score},
        actor=actor,
        source=source,
        now=now,
    )
    return locked


@transaction.atomic
def memory_restore(
    *, memory: Memory, actor=None, source: str = "system", now: datetime | None = None
) -> Memory:
    """Bring back a forgotten or archived memory: promoted if its tier is long-term or core."""
    now = now or timezone.now()
    locked = Memory.objects.select_for_update().get(pk=memory.pk)
    if locked.status not in (Memory.Status.FORGOTTEN, Memory.Status.ARCHIVED):
        return locked
    before = _snapshot(locked, ["status", "forgotten_reason"])
    locked.status = (
        Memory.Status.ACTIVE if locked.tier == Memory.Tier.SHORT_TERM else Memory.Status.PROMOTED
    )
    locked.status_changed_at = now
    locked.forgotten_at = None
    locked.forgotten_reason = ""
    locked.forgotten_score = None
    # A restored memory starts a fresh decay clock, or the next sweep would forget it again.
    locked.last_used_at = now
    locked.save(
        update_fields=[
            "status",
            "status_changed_at",
            "forgotten_at",
            "forgotten_reason",
            "forgotten_score",
            "last_used_at",
            "updated_at",
        ]
    )
    _record(
        memory=locked,
        kind=MemoryEvent.Kind.RESTORED,
        before=before,
        after={"status": locked.status},
        actor=actor,
        source=source,
        now=now,
    )
    return locked


@transaction.atomic
def memory_purge(*, memory: Memory, actor=None, source: str = "system") -> int:
    """Delete a memory for good (its card, links and relations' source go with it).

    The history keeps a 'purged' event with the id, so the deletion itself is auditable.
    Returns the purged memory's id.
    """
    memory_id = memory.pk
    _record(
        memory=memory,
        kind=MemoryEvent.Kind.PURGED,
        before=_snapshot(memory, ["status", "topic"]),
        actor=actor,
        source=source,
    )
    memory.delete()
    return memory_id


@transaction.atomic
def memory_touch(
    *,
    memory: Memory,
    boost_strength: bool = False,
    actor=None,
    source: str = "system",
    now: datetime | None = None,
) -> Memory:
    """Record a use (seed 003): use_count + 1, last_used_at = now, optional strength x1.1.

    Written with F() expressions so concurrent touches never lose each other's counts.
    """
    now = now or timezone.now()
    updates: dict[str, Any] = {"use_count": F("use_count") + 1, "last_used_at": now}
    if boost_strength:
        updates["strength"] = Least(F("strength") * STRENGTH_BOOST_FACTOR, MAX_STRENGTH)
    Memory.objects.filter(pk=memory.pk).update(**updates)
    memory.refresh_from_db(fields=["use_count", "last_used_at", "strength"])
    _record(
        memory=memory,
        kind=MemoryEvent.Kind.TOUCHED,
        after={
            "use_count": memory.use_count,
            "strength": memory.strength,
            "boost_strength": boost_strength,
        },
        actor=actor,
        source=source,
        now=now,
    )
    return memory


@transaction.atomic
def memory_promote(
    *, memory: Memory, actor=None, source: str = "system", now: datetime | None = None
) -> Memory:
    """Promote a short-term memory to long-term (seed 003), by hand or by the sweep."""
    now = now or timezone.now()
    locked = Memory.objects.select_for_update().get(pk=memory.pk)
    if locked.tier != Memory.Tier.SHORT_TERM or locked.status != Memory.Status.ACTIVE:
        return locked
    before = _snapshot(locked, ["tier", "status"])
    locked.tier = Memory.Tier.LONG_TERM
    locked.status = Memory.Status.PROMOTED
    locked.status_changed_at = now
    locked.promoted_at = now
    locked.save(update_fields=["tier", "status", "status_changed_at", "promoted_at", "updated_at"])
    _record(
        memory=locked,
        kind=MemoryEvent.Kind.PROMOTED,
        before=before,
        after=_snapshot(locked, ["tier", "status"]),
        actor=actor,
        source=source,
        now=now,
    )
    return locked


def namespace_create(
    *,
    owner,
    name: str,
    slug: str | None = None,
    mode: str = Namespace.Mode.PERSONAL,
    **fields: Any,
) -> Namespace:
    """Create a namespace for a user; the slug defaults to the slugified name."""
    namespace = Namespace(owner=owner, name=name, slug=slug or slugify(name), mode=mode, **fields)
    taken = "You already have a namespace with this slug."
    if Namespace.objects.filter(owner=owner, slug=namespace.slug).exists():
        raise ValidationError({"slug": taken})
    # The one constraint, (owner, slug), is checked just above and at the insert.
    namespace.full_clean(validate_constraints=False)
    with _unique_or("slug", taken):
        namespace.save(force_insert=True)
    return namespace


TOKEN_PREFIX_BYTES = 6
TOKEN_SECRET_BYTES = 32


def token_hash(secret: str) -> str:
    """SHA-256 of the whole token: tokens are 256-bit random, so no salt or stretching."""
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def token_create(
    *,
    owner,
    name: str,
    namespaces: Iterable[Namespace] = (),
    all_namespaces: bool = False,
    access: str = "read",
    ceiling: int = Classification.INTERNAL,
    expires_at: datetime | None = None,
) -> tuple[Any, str]:
    """Create an API token; returns (token, secret). The secret is never stored or shown again."""
    namespaces = list(namespaces)
    if any(ns.owner_id != owner.pk for ns in namespaces):
        raise ValidationError({"namespaces": "Unknown namespace."})
    if not all_namespaces and not namespaces:
        raise ValidationError({"namespaces": "Choose at least one namespace, or all_namespaces."})
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": "Must be in the future."})
    prefix = secrets.token_hex(TOKEN_PREFIX_BYTES)
    secret = f"eng_{prefix}_{secrets.token_urlsafe(TOKEN_SECRET_BYTES)}"
    token = ApiToken(
        owner=owner,
        name=name.strip(),
        prefix=prefix,
        secret_hash=token_hash(secret),
        all_namespaces=all_namespaces,
        access=access,
        ceiling=ceiling,
        expires_at=expires_at,
    )
    token.full_clean()
    token.save(force_insert=True)
    if namespaces:
        token.namespaces.set(namespaces)
    return token, secret


def token_revoke(*, token, now: datetime | None = None) -> None:
    """Revoke a token; the next request that presents it is refused."""
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=now or timezone.now()
    )


# Memories per chunk of a bulk create: built, then written while the next chunk is built.
BULK_CHUNK = 100
_EVENT_COLUMNS = (
    "namespace_id",
    "memory_id",
    "memory_ref",
    "kind",
    "after",
    "actor_id",
    "source",
    "classification",
    "created_at",
)


def _created_event_rows(memories: Iterable[Memory], actor, source: str) -> list[tuple]:
    actor_id = actor.pk if actor is not None else None
    return [
        (
            memory.namespace_id,
            memory.pk,
            memory.pk,
            MemoryEvent.Kind.CREATED,
            _snapshot(memory),
            actor_id,
            source,
            memory.classification,
            memory.created_at,
        )
        for memory in memories
    ]


def _events_and_announce(built: list[Memory], event_rows: list[tuple]) -> None:
    insert_rows(MemoryEvent, _EVENT_COLUMNS, event_rows)
    memories_created.send(sender=Memory, memories=built)


@transaction.atomic
def memory_bulk_create(
    *,
    items: list[dict[str, Any]],
    actor=None,
    source: str = "system",
    prevalidated: bool = False,
) -> list[Memory]:
    """Create many memories at once, all or nothing.

    Each item holds `namespace` (a Namespace) and create fields. Every item is validated;
    the errors of all items are raised as one ValidationError whose keys are
    "<index>.<field>" (or "<index>" for an error of the whole item), so a caller can
    report them all, and then nothing is written. `prevalidated` as in memory_build.

    Memories, their 'created' events and their cards are written set-based
    (memories.bulk): valid memories are streamed in chunks of BULK_CHUNK into one COPY on
    PostgreSQL, which the server works through while the next chunk is built. The first
    invalid item stops the writing (the rest are still validated, for their errors) and
    the transaction undoes what was sent.
    """
    built: list[Memory] = []
    event_rows: list[tuple] = []
    errors: dict[str, list[str]] = {}
    with writer(Memory, ids=True, expected=len(items)) as write:
        chunk: list[Memory] = []
        for index, item in enumerate(items):
            try:
                memory = memory_build(**item, prevalidated=prevalidated)
            except ValidationError as exc:
                if hasattr(exc, "error_dict"):
                    for field, messages in exc.message_dict.items():
                        errors[f"{index}.{field}"] = messages
                else:
                    errors[str(index)] = exc.messages
                continue
            if errors:
                continue
            chunk.append(memory)
            if len(chunk) == BULK_CHUNK or index == len(items) - 1:
                write(chunk)
                built += chunk
                event_rows += _created_event_rows(chunk, actor, source)
                chunk = []
        if errors:
            raise ValidationError(errors)
    _events_and_announce(built, event_rows)
    return built


@transaction.atomic
def memories_insert(built: list[Memory], *, actor=None, source: str = "system") -> None:
    """Write built (validated, derived) memories with their 'created' events and cards,
    set-based, all or nothing. The benchmark's corpus loader uses it."""
    insert_new(built, ids=True)
    _events_and_announce(built, _created_event_rows(built, actor, source))


NAMESPACE_EDITABLE_FIELDS = (
    "name",
    "description",
    "mode",
    "weight_similarity",
    "weight_recency",
    "weight_utility",
    "weight_confidence",
    "decay_model",
    "decay_half_life_days",
    "decay_beta",
    "decay_power_alpha",
    "decay_fast_half_life_days",
    "decay_slow_half_life_days",
    "decay_fast_weight",
    "scheduler",
    "desired_retention",
    "new_cards_per_day",
)


@transaction.atomic
def namespace_update(*, namespace: Namespace, changes: Mapping[str, Any]) -> Namespace:
    """Change a namespace's name or settings (its slug and owner never change)."""
    unknown = set(changes) - set(NAMESPACE_EDITABLE_FIELDS)
    if unknown:
        raise ValidationError({name: "Unknown or read-only field." for name in sorted(unknown)})
    locked = Namespace.objects.select_for_update().get(pk=namespace.pk)
    for field, value in changes.items():
        setattr(locked, field, value)
    locked.full_clean()
    if changes:
        locked.save(update_fields=list(changes))
    return locked


def association_create(
    *, source: Memory, target: Memory, weight: float = 0.5, kind: str = "related"
) -> Association:
    """Link two memories of one namespace."""
    if source.namespace_id != target.namespace_id:
        raise ValidationError({"target": "Both memories must be in the same namespace."})
    if source.pk == target.pk:
        raise ValidationError({"target": "A memory cannot be linked to itself."})
    linked = "These memories are already linked."
    if Association.objects.filter(source=source, target=target).exists():
        raise ValidationError({"target": linked})
    association = Association(
        namespace_id=source.namespace_id, source=source, target=target, weight=weight, kind=kind
    )
    association.full_clean(exclude=["namespace", "source", "target"])
    with _unique_or("target", linked):
        association.save(force_insert=True)
    return association


def entity_get_or_create(
    *,
    namespace: Namespace,
    name: str,
    kind: str = "thing",
    classification: int = Classification.INTERNAL,
) -> Entity:
    """The namespace's entity of that (folded) name, created if new.

    An entity is as visible as the least sensitive thing that names it: declaring a name
    at a lower level than the entity's lowers it, with the caller's spelling, so a name
    first written by a hidden relation is never shown in the hidden writer's form.
    """
    display = " ".join(name.split())
    key = fold(display)
    if not key:
        raise ValidationError({"name": "This field may not be blank."})
    if len(key) > 200:
        raise ValidationError({"name": "At most 200 characters."})
    entity, created = Entity.objects.get_or_create(
        namespace=namespace,
        name=key,
        defaults={"display_name": display, "kind": kind, "classification": classification},
    )
    if not created and entity.classification > classification:
        Entity.objects.filter(pk=entity.pk, classification__gt=classification).update(
            classification=classification, display_name=display
        )
        entity.refresh_from_db(fields=["classification", "display_name"])
    return entity


@transaction.atomic
def relation_create(
    *,
    namespace: Namespace,
    subject: str,
    predicate: str,
    object: str,
    memory: Memory | None = None,
    weight: float = 0.6,
    classification: int | None = None,
) -> Relation:
    """subject -[predicate]-> object between entities named by text, created as needed.

    The relation's level is its memory's, or `classification` if higher; without either,
    internal (the default level of a new memory). Each level holds its own copy of a
    fact, so asserting one that exists only above the caller's level creates it anew.
    """
    predicate = "_".join(fold(predicate).split())
    if not predicate:
        raise ValidationError({"predicate": "This field may not be blank."})
    if memory is not None and memory.namespace_id != namespace.pk:
        raise ValidationError({"memory": "Must be a memory of the same namespace."})
    if classification is None:
        classification = Classification.INTERNAL if memory is None else Classification.PUBLIC
    level = max(classification, memory.classification if memory is not None else 0)
    subject_entity = entity_get_or_create(namespace=namespace, name=subject, classification=level)
    object_entity = entity_get_or_create(namespace=namespace, name=object, classification=level)
    duplicate = ValidationError({"predicate": "This relation already exists."})
    if Relation.objects.filter(
        subject=subject_entity, predicate=predicate, object=object_entity, classification=level
    ).exists():
        raise duplicate
    relation = Relation(
        namespace=namespace,
        subject=subject_entity,
        predicate=predicate,
        object=object_entity,
        memory=memory,
        weight=weight,
        classification=level,
    )
    relation.full_clean(exclude=["namespace", "subject", "object", "memory"], validate_unique=False)
    try:
        with transaction.atomic():  # a concurrent writer of the same fact: the same answer
            relation.save(force_insert=True)
    except IntegrityError:
        raise duplicate from None
    return relation
