"""Review scheduling state per memory, and the log of every grade."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from config.bounds import (
    FLOAT_LIMIT,
    datetime_checks,
    float_check,
    validate_datetime,
    validate_finite,
)
from memories.models import LIVE_STATUSES, Classification, Memory, Namespace

# The longest answer time a review log keeps (a day, in ms); longer is a card left open.
MAX_DURATION_MS = 86_400_000


def reviewable_q(
    *,
    now,
    ceiling: int | None = None,
    live_only: bool = True,
    set_aside: bool = False,
    prefix: str = "",
) -> Q:
    """The one rule for a card that can be studied at `now`, as a condition on Card or on a
    relation to it (`prefix`: "card__" from a session item). Forgotten and archived
    memories sit out (unless not `live_only`: the dashboard shows them with a Restore
    button), and so do superseded ones (no longer true: memories.models.MemoryQuerySet.
    current), memories above the caller's classification ceiling (None: any), suspended
    cards and cards buried until later (unless `set_aside`: the routes that suspend, bury
    or undo act on those too)."""

    def q(**lookups: object) -> Q:
        return Q(**{prefix + name: value for name, value in lookups.items()})

    rule = q(memory__valid_until__isnull=True) | q(memory__valid_until__gt=now)
    if live_only:
        rule &= q(memory__status__in=LIVE_STATUSES)
    if ceiling is not None:
        rule &= q(memory__classification__lte=ceiling)
    if not set_aside:
        rule &= q(suspended_at__isnull=True)
        rule &= q(buried_until__isnull=True) | q(buried_until__lte=now)
    return rule


class CardQuerySet(models.QuerySet["Card"]):
    def in_namespace(self, namespace: Namespace | int) -> CardQuerySet:
        return self.filter(namespace=namespace)

    def due(self, now) -> CardQuerySet:
        return self.filter(next_review__lte=now)

    def due_before(self, moment) -> CardQuerySet:
        """Cards whose next review falls before `moment` (the start of tomorrow for "today")."""
        return self.filter(next_review__lt=moment)

    def new(self) -> CardQuerySet:
        return self.filter(next_review__isnull=True)

    def reviewable(self, ceiling: int | None = None) -> CardQuerySet:
        """Cards review may show now (reviewable_q): the queue, decks, cram, counts and
        every API route that studies a card."""
        return self.filter(reviewable_q(now=timezone.now(), ceiling=ceiling))

    def in_deck(self, deck: str | None) -> CardQuerySet:
        """A deck is the memory's topic; None means every deck."""
        return self if deck is None else self.filter(memory__topic=deck)


class Card(models.Model):
    """The scheduling state of one reviewable memory. A deck is the memory's topic."""

    memory = models.OneToOneField(Memory, on_delete=models.CASCADE, related_name="card")
    # Denormalised from memory.namespace so the due queue is one index range scan; indexed
    # by the indexes in Meta, which lead with it.
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="cards", db_index=False
    )
    scheduler = models.CharField(
        max_length=10,
        choices=Namespace.SchedulerKind.choices,
        default=Namespace.SchedulerKind.SM2,
    )
    easiness = models.FloatField(default=2.5, validators=[validate_finite, MinValueValidator(1.3)])
    interval_days = models.PositiveIntegerField(default=0)
    repetitions = models.PositiveIntegerField(default=0)
    next_review = models.DateTimeField(
        null=True, blank=True, help_text="Empty for a new card.", validators=[validate_datetime]
    )
    last_quality = models.PositiveSmallIntegerField(null=True, blank=True)
    last_reviewed_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    total_reviews = models.PositiveIntegerField(default=0)
    correct_reviews = models.PositiveIntegerField(default=0)
    # When the card stopped being new: counts against the deck's daily new-card limit.
    first_reviewed_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    fsrs_state = models.JSONField(null=True, blank=True)
    # Failed grades after the card had been learned (Anki's lapses); at the namespace's
    # leech_threshold the card is tagged leech and suspended (review.services.cards).
    lapses = models.PositiveIntegerField(default=0)
    leech = models.BooleanField(default=False)
    # A suspended card never comes up for review until unsuspended; a buried one not
    # before buried_until (the start of the person's tomorrow).
    suspended_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    buried_until = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    # Incremented on every grade: a grade computed from a stale read is refused.
    version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    objects = CardQuerySet.as_manager()

    class Meta:
        indexes = [
            # id breaks ties (card_reschedule_now gives many cards one next_review), so
            # the queue's ORDER BY next_review, id LIMIT n is read straight off the index.
            models.Index(fields=["namespace", "next_review", "id"], name="card_ns_next_review"),
            models.Index(fields=["namespace", "first_reviewed_at"], name="card_ns_first_reviewed"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(easiness__gte=1.3), name="card_easiness_floor"),
            # The floor alone lets PostgreSQL's NaN and infinity through (both sort above it).
            float_check("card", "easiness", 1.3, FLOAT_LIMIT),
            models.CheckConstraint(
                condition=Q(last_quality__isnull=True) | Q(last_quality__lte=5),
                name="card_last_quality_range",
            ),
            *datetime_checks(
                "card",
                "next_review",
                "last_reviewed_at",
                "first_reviewed_at",
                "created_at",
                "suspended_at",
                "buried_until",
            ),
        ]

    def __str__(self) -> str:
        return f"card for memory #{self.memory_id}"

    def is_due(self, now) -> bool:
        return self.next_review is not None and self.next_review <= now


# A card's scheduling state: what a ReviewLog snapshots, card_undo restores and an export
# carries (without version, which is local to a database). The one declaration.
CARD_STATE_FIELDS = (
    "scheduler",
    "easiness",
    "interval_days",
    "repetitions",
    "next_review",
    "last_quality",
    "last_reviewed_at",
    "first_reviewed_at",
    "total_reviews",
    "correct_reviews",
    "fsrs_state",
    "lapses",
    "leech",
    "suspended_at",
    "version",
)


class ReviewLog(models.Model):
    """One grade of one card, with the scheduling state before and after it."""

    class Source(models.TextChoices):
        HUMAN = "human", "Human"
        SIMULATED = "simulated", "Simulated"
        IMPLICIT = "implicit", "Implicit"

    class Mode(models.TextChoices):
        NORMAL = "normal", "Normal"
        CRAM = "cram", "Cram"

    # Both indexed by the indexes in Meta, which lead with them.
    card = models.ForeignKey(Card, on_delete=models.CASCADE, related_name="logs", db_index=False)
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="review_logs", db_index=False
    )
    grade = models.PositiveSmallIntegerField()
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.HUMAN)
    mode = models.CharField(max_length=6, choices=Mode.choices, default=Mode.NORMAL)
    state_before = models.JSONField(default=dict)
    state_after = models.JSONField(default=dict)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    session = models.ForeignKey(
        "StudySession",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="review_logs",
    )
    reviewed_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    # How long the person took to answer (the card shown to the grade), in ms; empty when
    # unknown (agents, the worker, a client that did not send it). At most a day.
    duration_ms = models.PositiveIntegerField(
        null=True, blank=True, validators=[MaxValueValidator(MAX_DURATION_MS)]
    )
    # Set by card_undo; an undone grade stays for the audit trail but counts nowhere.
    undone_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    # The memory's level when the grade was given: a caller whose ceiling is below it never
    # sees the grade (export, statistics), even once the memory is declassified, as with
    # its history events (memories.models.MemoryEvent).
    classification = models.PositiveSmallIntegerField(
        choices=Classification.choices, default=Classification.RESTRICTED
    )

    class Meta:
        ordering = ["-reviewed_at", "-id"]
        indexes = [
            models.Index(fields=["namespace", "reviewed_at"], name="reviewlog_ns_reviewed"),
            models.Index(fields=["card", "reviewed_at"], name="reviewlog_card_reviewed"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(grade__lte=5), name="reviewlog_grade_range"),
            models.CheckConstraint(
                condition=Q(duration_ms__isnull=True) | Q(duration_ms__lte=MAX_DURATION_MS),
                name="reviewlog_duration_range",
            ),
            *datetime_checks("reviewlog", "reviewed_at", "undone_at"),
        ]

    def __str__(self) -> str:
        return f"{self.get_source_display()} grade {self.grade} on card #{self.card_id}"


class StudySession(models.Model):
    """A person's pass over a queue (study) or over a deck without scheduling (cram)."""

    class Mode(models.TextChoices):
        STUDY = "study", "Study"
        CRAM = "cram", "Cram"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        FINISHED = "finished", "Finished"

    # Indexed by session_ns_user_status, which leads with it.
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="study_sessions", db_index=False
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="study_sessions",
    )
    mode = models.CharField(max_length=5, choices=Mode.choices, default=Mode.STUDY)
    # None: every deck; "" is a real deck (memories without a topic).
    deck = models.CharField(max_length=100, null=True, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ACTIVE)
    started_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    updated_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    finished_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [
            models.Index(
                fields=["namespace", "user", "mode", "status"], name="session_ns_user_status"
            ),
        ]
        constraints = datetime_checks("studysession", "started_at", "updated_at", "finished_at")

    def __str__(self) -> str:
        deck = "all decks" if self.deck is None else (self.deck or "(no topic)")
        return f"{self.get_mode_display()} session #{self.pk} on {deck}"

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE


class StudySessionItem(models.Model):
    """One card in a session, in show order, with what the person answered."""

    # Indexed by session_item_next, which leads with it.
    session = models.ForeignKey(
        StudySession, on_delete=models.CASCADE, related_name="items", db_index=False
    )
    card = models.ForeignKey(Card, on_delete=models.CASCADE, related_name="session_items")
    # Show order; a card graded below 4 in a study session moves behind the last one, an
    # undone grade brings its card back in front (hence signed).
    position = models.IntegerField()
    # The memory's topic when the session started, so per-deck scores do not move.
    deck = models.CharField(max_length=100, blank=True)
    is_new = models.BooleanField(default=False)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Study: the grade that changed the schedule (the first one) and the latest one.
    first_grade = models.PositiveSmallIntegerField(null=True, blank=True)
    last_grade = models.PositiveSmallIntegerField(null=True, blank=True)
    review_log = models.ForeignKey(
        ReviewLog, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # A learning step (a grade scheduling the card again within LEARNING_HORIZON): the
    # card comes back in this session at due_at, and its grade then counts. Empty: ready.
    due_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    # Cram: the person's correct/incorrect tap, kept for the session's score only.
    correct = models.BooleanField(null=True, blank=True)
    done = models.BooleanField(default=False)
    answered_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])

    class Meta:
        ordering = ["session_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["session", "card"], name="session_item_unique_card"),
            *datetime_checks("studysessionitem", "answered_at", "due_at"),
        ]
        indexes = [
            models.Index(fields=["session", "done", "position"], name="session_item_next"),
        ]

    def __str__(self) -> str:
        return f"card #{self.card_id} in session #{self.session_id}"


class DeckOptions(models.Model):
    """Options of one deck (a topic of a namespace) that override the namespace's own;
    an empty field inherits the namespace's value."""

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="decks")
    # The deck: a memory topic ("" is the deck of memories without a topic).
    topic = models.CharField(max_length=100, blank=True)
    new_cards_per_day = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MaxValueValidator(1000)],
        help_text="Empty: the namespace's new cards per day.",
    )

    class Meta:
        ordering = ["namespace_id", "topic"]
        constraints = [
            models.UniqueConstraint(fields=["namespace", "topic"], name="deck_options_unique"),
            models.CheckConstraint(
                condition=Q(new_cards_per_day__isnull=True) | Q(new_cards_per_day__lte=1000),
                name="deck_options_new_per_day_range",
            ),
        ]

    def __str__(self) -> str:
        return f"options of deck {self.topic or '(no topic)'} in {self.namespace}"
