"""The graph around memories: associations between memories, entities and their relations."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from config.bounds import datetime_checks, float_check, validate_datetime, validate_finite
from memories.models.classification import DerivedQuerySet, derived_level
from memories.models.memories import Memory
from memories.models.namespaces import Namespace


class Association(models.Model):
    """A weighted link between two memories of one namespace (seed 001's association)."""

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="associations")
    # Its own index although association_unique_pair leads with it: the narrower index keeps
    # recall's spreading statement cheap enough that PostgreSQL does not plan it parallel
    # (2 workers launched for 88 rows: 9 ms instead of 1; tests/config/
    # test_no_redundant_indexes.py names it as the one exception).
    source = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="links_out")
    # Indexed by association_target.
    target = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="links_in", db_index=False
    )
    weight = models.FloatField(
        default=0.5, validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    kind = models.CharField(max_length=30, default="related")
    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    # The higher level of its two memories when it was written, raised with either of them
    # and never lowered (memories 0025's triggers set it on every write path): a caller
    # below it never sees the link, even once both memories are within its ceiling.
    classification = derived_level()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "target"], name="association_unique_pair"),
            models.CheckConstraint(
                condition=~Q(source=models.F("target")), name="association_not_self"
            ),
            float_check("association", "weight", 0.0, 1.0),
            *datetime_checks("association", "created_at"),
        ]
        indexes = [models.Index(fields=["target"], name="association_target")]

    def __str__(self) -> str:
        return f"{self.source_id} -> {self.target_id} ({self.weight:.2f})"


class Entity(models.Model):
    """A named thing memories mention (alice, project-x); names are stored folded."""

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="entities")
    name = models.CharField(max_length=200)
    display_name = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=30, default="thing")  # person, place, org, project...
    # The lowest level of what named it (a declaration, a relation): a name only a hidden
    # relation introduced stays hidden.
    classification = derived_level()
    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    objects = DerivedQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "entities"
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="entity_unique_name"),
            *datetime_checks("entity", "created_at"),
        ]

    def __str__(self) -> str:
        return self.display_name or self.name


class RelationQuerySet(DerivedQuerySet):
    def within_ceiling(self, ceiling: int) -> RelationQuerySet:
        """Relations recorded within the ceiling whose memory, if still there, is too (a
        memory reclassified upwards takes what was drawn from it along)."""
        return (
            super()
            .within_ceiling(ceiling)
            .filter(Q(memory__isnull=True) | Q(memory__classification__lte=ceiling))
        )


class Relation(models.Model):
    """subject -[predicate]-> object, as in alice works_with bob (seed 002's S8)."""

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="relations")
    subject = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="relations_out")
    predicate = models.CharField(max_length=100)
    # Indexed by relation_object.
    object = models.ForeignKey(
        Entity, on_delete=models.CASCADE, related_name="relations_in", db_index=False
    )
    memory = models.ForeignKey(
        Memory, on_delete=models.SET_NULL, null=True, blank=True, related_name="relations"
    )
    weight = models.FloatField(
        default=0.6, validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    # Its memory's level when recorded (or the writer's default level without one); a
    # caller below it never sees the relation.
    classification = derived_level()
    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    objects = RelationQuerySet.as_manager()

    class Meta:
        constraints = [
            # Per level: a caller asserting a fact that is also recorded above its ceiling
            # gets its own row, not an "already exists" that would reveal the hidden one.
            models.UniqueConstraint(
                fields=["subject", "predicate", "object", "classification"],
                name="relation_unique_triple_level",
            ),
            float_check("relation", "weight", 0.0, 1.0),
            *datetime_checks("relation", "created_at"),
        ]
        indexes = [models.Index(fields=["object"], name="relation_object")]

    def __str__(self) -> str:
        return f"{self.subject} -[{self.predicate}]-> {self.object}"
