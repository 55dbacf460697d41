"""The graph's writes: associations between memories, entities and relations."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from config.dberrors import unique_or
from memories.models import Association, Classification, Entity, Memory, Namespace, Relation
from memories.services.supersede import CYCLE, SUPERSEDES, supersedes_cycles
from memories.text import fold


def association_create(
    *, source: Memory, target: Memory, weight: float = 0.5, kind: str = "related"
) -> Association:
    """Link two memories of one namespace; a `supersedes` link that would close a cycle
    of replacements is refused (supersedes_cycles, as every supersession)."""
    if source.namespace_id != target.namespace_id:
        raise ValidationError({"target": "Both memories must be in the same namespace."})
    if source.pk == target.pk:
        raise ValidationError({"target": "A memory cannot be linked to itself."})
    if kind == SUPERSEDES and supersedes_cycles([(source.pk, target.pk)]):
        raise ValidationError({"target": CYCLE})
    linked = "These memories are already linked."
    if Association.objects.filter(source=source, target=target).exists():
        raise ValidationError({"target": linked})
    association = Association(
        namespace_id=source.namespace_id, source=source, target=target, weight=weight, kind=kind
    )
    association.full_clean(exclude=["namespace", "source", "target"])
    with unique_or("target", linked):
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
