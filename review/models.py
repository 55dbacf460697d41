"""Review scheduling state per memory, and the log of every grade."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from memories.models import Memory, Namespace


class CardQuerySet(models.QuerySet["Card"]):
    def in_namespace(self, namespace: Namespace | int) -> CardQuerySet:
        return self.filter(namespace=namespace)

    def due(self, now) -> CardQuerySet:
        return self.filter(next_review__lte=now)

    def new(self) -> CardQuerySet:
        return self.filter(next_review__isnull=True)


class Card(models.Model):
    """The scheduling state of one reviewable memory. A deck is the memory's topic."""

    memory = models.OneToOneField(Memory, on_delete=models.CASCADE, related_name="card")
    # Denormalised from memory.namespace so the due queue is one index range scan.
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="cards")
    scheduler = models.CharField(
        max_length=10,
        choices=Namespace.SchedulerKind.choices,
        default=Namespace.SchedulerKind.SM2,
    )
    easiness = models.FloatField(default=2.5)
    interval_days = models.PositiveIntegerField(default=0)
    repetitions = models.PositiveIntegerField(default=0)
    next_review = models.DateTimeField(null=True, blank=True, help_text="Empty for a new card.")
    last_quality = models.PositiveSmallIntegerField(null=True, blank=True)
    last_reviewed_at = models.DateTimeField(null=True, blank=True)
    total_reviews = models.PositiveIntegerField(default=0)
    correct_reviews = models.PositiveIntegerField(default=0)
    fsrs_state = models.JSONField(null=True, blank=True)
    # Incremented on every grade: a grade computed from a stale read is refused.
    version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    objects = CardQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["namespace", "next_review"], name="card_ns_next_review"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(easiness__gte=1.3), name="card_easiness_floor"),
            models.CheckConstraint(
                condition=Q(last_quality__isnull=True) | Q(last_quality__lte=5),
                name="card_last_quality_range",
            ),
        ]

    def __str__(self) -> str:
        return f"card for memory #{self.memory_id}"

    def is_due(self, now) -> bool:
        return self.next_review is not None and self.next_review <= now


class ReviewLog(models.Model):
    """One grade of one card, with the scheduling state before and after it."""

    class Source(models.TextChoices):
        HUMAN = "human", "Human"
        SIMULATED = "simulated", "Simulated"
        IMPLICIT = "implicit", "Implicit"

    class Mode(models.TextChoices):
        NORMAL = "normal", "Normal"
        CRAM = "cram", "Cram"

    card = models.ForeignKey(Card, on_delete=models.CASCADE, related_name="logs")
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="review_logs")
    grade = models.PositiveSmallIntegerField()
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.HUMAN)
    mode = models.CharField(max_length=6, choices=Mode.choices, default=Mode.NORMAL)
    state_before = models.JSONField(default=dict)
    state_after = models.JSONField(default=dict)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    reviewed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-reviewed_at", "-id"]
        indexes = [
            models.Index(fields=["namespace", "reviewed_at"], name="reviewlog_ns_reviewed"),
            models.Index(fields=["card", "reviewed_at"], name="reviewlog_card_reviewed"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(grade__lte=5), name="reviewlog_grade_range"),
        ]

    def __str__(self) -> str:
        return f"{self.get_source_display()} grade {self.grade} on card #{self.card_id}"
