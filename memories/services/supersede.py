"""Facts that change: a memory supersedes older ones (valid_until, a 'superseded' event, a
'supersedes' link); nothing is deleted."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from memories.models import LIVE_STATUSES, Association, Memory, MemoryEvent
from memories.services.webhooks import memory_events_announce

SUPERSEDES = "supersedes"  # the kind of the link from a memory to one it replaces


@transaction.atomic
def memories_supersede(*, new: Memory, old: Sequence[Memory], actor=None, source: str = "system"):
    """`new` replaces the memories `old` (a fact that changed): each becomes valid until
        new.valid_from, gets a 'superseded' event and a 'supersedes' link from `new`. Nothing is
        deleted. Each must be of new's namespace, valid from no later than new, and not replace
        `new` itself, directly or through a chain of replacements (ValidationError on
        "supersedes"). The event is written at the higher level of the two memories, so a caller
        who cannot see the new memory learns nothing of it from the old one's history (the
    events and the links are each written in one statement)."""
    old = list({memory.pk: memory for memory in old}.values())
    for memory in old:
        if memory.pk == new.pk:
            raise ValidationError({"supersedes": "A memory cannot supersede itself."})
        if memory.namespace_id != new.namespace_id:
            raise ValidationError({"supersedes": "Must be a memory of the same namespace."})
    if supersedes_cycles([(new.pk, memory.pk) for memory in old]):
        raise ValidationError({"supersedes": CYCLE})
    # The replacement must itself be a fact in force: replaced by a forgotten memory (or one
    # no longer valid), a fact would leave recall with nothing in its place.
    if old and new.status not in LIVE_STATUSES:
        raise ValidationError(
            {
                "supersedes": f"Memory #{new.pk} is {new.status}: restore it before it "
                "replaces another."
            }
        )
    if old and new.valid_until is not None:
        raise ValidationError(
            {
                "supersedes": f"Memory #{new.pk} is no longer valid itself, so it cannot "
                "replace another."
            }
        )
    for memory in old:
        if memory.valid_from > new.valid_from:
            raise ValidationError(
                {
                    "supersedes": f"Memory #{memory.pk} is valid only from a later time than "
                    "the memory that would replace it."
                }
            )
    return validity_end(
        successor=new,
        memories=old,
        ends=new.valid_from,
        kind=MemoryEvent.Kind.SUPERSEDED,
        actor=actor,
        source=source,
    )


# The key of an ending event's `after` that names the successor, by the event's kind.
_SUCCESSOR_KEY = {
    MemoryEvent.Kind.SUPERSEDED: "superseded_by",
    MemoryEvent.Kind.MERGED: "merged_into",
}


def validity_end(
    *,
    successor: Memory,
    memories: Sequence[Memory],
    ends,
    kind: str,
    actor=None,
    source: str = "system",
    now=None,
) -> list[Memory]:
    """End the validity of `memories` at `ends` in favour of `successor` (a supersede, or a
    merge of near-duplicates): those still valid then get valid_until, and an event of
    `kind` naming the successor, written at the higher level of the two; every one gets a
    `supersedes` link from the successor. Set-based: one update, one insert of events, one
    of links. The memories whose validity it ended."""
    now = now or timezone.now()
    still_valid = Q(valid_until__isnull=True) | Q(valid_until__gt=ends)
    ended = list(Memory.objects.filter(still_valid, pk__in=[m.pk for m in memories]))
    Memory.objects.filter(pk__in=[m.pk for m in ended]).update(valid_until=ends)
    events = MemoryEvent.objects.bulk_create(
        MemoryEvent(
            namespace_id=memory.namespace_id,
            memory=memory,
            memory_ref=memory.pk,
            kind=kind,
            before={"valid_until": memory.valid_until and memory.valid_until.isoformat()},
            after={"valid_until": ends.isoformat(), _SUCCESSOR_KEY[kind]: successor.pk},
            actor=actor,
            source=source,
            classification=max(memory.classification, successor.classification),
            created_at=now,
        )
        for memory in ended
    )
    memory_events_announce(events)
    for memory in ended:
        memory.valid_until = ends
    Association.objects.bulk_create(
        [
            Association(
                namespace_id=successor.namespace_id,
                source=successor,
                target=memory,
                weight=1.0,
                kind=SUPERSEDES,
                created_at=now,
            )
            for memory in memories
        ],
        ignore_conflicts=True,
    )
    return ended


# The key of the 'updated' event's `after` that names the successor whose removal
# reinstated a memory (supersession_release), and that restoring it reads back.
SUCCESSOR_GONE = "successor_gone"


def supersession_release(
    *, successors: Sequence[int], actor=None, source: str = "system", now=None
) -> list[int]:
    """A person or an agent removed `successors` (forgot live memories, or purged them):
    each memory whose validity one of them ended by superseding it is valid again (its
    valid_until cleared, an 'updated' event naming the successor), unless another live
    memory still replaces it. The ids it reinstated.

    Called by the explicit forget and purge (memory_forget, memories_forget, memory_purge:
    the API, bulk actions, MCP, dashboard and admin), before the successor's row goes. Not
    by the sweep: a successor that merely decayed leaves what it replaced replaced (a stale
    fact does not come back by itself; the memory page says its successor is gone and offers
    to reinstate it). A merge is not undone either: near-duplicates of a removed memory say
    what the person removed. Set-based: a few statements, whatever the number of
    successors, touching only the memories they replaced."""
    successors = sorted(set(successors))
    if not successors:
        return []
    now = now or timezone.now()
    replaced = Association.objects.filter(source_id__in=successors, kind=SUPERSEDES)
    candidates = {
        m.pk: m
        for m in Memory.objects.select_for_update()
        .filter(pk__in=replaced.values("target_id"), valid_until__isnull=False)
        .order_by("pk")
    }
    if not candidates:
        return []
    # Still replaced by a live memory other than those removed: left as it is.
    others = Association.objects.filter(
        target_id__in=list(candidates), kind=SUPERSEDES, source__status__in=LIVE_STATUSES
    ).exclude(source_id__in=successors)
    for pk in set(others.values_list("target_id", flat=True)):
        candidates.pop(pk, None)
    # Which successor ended each one's validity: its latest superseding event, when it
    # set the valid_until the memory has now (one read for all; the first per memory).
    ender: dict[int, int] = {}
    for ref, after in (
        MemoryEvent.objects.filter(
            memory_ref__in=list(candidates),
            kind__in=(MemoryEvent.Kind.SUPERSEDED, MemoryEvent.Kind.MERGED),
        )
        .order_by("memory_ref", "-created_at", "-pk")
        .values_list("memory_ref", "after")
    ):
        if ref not in ender:
            ender[ref] = ended_by(candidates[ref], after)
    released = [memory for pk, memory in candidates.items() if ender.get(pk) in successors]
    if not released:
        return []
    levels = dict(Memory.objects.filter(pk__in=successors).values_list("pk", "classification"))
    Memory.objects.filter(pk__in=[m.pk for m in released]).update(valid_until=None, updated_at=now)
    events = MemoryEvent.objects.bulk_create(
        MemoryEvent(
            namespace_id=memory.namespace_id,
            memory=memory,
            memory_ref=memory.pk,
            kind=MemoryEvent.Kind.UPDATED,
            before={"valid_until": memory.valid_until.isoformat()},
            after={"valid_until": None, SUCCESSOR_GONE: ender[memory.pk]},
            actor=actor if getattr(actor, "is_authenticated", False) else None,
            source=source,
            classification=max(memory.classification, levels.get(ender[memory.pk], 0)),
            created_at=now,
        )
        for memory in released
    )
    memory_events_announce(events)
    return [m.pk for m in released]


def ended_by(memory: Memory, after, *, merges: bool = False) -> int | None:
    """The successor a 'superseded' event's `after` names (with `merges`, also the memory a
    'merged' event names), if that event set the memory's valid_until as it is now (an end
    changed since by hand names none)."""
    if not isinstance(after, dict):
        return None
    successor = after.get("superseded_by") or (after.get("merged_into") if merges else None)
    if not isinstance(successor, int) or isinstance(successor, bool):
        return None
    try:
        ends = datetime.fromisoformat(after.get("valid_until") or "")
    except (TypeError, ValueError):
        return None
    return successor if ends == memory.valid_until else None


def supersession_resume(
    *, successors: Sequence[int], actor=None, source: str = "system", now=None
) -> list[int]:
    """`successors` were restored: the memories their removal reinstated
    (supersession_release) are replaced by them again, as before (validity_end: valid
    until the successor's valid_from, a 'superseded' event). Those ended since, by hand or
    by another successor, are left as they are. The ids it ended."""
    successors = sorted(set(successors))
    if not successors:
        return []
    now = now or timezone.now()
    reinstated: dict[int, set[int]] = {}
    for successor, ref in MemoryEvent.objects.filter(
        kind=MemoryEvent.Kind.UPDATED, **{f"after__{SUCCESSOR_GONE}__in": successors}
    ).values_list(f"after__{SUCCESSOR_GONE}", "memory_ref"):
        reinstated.setdefault(int(successor), set()).add(ref)
    ended: list[int] = []
    live = Memory.objects.filter(
        pk__in=list(reinstated), status__in=LIVE_STATUSES, valid_until__isnull=True
    )
    for new in live:
        memories = list(
            Memory.objects.filter(
                pk__in=reinstated[new.pk],
                valid_until__isnull=True,
                links_in__source=new,
                links_in__kind=SUPERSEDES,
            )
        )
        ended += [
            m.pk
            for m in validity_end(
                successor=new,
                memories=memories,
                ends=new.valid_from,
                kind=MemoryEvent.Kind.SUPERSEDED,
                actor=actor if getattr(actor, "is_authenticated", False) else None,
                source=source,
                now=now,
            )
        ]
    return ended


CYCLE = "That would make a cycle of replacements."


def supersedes_cycles(pairs: Sequence[tuple[int, int]]) -> list[int]:
    """The validator every path that adds 'supersedes' links runs before writing them
    (memories_supersede: the API, bulk, MCP, dashboard; association_create; the import):
    the indexes of the new (source, target) pairs that would lie on a cycle of
    replacements, self-supersession included, through the stored links and the other new
    pairs. One recursive query (UNION stops at a cycle already stored)."""
    pairs = [(int(a), int(b)) for a, b in pairs]
    if not pairs:
        return []
    table = connection.ops.quote_name(Association._meta.db_table)
    values = ", ".join(
        ["(CAST(%s AS BIGINT), CAST(%s AS BIGINT), CAST(%s AS BIGINT))"] * len(pairs)
    )
    sql = f"""
    WITH RECURSIVE added(n, source_id, target_id) AS (VALUES {values}),
    edges(source_id, target_id) AS (
        SELECT source_id, target_id FROM {table} WHERE kind = %s
        UNION SELECT source_id, target_id FROM added
    ),
    reached(n, id) AS (
        SELECT n, target_id FROM added
        UNION
        SELECT r.n, e.target_id FROM edges e JOIN reached r ON e.source_id = r.id
    )
    SELECT DISTINCT r.n FROM reached r JOIN added a ON a.n = r.n AND a.source_id = r.id
    ORDER BY r.n
    """
    params: list = [v for n, (a, b) in enumerate(pairs) for v in (n, a, b)]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, SUPERSEDES])
        return [row[0] for row in cursor.fetchall()]
