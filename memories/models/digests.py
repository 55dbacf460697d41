"""Consolidation digests of a period's memories, and which of them quote a hidden memory."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import models
from django.utils import timezone

from config.bounds import date_checks, datetime_checks, validate_date, validate_datetime
from memories.models.classification import DerivedQuerySet, derived_level
from memories.models.memories import Memory
from memories.models.namespaces import Namespace


def quotes_hidden(digests: Iterable[Consolidation], ceiling: int) -> set[int]:
    """Ids of the digests quoting a memory that now sits above the ceiling (one query)."""
    digests = list(digests)
    referenced = {pk for digest in digests for pk in digest.memory_ids}
    if not referenced:
        return set()
    hidden = set(
        Memory.objects.filter(pk__in=referenced, classification__gt=ceiling).values_list(
            "pk", flat=True
        )
    )
    return {digest.pk for digest in digests if hidden.intersection(digest.memory_ids)}


class Consolidation(models.Model):
    """An extractive digest of a period's memories for one topic (seed 002's S6)."""

    class Period(models.TextChoices):
        DAILY = "daily", "Daily"
        WEEKLY = "weekly", "Weekly"
        QUARTERLY = "quarterly", "Quarterly"

    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="consolidations"
    )
    period = models.CharField(max_length=10, choices=Period.choices)
    period_start = models.DateField(validators=[validate_date])
    topic = models.CharField(max_length=100, blank=True)
    text = models.TextField()
    memory_ids = models.JSONField(default=list, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)
    # The highest level among the memories it quotes and counts, when it was built; a
    # caller below it never sees the digest.
    classification = derived_level()
    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    # within_ceiling: digests built only from memories within the ceiling; callers also
    # drop digests quoting a memory reclassified above it since (quotes_hidden).
    objects = DerivedQuerySet.as_manager()

    class Meta:
        ordering = ["-period_start", "period", "topic"]
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "period", "period_start", "topic"],
                name="consolidation_unique_period_topic",
            ),
            *date_checks("consolidation", "period_start"),
            *datetime_checks("consolidation", "created_at"),
        ]

    def __str__(self) -> str:
        return f"{self.period} {self.period_start} {self.topic or '(all topics)'}"
