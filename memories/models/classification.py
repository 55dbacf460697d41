"""Sensitivity levels (Classification), and the level each row derived from memories carries."""

from __future__ import annotations

from django.db import models


class Classification(models.IntegerChoices):
    """Ordered sensitivity levels; a token's ceiling admits its level and those below."""

    PUBLIC = 0, "public"
    INTERNAL = 1, "internal"
    CONFIDENTIAL = 2, "confidential"
    RESTRICTED = 3, "restricted"

    @classmethod
    def default_for(cls, ceiling: int) -> Classification:
        """The level of a new memory (or relation, entity) whose writer names none: internal,
        or the writer's ceiling if that is lower. Every write path asks here, so a writer
        never creates what it could not read back."""
        return cls(min(cls.INTERNAL, ceiling))

    @classmethod
    def from_name(cls, name: str) -> Classification:
        for member in cls:
            if member.label == name:
                return member
        raise ValueError(f"unknown classification {name!r}")


class DerivedQuerySet(models.QuerySet):
    """Rows derived from memories (events, entities, relations, digests), each carrying
    the level of what it came from in its own `classification` column."""

    def within_ceiling(self, ceiling: int) -> DerivedQuerySet:
        return self.filter(classification__lte=ceiling)


def derived_level() -> models.PositiveSmallIntegerField:
    """The stored level of derived data. Unset (a raw SQL insert) means restricted."""
    return models.PositiveSmallIntegerField(
        choices=Classification.choices,
        default=Classification.RESTRICTED,
        db_default=Classification.RESTRICTED,
    )
