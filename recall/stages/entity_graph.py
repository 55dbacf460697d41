"""Stage S8 of seed 002: the relations of the first entity the query names.

Entities and relations are read within the caller's ceiling, and a relation drawn from a
memory only while that memory is live and within it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from config.db import is_postgres
from memories.models import LIVE_STATUSES, Entity, Relation
from recall.stages.filters import RecallFilters
from recall.stages.query import STOP_WORDS, QueryTerms
from recall.stages.sql import in_list

RELATION_LIMIT = 20


@dataclass
class RelationHit:
    relation_id: int
    entity: str
    subject: str
    predicate: str
    object: str
    score: float
    memory_id: int | None

    @property
    def text(self) -> str:
        return f"{self.subject} —[{self.predicate}]→ {self.object}"

    def to_dict(self) -> dict:
        return {
            "kind": "relation",
            "relation_id": self.relation_id,
            "entity": self.entity,
            "subject": self.subject,
            "predicate": self.predicate,
            "object": self.object,
            "text": self.text,
            "score": self.score,
            "memory_id": self.memory_id,
        }


def entity_candidates(all_words: list[str]) -> list[str]:
    """Names a query could mention: 1- to 3-word runs joined by space, hyphen, _ or nothing.

    Longer runs first at each position, positions in query order, so "project x" finds
    the entity "project-x" before the entity "project".
    """
    names: list[str] = []
    for start in range(len(all_words)):
        for size in (3, 2, 1):
            run = all_words[start : start + size]
            if len(run) < size:
                continue
            for joiner in (" ", "-", "_", ""):
                names.append(joiner.join(run))
    return list(dict.fromkeys(n for n in names if n not in STOP_WORDS))


def entity_search(
    query: QueryTerms, filters: RecallFilters
) -> tuple[str | None, list[RelationHit]]:
    """The first entity the query names and its relations (both directions).

    Entities and relations recorded above the ceiling are hidden, as are relations drawn
    from a memory now above it or no longer live; relations with no source memory (never
    one, or purged) are shown within their stored level.
    """
    candidates = entity_candidates(query.all_words)
    if not candidates:
        return None, []
    found = {
        name: (entity_id, display)
        for entity_id, name, display in _entities_named(candidates, filters)
    }
    first = next((name for name in candidates if name in found), None)
    if first is None:
        return None, []
    entity_id, display = found[first]
    hits = [
        RelationHit(
            relation_id=relation_id,
            entity=display or first,
            subject=subject,
            predicate=predicate,
            object=object_,
            score=weight,
            memory_id=memory_id,
        )
        for relation_id, subject, predicate, object_, weight, memory_id in _relations_of(
            entity_id, filters
        )
    ]
    return display or first, hits


def _relations_of(entity_id: int, filters: RecallFilters) -> list[tuple]:
    """(id, subject, predicate, object, weight, memory id) of the best RELATION_LIMIT
    relations of an entity, either way, within the namespaces and the ceiling; the
    entities as str() names them (display name, else name).

    A relation drawn from a memory is hidden when that memory is now above the ceiling or
    no longer live; one without a memory (never one, or purged) shows within its own
    level. Raw SQL, as _entities_named: the ORM's compiling and building of the twenty
    relations with their two entities took 4 of the stage's 6.5 ms, the statement 0.5.
    """
    relation = connection.ops.quote_name(Relation._meta.db_table)
    entity = connection.ops.quote_name(Entity._meta.db_table)
    namespaces, ns_params = in_list("r.namespace_id", list(filters.namespace_ids))
    live = f"m.status IN ({', '.join(['%s'] * len(LIVE_STATUSES))})"
    sql = (
        "SELECT r.id, COALESCE(NULLIF(s.display_name, ''), s.name), r.predicate, "
        "COALESCE(NULLIF(o.display_name, ''), o.name), r.weight, r.memory_id "
        f"FROM {relation} r JOIN {entity} s ON s.id = r.subject_id "
        f"JOIN {entity} o ON o.id = r.object_id "
        "LEFT JOIN memories_memory m ON m.id = r.memory_id "
        f"WHERE (r.subject_id = %s OR r.object_id = %s) AND {namespaces} "
        "AND r.classification <= %s "
        f"AND (r.memory_id IS NULL OR (m.classification <= %s AND {live})) "
        "ORDER BY r.weight DESC, r.id LIMIT %s"
    )
    params = [entity_id, entity_id, *ns_params, filters.ceiling, filters.ceiling]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *LIVE_STATUSES, RELATION_LIMIT])
        return cursor.fetchall()


def _entities_named(names: list[str], filters: RecallFilters) -> list[tuple[int, str, str]]:
    """(id, name, display name) of the entities within the ceiling with one of the names.

    Raw SQL: every recall asks, mostly for nothing, and the ORM's building of a query of
    a few dozen names cost more than the index lookup (Entity.objects.within_ceiling is
    the same condition).
    """
    table = connection.ops.quote_name(Entity._meta.db_table)
    namespaces, params = in_list("namespace_id", list(filters.namespace_ids))
    if is_postgres():
        named, name_params = "name = ANY(%s::text[])", [names]
    else:
        named, name_params = f"name IN ({', '.join(['%s'] * len(names))})", list(names)
    sql = (
        f"SELECT id, name, display_name FROM {table} "
        f"WHERE {namespaces} AND {named} AND classification <= %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *name_params, filters.ceiling])
        return cursor.fetchall()
