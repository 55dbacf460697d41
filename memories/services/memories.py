"""Writes to memories: build, create (one or in bulk), update, forget, restore, purge, touch
and promote. Every write is atomic, keyword-only and records a history event."""

from __future__ import annotations

import copy
import functools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Least
from django.utils import timezone

from memories.bulk import insert_new, writer
from memories.hooks import memories_created
from memories.models import (
    LIVE_STATUSES,
    Classification,
    Memory,
    MemoryEvent,
    Namespace,
    Relation,
)
from memories.services.duplicates import count_duplicate_uses, duplicates_lock, live_duplicates
from memories.services.events import (
    created_event_rows,
    memory_event_record,
    memory_events_insert,
    memory_snapshot,
)
from memories.services.fields import (
    CREATE_ONLY_FIELDS,
    DERIVED_FIELDS,
    EDITABLE_FIELDS,
    TEXT_FIELDS,
)
from memories.services.near_duplicates import (
    near_index,
    near_index_later,
    near_lock,
    near_matches,
    near_reindex,
    refuses,
    sketches,
    sketches_insert,
)
from memories.services.sessions import linked_sessions, session_links_create, sessions_lock
from memories.services.supersede import (
    memories_supersede,
    supersession_release,
    supersession_resume,
)
from memories.services.uses import uses_reactivate, uses_record
from memories.signatures import simhash_folded
from memories.text import cjk_tokens, content_key, fold

_EDITABLE = frozenset(EDITABLE_FIELDS)
# Set on every new memory by memory_build, whatever the caller passed.
_ALWAYS_SUPPLIED = ("content", "keywords", "created_at", "last_used_at")
STRENGTH_BOOST_FACTOR = 1.1
MAX_STRENGTH = 2.0


def _clean_keywords(keywords: Any) -> list[str]:
    if keywords is None:
        return []
    if not isinstance(keywords, list | tuple) or not all(isinstance(k, str) for k in keywords):
        raise ValidationError({"keywords": "Must be a list of strings."})
    return [k.strip() for k in keywords if k.strip()]


def memory_derive(memory: Memory) -> None:
    """Compute what every write of the text must recompute (DERIVED_FIELDS): search fields,
    signature and content key."""
    keywords = " ".join(memory.keywords)
    memory.search_text = fold(f"{memory.content} {keywords}".strip())
    memory.search_original = fold(memory.content_original)
    memory.search_pairs = " ".join(cjk_tokens(memory.search_text))
    # The signature's words are the search text's: fold once, not twice.
    memory.signature = simhash_folded(memory.search_text, bits=settings.SIGNATURE_BITS)
    memory.content_key = content_key(memory.content)


def memory_validate(memory: Memory, fields: Iterable[str] | None = None) -> None:
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
    if (
        memory.valid_until is not None
        and memory.valid_from
        and memory.valid_until < memory.valid_from
    ):
        raise ValidationError({"valid_until": "Must not be before valid_from."})
    if fields is None:
        memory.full_clean(exclude=["namespace", *DERIVED_FIELDS], validate_constraints=False)
    elif names := frozenset(fields):
        memory.clean_fields(exclude=_all_but(names))


@functools.cache
def _all_but(names: frozenset[str]) -> frozenset[str]:
    """The model's fields not in `names`, as a set: clean_fields tests every field against
    it (a list cost a scan per field, per memory of a bulk)."""
    return frozenset(f.name for f in Memory._meta.fields if f.name not in names)


def memory_build(
    *,
    namespace: Namespace,
    content: str,
    keywords: list[str] | None = None,
    created_at: datetime | None = None,
    session_id: str = "",
    position: int | None = None,
    valid_from: datetime | None = None,
    prevalidated: bool = False,
    **fields: Any,
) -> Memory:
    """An unsaved, validated memory with its derived fields (used by create and bulk).
    `valid_from`: since when what it says is true; default: created_at.
    `session_id` and `position` place it in a conversation (memories.services.sessions).

    `prevalidated`: the values come from memories.serializers.MemoryCreateInput, whose
    rules include every rule of the model fields (tests/api/test_memory_input.py checks
    they stay so), so model field validation is skipped; the blank-content and NUL checks
    still run.
    """
    unknown = set(fields) - _EDITABLE
    if unknown:
        raise ValidationError({name: "Unknown field." for name in sorted(unknown)})
    now = created_at or timezone.now()
    memory = Memory(
        namespace=namespace,
        **fields,
        content=content,
        keywords=_clean_keywords(keywords),
        created_at=now,
        last_used_at=now,
        session_id=session_id,
        position=position,
        valid_from=valid_from or now,
    )
    supplied = (*_ALWAYS_SUPPLIED, *fields, *CREATE_ONLY_FIELDS)
    memory_validate(memory, fields=() if prevalidated else supplied)
    memory_derive(memory)
    return memory


@transaction.atomic
def memory_create(
    *,
    namespace: Namespace,
    content: str,
    keywords: list[str] | None = None,
    created_at: datetime | None = None,
    session_id: str = "",
    position: int | None = None,
    actor=None,
    source: str = "system",
    prevalidated: bool = False,
    dedupe_ceiling: int = Classification.RESTRICTED,
    supersedes: Sequence[Memory] = (),
    **fields: Any,
) -> Memory:
    """Store one memory in a namespace, which replaces the memories `supersedes`
    (memories_supersede). `fields` are any of EDITABLE_FIELDS; `session_id`,
    `position` and `prevalidated` as in memory_build.

    In a namespace that dedupes (Namespace.dedupe exact or near), a text a live memory of
    the namespace already holds (memories.text.content_key) is not stored again: that
    memory is touched (a use) and returned instead, with `deduplicated` True (False on a
    memory just stored). Under "near" the same goes for a near-duplicate (the most similar
    one answers); under "exact" a near-duplicate is stored and linked to those it resembles
    (memories.services.near_duplicates). Only a memory at or below `dedupe_ceiling` (the
    caller's ceiling) is compared, so a duplicate never reveals a memory the caller cannot
    see."""
    # The session's lock first: a memory's default created_at is taken after it, so turns
    # written at once by two writers are ordered as they were written.
    linked = linked_sessions([(namespace, session_id if isinstance(session_id, str) else "")])
    sessions_lock(linked)
    memory = memory_build(
        namespace=namespace,
        content=content,
        keywords=keywords,
        created_at=created_at,
        session_id=session_id,
        position=position,
        prevalidated=prevalidated,
        **fields,
    )
    original = None
    if namespace.dedupe != Namespace.Dedupe.OFF:
        key = (namespace.pk, memory.content_key)
        duplicates_lock([key])
        near_lock([namespace])
        original = live_duplicates([key], ceiling=dedupe_ceiling).get(key)
    # Only a namespace that refuses near-duplicates compares before writing; the others'
    # comparisons wait for the worker (near_index_later).
    inline = refuses(namespace)
    marks = sketches([memory]) if inline else []
    matches = (
        near_matches([memory], marks, ceiling=dedupe_ceiling, now=timezone.now())[0]
        if inline and original is None
        else []
    )
    if matches:
        original = Memory.objects.select_related("namespace").get(pk=-matches[0][0])
    if original is not None:
        count_duplicate_uses({original: 1}, actor=actor, source=source)  # as bulk does
        original.deduplicated = True
        if supersedes:
            memories_supersede(new=original, old=supersedes, actor=actor, source=source)
        return original
    memory.save(force_insert=True)
    memory.deduplicated = False
    if inline:
        sketches_insert([memory], marks)
    else:
        near_index_later([memory], ceiling=dedupe_ceiling)
    if linked:
        session_links_create([memory.pk], now=memory.created_at)
    if supersedes:
        memories_supersede(new=memory, old=supersedes, actor=actor, source=source)
    memory_event_record(
        memory=memory,
        kind=MemoryEvent.Kind.CREATED,
        after=memory_snapshot(memory),
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
    before = memory_snapshot(locked, changed)
    level_before = locked.classification
    for field in changed:
        value = changes[field]
        setattr(locked, field, _clean_keywords(value) if field == "keywords" else value)
    memory_validate(locked)
    update_fields = [*changed, "updated_at"]
    if {"content", "content_original", "keywords"} & set(changed):
        memory_derive(locked)
        update_fields += list(DERIVED_FIELDS)
    if "content" in changed:
        near_reindex(locked)
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
    memory_event_record(
        memory=locked,
        kind=MemoryEvent.Kind.UPDATED,
        before=before,
        after=memory_snapshot(locked, changed),
        actor=actor,
        source=source,
        classification=max(level_before, locked.classification),
    )
    return locked


FORGET_REASON_MAX = 200


def forget_reason_clean(reason: Any) -> str:
    """A forget reason, stripped: not empty, at most FORGET_REASON_MAX characters. The one
    rule for a person or an agent forgetting one memory or many (bulk actions)."""
    reason = (reason or "").strip() if isinstance(reason, str | None) else ""
    if not reason:
        raise ValidationError({"reason": "Say why the memory is forgotten."})
    if len(reason) > FORGET_REASON_MAX:
        raise ValidationError({"reason": f"At most {FORGET_REASON_MAX} characters."})
    return reason


def forgotten_fields(*, reason: str, score: float | None, now: datetime) -> dict[str, Any]:
    """What forgetting writes on a memory, for one (memory_forget) or many (bulk)."""
    return {
        "status": Memory.Status.FORGOTTEN,
        "status_changed_at": now,
        "forgotten_at": now,
        "forgotten_reason": reason,
        "forgotten_score": score,
    }


def restored_fields(*, now: datetime) -> dict[str, Any]:
    """What restoring writes on a memory besides its status (active for short-term, else
    promoted): the forgetting cleared, a fresh decay clock, or the next sweep would forget
    it again, and hot storage: an archived memory is cold, and a restored one left cold was
    still skipped by recall's direct stages, which only an association could undo."""
    return {
        "storage": Memory.Storage.HOT,
        "status_changed_at": now,
        "forgotten_at": None,
        "forgotten_reason": "",
        "forgotten_score": None,
        "last_used_at": now,
    }


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
    """Mark a memory forgotten (hidden from recall and review, restorable until purged).
    The memories it alone replaced are valid again (supersession_release), until it is
    restored (memory_restore replaces them again)."""
    reason = forget_reason_clean(reason)
    now = now or timezone.now()
    locked = Memory.objects.select_for_update().get(pk=memory.pk)
    if locked.status == Memory.Status.FORGOTTEN:
        return locked
    before = memory_snapshot(locked, ["status"])
    changes = forgotten_fields(reason=reason, score=score, now=now)
    for name, value in changes.items():
        setattr(locked, name, value)
    locked.save(update_fields=[*changes, "updated_at"])
    if before["status"] in LIVE_STATUSES:
        # What it alone replaced is true again (supersession_release; never on decay).
        supersession_release(successors=[locked.pk], actor=actor, source=source, now=now)
    memory_event_record(
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
    before = memory_snapshot(locked, ["status", "forgotten_reason", "storage"])
    changes = {
        "status": Memory.Status.ACTIVE
        if locked.tier == Memory.Tier.SHORT_TERM
        else Memory.Status.PROMOTED,
        **restored_fields(now=now),
    }
    for name, value in changes.items():
        setattr(locked, name, value)
    locked.save(update_fields=[*changes, "updated_at"])
    memory_event_record(
        memory=locked,
        kind=MemoryEvent.Kind.RESTORED,
        before=before,
        after={"status": locked.status, "storage": locked.storage},
        actor=actor,
        source=source,
        now=now,
    )
    # What its forgetting reinstated is replaced by it again.
    supersession_resume(successors=[locked.pk], actor=actor, source=source, now=now)
    return locked


@transaction.atomic
def memory_purge(*, memory: Memory, actor=None, source: str = "system") -> int:
    """Delete a memory for good (its card, links and relations' source go with it); a
    live one first reinstates what it alone replaced (supersession_release).

    The history keeps a 'purged' event with the id, so the deletion itself is auditable.
    Returns the purged memory's id.
    """
    memory_id = memory.pk
    if memory.status in LIVE_STATUSES:
        # Purging a live successor reinstates what it alone replaced (a forgotten one's
        # forgetting already did, or it decayed and leaves them replaced).
        supersession_release(successors=[memory_id], actor=actor, source=source)
    memory_event_record(
        memory=memory,
        kind=MemoryEvent.Kind.PURGED,
        before=memory_snapshot(memory, ["status", "topic"]),
        actor=actor,
        source=source,
    )
    memory.delete()
    return memory_id


class MemoryNotLive(Exception):
    """A use of a forgotten or archived memory: restore it first. The API answers 409
    `not_live` (config.api maps `api_status`), the dashboard says so."""

    api_status = 409
    code = "not_live"
    field = None

    def __init__(self, pk: int, status: str | None) -> None:
        label = Memory.Status(status).label.lower() if status else "gone"
        super().__init__(f"Memory #{pk} is {label}: restore it before using it.")
        self.status = status


@transaction.atomic
def memory_touch(
    *,
    memory: Memory,
    boost_strength: bool = False,
    actor=None,
    source: str = "system",
    now: datetime | None = None,
) -> Memory:
    """Record a use (seed 003): use_count + 1, last_used_at = now, optional strength x1.1;
    a cold memory comes back to hot storage (uses_reactivate).

    Only a live memory can be used: a forgotten or archived one raises MemoryNotLive and
    nothing is written (restore it first), the rule bulk Keep applies by leaving them out.
    Written with F() expressions so concurrent touches never lose each other's counts; the
    use goes to the use log (memories.services.uses).
    """
    now = now or timezone.now()
    updates: dict[str, Any] = {"use_count": F("use_count") + 1, "last_used_at": now}
    if boost_strength:
        updates["strength"] = Least(F("strength") * STRENGTH_BOOST_FACTOR, MAX_STRENGTH)
    if not Memory.objects.filter(pk=memory.pk, status__in=LIVE_STATUSES).update(**updates):
        status = Memory.objects.filter(pk=memory.pk).values_list("status", flat=True).first()
        raise MemoryNotLive(memory.pk, status)
    uses_record([memory.pk], now=now)
    uses_reactivate([memory.pk], now=now, actor=actor, source=source)
    memory.refresh_from_db(fields=["use_count", "last_used_at", "strength", "storage", "status"])
    memory_event_record(
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
    before = memory_snapshot(locked, ["tier", "status"])
    locked.tier = Memory.Tier.LONG_TERM
    locked.status = Memory.Status.PROMOTED
    locked.status_changed_at = now
    locked.promoted_at = now
    locked.save(update_fields=["tier", "status", "status_changed_at", "promoted_at", "updated_at"])
    memory_event_record(
        memory=locked,
        kind=MemoryEvent.Kind.PROMOTED,
        before=before,
        after=memory_snapshot(locked, ["tier", "status"]),
        actor=actor,
        source=source,
        now=now,
    )
    return locked


# Memories per chunk of a bulk create: built, then written while the next chunk is built.
BULK_CHUNK = 100


def _events_and_announce(built: list[Memory], event_rows: list[tuple]) -> None:
    memory_events_insert(event_rows)  # with their webhooks
    memories_created.send(sender=Memory, memories=built)


@transaction.atomic
def memory_bulk_create(
    *,
    items: list[dict[str, Any]],
    actor=None,
    source: str = "system",
    prevalidated: bool = False,
    dedupe_ceiling: int = Classification.RESTRICTED,
) -> list[Memory]:
    """Create many memories at once, all or nothing; the memories in the items' order.

    Each item holds `namespace` (a Namespace) and create fields. Every item is validated;
    the errors of all items are raised as one ValidationError whose keys are
    "<index>.<field>" (or "<index>" for an error of the whole item), so a caller can
    report them all, and then nothing is written. `prevalidated` as in memory_build.

    Memories, their 'created' events and their cards are written set-based
    (memories.bulk): valid memories are streamed in chunks of BULK_CHUNK into one COPY on
    PostgreSQL, which the server works through while the next chunk is built. The first
    invalid item stops the writing (the rest are still validated, for their errors) and
    the transaction undoes what was sent.

    Duplicates as in memory_create, set-based: an item whose text a live memory of a
    deduping namespace holds, or an earlier item of the request, is that memory (touched
    once per such item, `deduplicated` True).
    """
    answers: list[Memory | None] = [None] * len(items)
    own: list[Memory | None] = [None] * len(items)  # the memory built from each item
    errors: dict[str, list[str]] = {}
    linked = linked_sessions(
        (item["namespace"], item.get("session_id") or "")
        for item in items
        if isinstance(item.get("namespace"), Namespace) and isinstance(item.get("session_id"), str)
    )
    sessions_lock(linked)
    keys = [
        (ns.pk, content_key(item["content"]))
        if isinstance(ns := item.get("namespace"), Namespace)
        and ns.dedupe != Namespace.Dedupe.OFF
        and isinstance(item.get("content"), str)
        else None
        for item in items
    ]
    duplicates_lock(key for key in keys if key)
    near_lock({item["namespace"] for item in items if isinstance(item.get("namespace"), Namespace)})
    originals: dict[tuple[int, str], Memory] = live_duplicates(
        [key for key in keys if key], ceiling=dedupe_ceiling
    )
    streamed: list[Memory] = []  # new texts written as they are built
    held: list[Memory] = []  # new texts to compare first (namespaces refusing near-duplicates)
    chunk: list[Memory] = []
    # Memories stream into the COPY a chunk at a time while the next are built, so the
    # server indexes one chunk while this process derives the next (nothing in the loop
    # may query: the connection is busy with the COPY until the block ends).
    with writer(Memory, ids=True, expected=len(items)) as write:
        for index, item in enumerate(items):
            try:
                fields = {k: v for k, v in item.items() if k != "supersedes"}
                memory = memory_build(**fields, prevalidated=prevalidated)
            except ValidationError as exc:
                if hasattr(exc, "error_dict"):
                    for field, messages in exc.message_dict.items():
                        errors[f"{index}.{field}"] = messages
                else:
                    errors[str(index)] = exc.messages
                continue
            if errors:
                continue
            key = keys[index] and (memory.namespace_id, memory.content_key)
            if key and key in originals:
                answers[index] = originals[key]
                continue
            answers[index] = own[index] = memory
            if key:
                originals[key] = memory
            if refuses(memory.namespace):
                held.append(memory)
                continue
            chunk.append(memory)
            if len(chunk) == BULK_CHUNK:
                write(chunk)
                streamed += chunk
                chunk = []
        if errors:  # the COPY is aborted and what it sent undone
            raise ValidationError(errors)
        if chunk:
            write(chunk)
            streamed += chunk
    near_index_later(streamed, ceiling=dedupe_ceiling)
    built = [*streamed, *_near_duplicates(held, answers, ceiling=dedupe_ceiling)]
    if linked:
        session_links_create(memory.pk for memory in built if memory.session_id)
    _events_and_announce(built, created_event_rows(built, actor, source))
    uses: Counter[int] = Counter()
    used: dict[int, Memory] = {}
    for index, memory in enumerate(answers):
        assert memory is not None  # every item was answered, or errors were raised
        if memory is not own[index]:
            uses[id(memory)] += 1
            used[id(memory)] = memory
    if uses:
        count_duplicate_uses(
            {used[obj]: count for obj, count in uses.items()}, actor=actor, source=source
        )
    for index, item in enumerate(items):
        if item.get("supersedes"):
            try:
                memories_supersede(
                    new=answers[index], old=item["supersedes"], actor=actor, source=source
                )
            except ValidationError as exc:
                errors.update({f"{index}.{f}": m for f, m in exc.message_dict.items()})
    if errors:  # the transaction undoes the whole request
        raise ValidationError(errors)
    result: list[Memory] = []
    for index, memory in enumerate(answers):
        answer = memory if memory is own[index] else copy.copy(memory)
        answer.deduplicated = memory is not own[index]
        result.append(answer)
    return result


def _near_duplicates(
    memories: list[Memory], answers: list[Memory | None], *, ceiling: int
) -> list[Memory]:
    """Compare the new texts of a bulk create in namespaces that refuse near-duplicates
    with what is stored and with each other (memories.services.near_duplicates): an item
    that is one is answered by the memory it resembles most (`answers` is updated). The
    others are written with their sketches, and returned."""
    if not memories:
        return []
    marks = sketches(memories)
    matches = near_matches(memories, marks, ceiling=ceiling, now=timezone.now())
    stored_ids = {-target for found in matches for target, _ in found if target < 0}
    stored = Memory.objects.select_related("namespace").in_bulk(stored_ids) if stored_ids else {}
    answer_of: list[Memory] = []
    kept: list[int] = []
    for n, memory in enumerate(memories):
        best = matches[n][0][0] if matches[n] else None
        if best is not None:
            answer_of.append(stored[-best] if best < 0 else answer_of[best])
        else:
            answer_of.append(memory)
            kept.append(n)
    # An item answered by a memory that turned out a near-duplicate is answered by its answer.
    redirect = {id(memory): answer_of[n] for n, memory in enumerate(memories)}
    for index, answer in enumerate(answers):
        if answer is not None and id(answer) in redirect:
            answers[index] = redirect[id(answer)]
    compared = [memories[n] for n in kept]
    insert_new(compared, ids=True)
    sketches_insert(compared, [marks[n] for n in kept])
    return compared


@transaction.atomic
def memories_insert(built: list[Memory], *, actor=None, source: str = "system") -> None:
    """Write built (validated, derived) memories with their 'created' events and cards,
    set-based, all or nothing. The benchmark's corpus loader uses it."""
    sessions_lock(linked := linked_sessions((m.namespace, m.session_id) for m in built))
    insert_new(built, ids=True)
    near_index(built, ceiling=Classification.RESTRICTED)
    if linked:
        session_links_create(memory.pk for memory in built if memory.session_id)
    _events_and_announce(built, created_event_rows(built, actor, source))
