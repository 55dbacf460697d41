"""Facts that change: a memory supersedes older ones (valid_until, a 'superseded' event, a
'supersedes' link); nothing is deleted."""

from __future__ import annotations

from collections.abc import Sequence

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
