"""Near-duplicates on the write path (the rule: memories.near_duplicates).

Every new memory gets its sketch (MemorySketch rows) and is compared, by both measures,
with the memories sharing a sketch key with it: live, current, unexpired memories of its
namespace at or below the writer's ceiling (a write only ever looks at what its writer can
see), and the other new memories of the same request.

Under Namespace.dedupe "near" this happens before the write, which refuses a
near-duplicate: it answers with the most similar memory, as an exact duplicate does.
Under "exact" (the default) a near-duplicate is stored, and the comparison waits for the
worker (near_index_later, after the write commits): the memory is sketched and linked to
those it resembles (`near_duplicate` associations, weight = trigram similarity, from the
newer to the older) a moment later, off the agent's request; recall shows each group once
from those links, and meanwhile compares its own results' texts (recall.ranking), so an
answer never holds the same fact twice. Under "off" nothing is compared (the sketch is
still written, by the worker, so switching the setting on later finds them). The sweep
sketches what a lost task left unsketched (near_index_missing).

Set-based: the sketch keys of a whole request are looked up in a few queries on the index
sketch_ns_key; only the memories sharing a key are loaded and compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from config.db import is_postgres, lock_keys
from config.queue import enqueue
from memories.bulk import insert_rows
from memories.models import (
    LIVE_STATUSES,
    Association,
    Classification,
    Memory,
    MemoryEvent,
    MemorySketch,
    Namespace,
    reachable_sql,
)
from memories.near_duplicates import Shape, shape, similarity, sketch_keys_many
from memories.services.events import memory_event_record
from memories.services.supersede import supersedes_cycles, validity_end

NEAR_DUPLICATE = "near_duplicate"


@dataclass
class Sketch:
    """A new memory's shape and sketch keys, computed once for the lookup and the write."""

    shape: Shape
    keys: list[int]


def sketches(memories: Sequence[Memory]) -> list[Sketch]:
    shapes = [shape(memory.content) for memory in memories]
    keys = sketch_keys_many([s.grams for s in shapes])
    return [Sketch(s, sorted(set(k))) for s, k in zip(shapes, keys, strict=True)]


def compares(namespace: Namespace) -> bool:
    return namespace.dedupe != Namespace.Dedupe.OFF


def refuses(namespace: Namespace) -> bool:
    return namespace.dedupe == Namespace.Dedupe.NEAR


def near_lock(namespaces: Iterable[Namespace]) -> None:
    """Writers of a namespace that refuses near-duplicates take turns (until the
    transaction ends), so two near copies written at once cannot both be stored."""
    _namespace_lock(ns.pk for ns in namespaces if refuses(ns))


def _namespace_lock(namespace_ids: Iterable[int]) -> None:
    """The one lock of a namespace's comparisons: a comparison that has not yet seen the
    sketches of another, uncommitted one would miss the pairs between the two."""
    lock_keys(f"near:{pk}" for pk in namespace_ids)


Match = tuple[int, float]  # (index of an earlier new memory, or -id of a stored one; similarity)


def near_matches(
    memories: Sequence[Memory], marks: Sequence[Sketch], *, ceiling: int, now: datetime
) -> list[list[Match]]:
    """Each new memory's near-duplicates, most similar first: stored ones as (-id, sim),
    earlier memories of the list as (index, sim). Memories of a namespace that does not
    compare (dedupe off) get none."""
    trigram_t = settings.NEAR_DUPLICATE_TRIGRAM
    signature_t = settings.NEAR_DUPLICATE_SIGNATURE

    def score(a: int, their: Shape, signature: bytes | None) -> float | None:
        return similarity(
            marks[a].shape,
            their,
            memories[a].signature,
            signature,
            trigram_threshold=trigram_t,
            signature_threshold=signature_t,
        )

    found: list[list[Match]] = [[] for _ in memories]
    by_ns: dict[int, list[int]] = {}
    for index, memory in enumerate(memories):
        if compares(memory.namespace):
            by_ns.setdefault(memory.namespace_id, []).append(index)
    for ns, indexes in by_ns.items():
        shapes: dict[int, Shape] = {}
        rows = _stored_candidates(
            ns, indexes, memories, marks, ceiling=ceiling, now=now, threshold=signature_t
        )
        for index, memory_id, signature, content in rows:
            if memory_id not in shapes:
                shapes[memory_id] = shape(content)
            sim = score(index, shapes[memory_id], bytes(signature) if signature else None)
            if sim is not None:
                found[index].append((-memory_id, sim))
        # Earlier new memories sharing a key: compared the same way.
        by_key: dict[int, list[int]] = {}
        for index in indexes:
            for key in marks[index].keys:
                by_key.setdefault(key, []).append(index)
        pairs = {
            (later, earlier)
            for group in by_key.values()
            for later in group
            for earlier in group
            if earlier < later
        }
        for later, earlier in sorted(pairs):
            sim = score(later, marks[earlier].shape, memories[earlier].signature)
            if sim is not None:
                found[later].append((earlier, sim))
    for matches in found:  # most similar first; on a tie a stored one, the oldest
        matches.sort(key=lambda m: (-m[1], m[0] >= 0, abs(m[0])))
    return found


def _stored_candidates(
    namespace_id: int,
    indexes: list[int],
    memories: Sequence[Memory],
    marks: Sequence[Sketch],
    *,
    ceiling: int,
    now: datetime,
    threshold: float,
) -> list[tuple[int, int, bytes | None, str]]:
    """(index, memory id, signature, content) of the live, current, unexpired memories of
    the namespace at or below the ceiling that share a sketch key with the new memory at
    `index`: one statement, each (key, index) pair one probe of the index sketch_ns_key,
    the pairs passed as arrays (PostgreSQL) or a JSON list (SQLite). PostgreSQL also keeps
    only the pairs whose signatures agree on `threshold` of their bits (XOR and bit_count
    in SQL), so a namespace of look-alike texts does not send thousands of rows back;
    SQLite returns every pair and the caller's test drops them."""
    pairs = [(key, index) for index in indexes for key in marks[index].keys]
    qn = connection.ops.quote_name
    sketch, memory = qn(MemorySketch._meta.db_table), qn(Memory._meta.db_table)
    live, live_params = reachable_sql("m", ceiling=ceiling, now=now)
    # The sketch rows first, materialised: with the memories' statistics out of date (a
    # namespace filling fast) PostgreSQL otherwise started from the memories and read the
    # namespace's whole sketch once for each, minutes at 100,000 memories.
    if is_postgres():
        bits = settings.SIGNATURE_BITS
        signed = [i for i in indexes if memories[i].signature and any(memories[i].signature)]
        sql = (
            "WITH hits AS MATERIALIZED (SELECT DISTINCT k.idx, s.memory_id "
            "FROM unnest(%s::bigint[], %s::int[]) AS k (key, idx) "
            f"JOIN {sketch} s ON s.namespace_id = %s AND s.key = k.key), "
            "q AS (SELECT idx, ('x' || sig)::bit(" + str(bits) + ") AS bits "
            "FROM unnest(%s::int[], %s::text[]) AS q (idx, sig)) "
            f"SELECT h.idx, m.id, m.signature, m.content FROM hits h "
            f"JOIN q ON q.idx = h.idx JOIN {memory} m ON m.id = h.memory_id "
            f"WHERE {live} AND octet_length(m.signature) = %s "
            f"AND 1.0 - bit_count(('x' || encode(m.signature, 'hex'))::bit({bits}) # q.bits)"
            f"::float / {bits} >= %s"
        )
        params = [
            [key for key, _ in pairs],
            [index for _, index in pairs],
            namespace_id,
            signed,
            [memories[i].signature.hex() for i in signed],
            *live_params,
            bits // 8,
            threshold,
        ]
    else:
        sql = (
            "WITH hits AS MATERIALIZED (SELECT DISTINCT k.idx, s.memory_id FROM ("
            "SELECT json_extract(value, '$[0]') AS key, json_extract(value, '$[1]') AS idx "
            f"FROM json_each(%s)) AS k JOIN {sketch} s "
            "ON s.namespace_id = %s AND s.key = k.key) "
            f"SELECT h.idx, m.id, m.signature, m.content FROM hits h "
            f"JOIN {memory} m ON m.id = h.memory_id WHERE {live}"
        )
        params = [json.dumps(pairs), namespace_id, *live_params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


_FEW = 20


def sketches_insert(memories: Sequence[Memory], marks: Sequence[Sketch]) -> None:
    """Write the sketch keys of memories just saved, in one statement: a bulk's through
    memories.bulk (COPY on PostgreSQL), a few memories' as one INSERT ... SELECT over
    arrays or a JSON list (a COPY costs a round trip more for one memory's 24 rows; for
    24,000 rows the arrays cost more to send than COPY's rows)."""
    rows = [
        (memory.pk, memory.namespace_id, key)
        for memory, mark in zip(memories, marks, strict=True)
        for key in mark.keys
    ]
    if not rows:
        return
    if len(memories) > _FEW:
        insert_rows(MemorySketch, ("memory_id", "namespace_id", "key"), rows)
        return
    table = connection.ops.quote_name(MemorySketch._meta.db_table)
    if is_postgres():
        sql = (
            f"INSERT INTO {table} (memory_id, namespace_id, key) "
            "SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[])"
        )
        params = [list(column) for column in zip(*rows, strict=True)]
    else:
        sql = (
            f"INSERT INTO {table} (memory_id, namespace_id, key) "
            "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), "
            "json_extract(value, '$[2]') FROM json_each(%s)"
        )
        params = [json.dumps(rows)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def near_links_create(links: Iterable[tuple[Memory, int, float]], *, now: datetime) -> None:
    """`near_duplicate` links from each new memory (saved) to the stored memory it
    resembles, weighted by their similarity; a link already there is left as it is."""
    rows = [
        Association(
            namespace_id=memory.namespace_id,
            source_id=memory.pk,
            target_id=target,
            weight=round(min(1.0, score), 6),
            kind=NEAR_DUPLICATE,
            created_at=now,
        )
        for memory, target, score in links
        if memory.pk != target
    ]
    Association.objects.bulk_create(rows, ignore_conflicts=True)


def near_index(memories: Sequence[Memory], *, ceiling: int, now: datetime | None = None) -> None:
    """Sketch memories just saved and link them to their near-duplicates, stored ones and
    each other, without refusing any (import, the benchmark's loader, a changed text).
    `ceiling`: the writer's, as for the other write paths."""
    memories = list(memories)
    if not memories:
        return
    marks = sketches(memories)
    matches = near_matches(memories, marks, ceiling=ceiling, now=now or timezone.now())
    sketches_insert(memories, marks)
    near_links_create(
        (
            (memory, -target if target < 0 else memories[target].pk, score)
            for memory, found in zip(memories, matches, strict=True)
            for target, score in found
        ),
        now=now or timezone.now(),
    )


def near_index_later(memories: Sequence[Memory], *, ceiling: int) -> None:
    """Memories just written that the worker sketches and links once the write commits
    (near_index_pending): those of namespaces that do not refuse near-duplicates."""
    ids = [memory.pk for memory in memories if not refuses(memory.namespace)]
    if ids:
        enqueue("memories.tasks.near_index_task", ids, ceiling)


def _unsketched(ids: Iterable[int] | None = None):
    sketched = MemorySketch.objects.filter(memory_id=OuterRef("pk"))
    memories = Memory.objects.filter(~Exists(sketched))
    return memories if ids is None else memories.filter(pk__in=list(ids))


def near_index_pending(ids: Sequence[int], *, ceiling: int, now: datetime | None = None) -> int:
    """The worker's half of a write (near_index_later): sketch and link those of `ids`
    that are not sketched yet; how many. Idempotent: a second run finds them sketched.

    Comparisons in a namespace take turns (its lock, taken before the memories are read
    again), so two batches indexed at once still see each other: the later one finds the
    earlier one's sketches committed."""
    ids = list(ids)
    with transaction.atomic():
        namespace_ids = set(_unsketched(ids).values_list("namespace_id", flat=True))
        if not namespace_ids:
            return 0
        _namespace_lock(namespace_ids)
        memories = list(_unsketched(ids).select_related("namespace").order_by("pk"))
        near_index(memories, ceiling=ceiling, now=now)
    return len(memories)


NEAR_INDEX_SWEEP_LIMIT = 10_000  # memories a sweep sketches, oldest first


def near_index_missing(namespace_id: int | None, *, now: datetime, dry_run: bool = False) -> int:
    """The sweep's safety net: live memories left unsketched (a task lost with its worker,
    or still queued) are sketched and linked now, each compared with what is at or below
    its own level (its writer is not known any more), at most NEAR_INDEX_SWEEP_LIMIT.
    How many (would be, dry)."""
    memories = _unsketched().filter(status__in=LIVE_STATUSES)
    if namespace_id is not None:
        memories = memories.filter(namespace_id=namespace_id)
    by_level: dict[int, list[int]] = {}
    for pk, level in memories.order_by("pk").values_list("pk", "classification")[
        :NEAR_INDEX_SWEEP_LIMIT
    ]:
        by_level.setdefault(level, []).append(pk)
    if dry_run:
        return sum(len(batch) for batch in by_level.values())
    return sum(
        near_index_pending(batch, ceiling=level, now=now)
        for level, batch in sorted(by_level.items())
    )


def near_reindex(memory: Memory) -> None:
    """A memory whose text changed: its sketch and its near_duplicate links (either way)
    are replaced by those of the new text."""
    MemorySketch.objects.filter(memory=memory).delete()
    Association.objects.filter(Q(source=memory) | Q(target=memory), kind=NEAR_DUPLICATE).delete()
    # At or below its own level: whoever may change it sees that far, so a changed text
    # is compared only with what its editor can see, as a new one is.
    near_index([memory], ceiling=memory.classification)


# --- Merging a group ---------------------------------------------------------------------------

MERGE_MAX_MEMBERS = 100  # a group larger than this is merged in several goes


def near_group(memory: Memory, *, ceiling: int, now: datetime | None = None) -> list[Memory]:
    """The memories `memory` can absorb: those reachable from it over near_duplicate links
    (either way), live and current, of its namespace, at or below both its level and
    `ceiling` (so nothing of a more sensitive memory flows into it), except those that
    already replace it (supersedes_cycles). Oldest first; at most MERGE_MAX_MEMBERS. One
    query per hop of links, and one for the cycles."""
    now = now or timezone.now()
    level = min(ceiling, memory.classification)
    seen = {memory.pk}
    frontier = {memory.pk}
    while frontier and len(seen) <= MERGE_MAX_MEMBERS:
        links = Association.objects.filter(
            Q(source_id__in=frontier) | Q(target_id__in=frontier),
            namespace_id=memory.namespace_id,
            kind=NEAR_DUPLICATE,
        ).values_list("source_id", "target_id")
        linked = {i for pair in links for i in pair} - seen
        reachable = set(
            Memory.objects.filter(
                pk__in=linked,
                status__in=LIVE_STATUSES,
                classification__lte=level,
            )
            .current(now)
            .unexpired(now)
            .values_list("pk", flat=True)
        )
        seen |= reachable
        frontier = reachable
    others = sorted(seen - {memory.pk})[:MERGE_MAX_MEMBERS]
    if others:
        # Merging adds a `supersedes` link from `memory` to each: one that already
        # replaces it (a chain of supersedes links back to it) would close a cycle of
        # replacements, which every path that adds such links refuses (supersedes_cycles).
        # It is left out of the group, as it stands.
        closing = set(supersedes_cycles([(memory.pk, pk) for pk in others]))
        others = [pk for n, pk in enumerate(others) if n not in closing]
    return list(Memory.objects.filter(pk__in=others).order_by("pk"))


@transaction.atomic
def near_duplicates_merge(
    *,
    keep: Memory,
    ceiling: int = Classification.RESTRICTED,
    actor=None,
    source: str = "system",
    now: datetime | None = None,
) -> list[Memory]:
    """Merge keep's group of near-duplicates (near_group) into it; the merged memories.

    Nothing is deleted and every member keeps its history: each merged memory becomes
    valid until now (it leaves recall, lists and review, and answers as_of queries from
    before), gets a 'merged' event naming `keep` and a `supersedes` link from it; `keep`
    takes their uses and recalls (added), the highest strength and the latest use, and
    gets a 'merged' event listing them. Set-based: a handful of statements per group.

    Only a live, current `keep` takes a group in (ValidationError otherwise, nothing
    written): what is merged into a forgotten or superseded memory would leave recall with
    it."""
    now = now or timezone.now()
    # Merges in a namespace take turns: two merges from two members of one group would
    # otherwise each absorb the other (or deadlock on their row locks).
    lock_keys([f"merge:{keep.namespace_id}"])
    keep = Memory.objects.select_for_update().get(pk=keep.pk)
    if keep.status not in LIVE_STATUSES or (
        keep.valid_until is not None and keep.valid_until <= now
    ):
        raise ValidationError(
            {"keep": "Only a live, current memory can take in its near-duplicates."}
        )
    members = near_group(keep, ceiling=ceiling, now=now)
    if not members:
        return []
    ids = [m.pk for m in members]
    before = {
        "use_count": keep.use_count,
        "recall_count": keep.recall_count,
        "strength": keep.strength,
    }
    keep.use_count += sum(m.use_count for m in members)
    keep.recall_count += sum(m.recall_count for m in members)
    keep.strength = max(keep.strength, *(m.strength for m in members))
    keep.last_used_at = max(keep.last_used_at, *(m.last_used_at for m in members))
    keep.save(update_fields=["use_count", "recall_count", "strength", "last_used_at", "updated_at"])
    validity_end(
        successor=keep,
        memories=members,
        ends=now,
        kind=MemoryEvent.Kind.MERGED,
        actor=actor,
        source=source,
        now=now,
    )
    memory_event_record(
        memory=keep,
        kind=MemoryEvent.Kind.MERGED,
        before=before,
        after={
            "use_count": keep.use_count,
            "recall_count": keep.recall_count,
            "strength": keep.strength,
            "merged": ids,
        },
        actor=actor,
        source=source,
        now=now,
    )
    return members


def near_groups_strongest(namespace_id: int, *, now: datetime, limit: int) -> list[int]:
    """One memory per group of near-duplicates of the namespace, the strongest (strength,
    then uses, then the oldest), for the sweep to merge the rest into: at most `limit`.
    Reads the links between live, current memories once; the groups are found over those
    link rows (few next to the memories), not over the memories."""
    live = Memory.objects.filter(namespace_id=namespace_id, status__in=LIVE_STATUSES).current(now)
    pairs = list(
        Association.objects.filter(
            namespace_id=namespace_id,
            kind=NEAR_DUPLICATE,
            source__in=live,
            target__in=live,
        ).values_list("source_id", "target_id")
    )
    if not pairs:
        return []
    parent: dict[int, int] = {}

    def root(i: int) -> int:
        parent.setdefault(i, i)
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in pairs:
        parent[root(a)] = root(b)
    rank = {
        pk: (-strength, -uses, pk)
        for pk, strength, uses in Memory.objects.filter(pk__in=list(parent)).values_list(
            "pk", "strength", "use_count"
        )
    }
    best: dict[int, int] = {}
    for pk in parent:
        group = root(pk)
        if group not in best or rank[pk] < rank[best[group]]:
            best[group] = pk
    return sorted(best.values())[:limit]


MERGE_GROUPS_PER_SWEEP = 500


def near_duplicates_sweep(namespace_id: int | None, *, now: datetime, dry_run: bool = False) -> int:
    """The sweep's merge step: in each namespace that refuses near-duplicates (dedupe
    near), every group of them stored before (under exact, or by an import) is merged into
    its strongest member, at most MERGE_GROUPS_PER_SWEEP groups a namespace per sweep.
    Each group is its own transaction. The number of memories merged (would be, dry)."""
    namespaces = Namespace.objects.filter(dedupe=Namespace.Dedupe.NEAR)
    if namespace_id is not None:
        namespaces = namespaces.filter(pk=namespace_id)
    merged = 0
    for ns_id in namespaces.values_list("pk", flat=True):
        keep_ids = near_groups_strongest(ns_id, now=now, limit=MERGE_GROUPS_PER_SWEEP)
        for keep in Memory.objects.filter(pk__in=keep_ids).order_by("pk"):
            if dry_run:
                merged += len(near_group(keep, ceiling=Classification.RESTRICTED, now=now))
            else:
                merged += len(near_duplicates_merge(keep=keep, source="worker", now=now))
    return merged
