"""Memories, the query pieces that select them (MemoryQuerySet, LIVE_STATUSES), and their
history (MemoryEvent).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import connection, models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.deconstruct import deconstructible

from config.bounds import (
    INT32_MAX,
    datetime_checks,
    float_check,
    validate_datetime,
    validate_finite,
)
from memories.decay import DecayParams, decay_score
from memories.models.classification import Classification, DerivedQuerySet, derived_level
from memories.models.namespaces import Namespace
from memories.text import fold

# A session id: a client's string, for the session a memory was written in (session_id) and
# for those that recalled it (session_ids).
SESSION_ID_LENGTH = 100
POSITION_MAX = INT32_MAX
# The bound of relevance_score, a caller's own scale.
RELEVANCE_LIMIT = 1e6


@deconstructible
class ContentLength:
    """At most settings.API_MAX_CONTENT_LENGTH characters, read when a value is checked (the
    setting may change without a migration). On the model field, so the API, bulk, import,
    MCP, dashboard and admin refuse the same text."""

    def __call__(self, value: str) -> None:
        limit = settings.API_MAX_CONTENT_LENGTH
        if value is not None and len(value) > limit:
            raise ValidationError(
                f"At most {limit} characters (API_MAX_CONTENT_LENGTH).", code="max_length"
            )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ContentLength)


@deconstructible
class StringList:
    """A JSON list of at most max_items non-blank strings of at most max_length characters."""

    def __init__(self, max_items: int, max_length: int) -> None:
        self.max_items = max_items
        self.max_length = max_length

    def __call__(self, value: object) -> None:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValidationError("Must be a list of strings.", code="invalid")
        if len(value) > self.max_items:
            raise ValidationError(
                f"Ensure this field has no more than {self.max_items} elements.",
                code="max_items",
            )
        for item in value:
            if not item.strip():
                raise ValidationError("This list may not hold blank strings.", code="blank")
            if len(item) > self.max_length:
                raise ValidationError(
                    f"Each item may have at most {self.max_length} characters.",
                    code="max_length",
                )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StringList) and (self.max_items, self.max_length) == (
            other.max_items,
            other.max_length,
        )


KEYWORDS = StringList(50, 100)
TAGS = StringList(20, 50)  # emotion_tags and importance_flags


class MemoryQuerySet(models.QuerySet["Memory"]):
    def in_namespace(self, namespace: Namespace | int) -> MemoryQuerySet:
        return self.filter(namespace=namespace)

    def owned_by(self, user) -> MemoryQuerySet:
        return self.filter(namespace__owner=user)

    def live(self) -> MemoryQuerySet:
        """Memories that recall and review may show: active or promoted."""
        return self.filter(status__in=LIVE_STATUSES)

    def current(self, now) -> MemoryQuerySet:
        """Not superseded at `now`: no valid_until, or one still ahead (a memory that is
        valid only from a later time is current: it is not superseded)."""
        return self.filter(Q(valid_until__isnull=True) | Q(valid_until__gt=now))

    def valid_at(self, moment) -> MemoryQuerySet:
        """What was true at `moment`: valid_from at or before it, valid_until after it."""
        return self.filter(valid_from__lte=moment).current(moment)

    def within_ceiling(self, ceiling: int) -> MemoryQuerySet:
        return self.filter(classification__lte=ceiling)

    def visible_to(self, *, namespace_ids: Iterable[int], ceiling: int) -> MemoryQuerySet:
        """The visibility rule: memories of these namespaces at or below the ceiling.

        Scope.memories() is this; recall's SQL filter is tested against it
        (tests/recall/test_visibility.py)."""
        return self.filter(namespace_id__in=list(namespace_ids)).within_ceiling(ceiling)

    def unexpired(self, now) -> MemoryQuerySet:
        return self.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))

    def containing(self, text: str) -> MemoryQuerySet:
        """Memories whose folded text contains `text`, through each engine's trigram index."""
        needle = fold(text)
        if connection.vendor == "sqlite" and len(needle) >= 3:
            phrase = '"' + needle.replace('"', '""') + '"'
            matching = Memory.objects.extra(
                where=[
                    "memories_memory.id IN (SELECT rowid FROM memories_memory_trgm "
                    "WHERE memories_memory_trgm MATCH %s)"
                ],
                params=[f"search_text : {phrase}"],
            ).values("pk")
            return self.filter(pk__in=matching)
        return self.filter(search_text__contains=needle)


class Memory(models.Model):
    """One remembered fact, event or procedure, with the signals that rank and age it."""

    class MemoryType(models.TextChoices):
        EPISODIC = "episodic", "Episodic"
        SEMANTIC = "semantic", "Semantic"
        PROCEDURAL = "procedural", "Procedural"

    class Tier(models.TextChoices):
        SHORT_TERM = "short_term", "Short-term"
        LONG_TERM = "long_term", "Long-term"
        CORE = "core", "Core"

    class Storage(models.TextChoices):
        HOT = "hot", "Hot"
        COLD = "cold", "Cold"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        PROMOTED = "promoted", "Promoted"
        ARCHIVED = "archived", "Archived"
        FORGOTTEN = "forgotten", "Forgotten"

    # The indexes in Meta lead with it; it has no index of its own (one fewer per write).
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="memories", db_index=False
    )

    # Text. content is the English (or translated) text; content_original keeps the
    # source-language text when it differs. search_text/search_original are folded copies
    # (lower case, no diacritics) kept by the services for the trigram indexes.
    content = models.TextField(validators=[ContentLength()])
    content_original = models.TextField(blank=True, validators=[ContentLength()])
    language = models.CharField(max_length=16, default="en")
    keywords = models.JSONField(default=list, blank=True, validators=[KEYWORDS])
    topic = models.CharField(max_length=100, blank=True)
    cue = models.CharField(
        max_length=300,
        blank=True,
        help_text="The question a review card shows; empty: the topic and the first line.",
    )
    search_text = models.TextField(blank=True, editable=False)
    search_original = models.TextField(blank=True, editable=False)
    # The character pairs of search_text's unspaced CJK runs and each run's last character
    # (memories.text.cjk_tokens), which both engines' full-text indexes take in with
    # content and keywords.
    search_pairs = models.TextField(blank=True, default="", editable=False)

    memory_type = models.CharField(
        max_length=12, choices=MemoryType.choices, default=MemoryType.EPISODIC
    )
    tier = models.CharField(max_length=12, choices=Tier.choices, default=Tier.SHORT_TERM)
    storage = models.CharField(max_length=4, choices=Storage.choices, default=Storage.HOT)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    status_changed_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    promoted_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    forgotten_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    forgotten_reason = models.CharField(max_length=200, blank=True)
    forgotten_score = models.FloatField(null=True, blank=True, validators=[validate_finite])
    classification = models.PositiveSmallIntegerField(
        choices=Classification.choices, default=Classification.INTERNAL
    )

    # Signals (seeds 000-003).
    strength = models.FloatField(
        default=1.0, validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(2.0)]
    )
    stability = models.FloatField(
        default=0.0, validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    utility = models.FloatField(
        default=0.5, validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    confidence = models.FloatField(
        default=0.8, validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    emotion_score = models.FloatField(
        default=0.0, validators=[validate_finite, MinValueValidator(-5.0), MaxValueValidator(5.0)]
    )
    emotion_tags = models.JSONField(default=list, blank=True, validators=[TAGS])
    # trust 0-3 (trust_factor = 0.5 + 0.5 * trust/3); credibility is a source rank
    # 1 (most credible) to 5, and ranks <= 2 get seed 002's 1.25 factor.
    trust = models.FloatField(
        default=3.0, validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(3.0)]
    )
    credibility = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(5)]
    )
    relevance_score = models.FloatField(
        default=0.0,
        validators=[
            validate_finite,
            MinValueValidator(-RELEVANCE_LIMIT),
            MaxValueValidator(RELEVANCE_LIMIT),
        ],
    )
    importance_flags = models.JSONField(default=list, blank=True, validators=[TAGS])

    # Counters and timestamps.
    use_count = models.PositiveIntegerField(default=0)
    last_used_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    access_count = models.PositiveIntegerField(default=0)
    last_accessed_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    recall_count = models.PositiveIntegerField(default=0)
    last_recalled_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    recall_timestamps = models.JSONField(default=list, blank=True)  # last 20, ISO 8601
    session_ids = models.JSONField(default=list, blank=True)  # the sessions that recalled it
    # The conversation it was written in (a client's string) and its place there: the write
    # path links it to the session's previous turns (memories.sessions).
    session_id = models.CharField(max_length=SESSION_ID_LENGTH, blank=True, default="")
    position = models.PositiveIntegerField(
        null=True, blank=True, validators=[MaxValueValidator(POSITION_MAX)]
    )

    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    updated_at = models.DateTimeField(auto_now=True, validators=[validate_datetime])
    expires_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    # When what it says became true (default: created_at) and stopped being true (a newer
    # memory superseded it, or a person said so); open while valid_until is null.
    valid_from = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    valid_until = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])

    # Float32 vector bytes and the model that produced them; SimHash signature bytes.
    embedding = models.BinaryField(null=True, blank=True, editable=False)
    embedding_model = models.CharField(max_length=100, blank=True)
    signature = models.BinaryField(null=True, blank=True, editable=False)
    # memories.text.content_key of the content: the exact-duplicate check's index.
    content_key = models.CharField(max_length=64, blank=True, editable=False)

    objects = MemoryQuerySet.as_manager()

    RECALL_TIMESTAMPS_CAP = 20

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "memories"
        indexes = [
            models.Index(fields=["namespace", "status"], name="memory_ns_status"),
            models.Index(fields=["namespace", "topic"], name="memory_ns_topic"),
            models.Index(fields=["namespace", "created_at"], name="memory_ns_created"),
            models.Index(fields=["namespace", "tier", "status"], name="memory_ns_tier_status"),
            # Led by the key, which the duplicate check looks up with the namespace kept off
            # every index (memories.services.duplicates): led by the namespace, the planner
            # could take any index of the namespace instead.
            models.Index(fields=["content_key", "namespace"], name="memory_content_key_ns"),
            models.Index(
                fields=["namespace", "session_id", "position", "created_at"],
                name="memory_ns_session",
                condition=~Q(session_id=""),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(strength__gte=0.0) & Q(strength__lte=2.0), name="memory_strength_range"
            ),
            models.CheckConstraint(
                condition=Q(stability__gte=0.0) & Q(stability__lte=1.0),
                name="memory_stability_range",
            ),
            models.CheckConstraint(
                condition=Q(classification__gte=0) & Q(classification__lte=3),
                name="memory_classification_range",
            ),
            float_check("memory", "utility", 0.0, 1.0),
            float_check("memory", "confidence", 0.0, 1.0),
            float_check("memory", "emotion_score", -5.0, 5.0),
            float_check("memory", "trust", 0.0, 3.0),
            float_check("memory", "forgotten_score"),
            float_check("memory", "relevance_score", -RELEVANCE_LIMIT, RELEVANCE_LIMIT),
            models.CheckConstraint(
                condition=Q(valid_until__isnull=True) | Q(valid_until__gte=F("valid_from")),
                name="memory_valid_until_after_from",
            ),
            models.CheckConstraint(
                condition=Q(position__isnull=True)
                | (Q(position__gte=0) & Q(position__lte=POSITION_MAX)),
                name="memory_position_range",
            ),
            *datetime_checks(
                "memory",
                "status_changed_at",
                "promoted_at",
                "forgotten_at",
                "last_used_at",
                "last_accessed_at",
                "last_recalled_at",
                "created_at",
                "updated_at",
                "expires_at",
                "valid_from",
                "valid_until",
            ),
        ]

    def __str__(self) -> str:
        first_line = self.content.strip().splitlines()[0] if self.content.strip() else ""
        return first_line[:80]

    @property
    def is_superseded(self) -> bool:
        """No longer true now: its valid_until has passed."""
        return self.valid_until is not None and self.valid_until <= timezone.now()

    @property
    def classification_name(self) -> str:
        return Classification(self.classification).label

    def decay_score(self, now, params: DecayParams | None = None) -> float:
        """Seed 003's score at `now` with the namespace's decay model."""
        return decay_score(
            use_count=self.use_count,
            last_used_at=self.last_used_at,
            strength=self.strength,
            now=now,
            params=params or self.namespace.decay_params(),
        )


# Memories that recall and review show and the sweep still ages. The one declaration:
# MemoryQuerySet.live(), review's card filters and recall's SQL use it.
LIVE_STATUSES = (Memory.Status.ACTIVE.value, Memory.Status.PROMOTED.value)


def reachable_sql(
    alias: str, *, ceiling: int, now, statuses: tuple[str, ...] | None = LIVE_STATUSES
) -> tuple[str, list]:
    """The WHERE fragment (memories under `alias`) and its parameters of raw statements on
    the hot paths: at or below `ceiling`, current (MemoryQuerySet.current) and unexpired
    (MemoryQuerySet.unexpired) at `now`, in `statuses` (None: any). The one SQL form of
    those rules; tests/memories/test_reachable_sql.py holds it to the querysets."""
    at = connection.ops.adapt_datetimefield_value(now)
    sql = (
        f"{alias}.classification <= %s "
        f"AND ({alias}.valid_until IS NULL OR {alias}.valid_until > %s) "
        f"AND ({alias}.expires_at IS NULL OR {alias}.expires_at > %s)"
    )
    params: list = [ceiling, at, at]
    if statuses:
        sql += f" AND {alias}.status IN ({', '.join(['%s'] * len(statuses))})"
        params += list(statuses)
    return sql, params


class MemoryEvent(models.Model):
    """History: one row per change to a memory, kept after the memory is purged."""

    class Kind(models.TextChoices):
        CREATED = "created", "Created"
        UPDATED = "updated", "Updated"
        FORGOTTEN = "forgotten", "Forgotten"
        RESTORED = "restored", "Restored"
        PROMOTED = "promoted", "Promoted"
        ARCHIVED = "archived", "Archived"
        COLD = "cold", "Moved to cold storage"
        REACTIVATED = "reactivated", "Reactivated"
        TOUCHED = "touched", "Touched"
        GRADED = "graded", "Graded"
        PURGED = "purged", "Purged"
        SUPERSEDED = "superseded", "Superseded"
        MERGED = "merged", "Merged"

    # Indexed by event_ns_created, which leads with it.
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="events", db_index=False
    )
    memory = models.ForeignKey(
        Memory, on_delete=models.SET_NULL, null=True, blank=True, related_name="events"
    )
    memory_ref = models.BigIntegerField(help_text="The memory's id, kept after a purge.")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    source = models.CharField(max_length=20, default="system")  # api, dashboard, admin, worker
    # The memory's level when the event was written (the higher one for a change of
    # level); a caller below it never sees the event's values.
    classification = derived_level()
    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    objects = DerivedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["memory_ref", "created_at"], name="event_memory_created"),
            models.Index(fields=["namespace", "created_at"], name="event_ns_created"),
        ]
        constraints = datetime_checks("memoryevent", "created_at")

    def __str__(self) -> str:
        return f"{self.kind} #{self.memory_ref}"
