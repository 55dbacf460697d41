"""Namespaces, memories and what hangs off them: associations, entities, digests, tokens."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import connection, models
from django.db.models import Q
from django.utils import timezone

from config.bounds import (
    FLOAT_LIMIT,
    date_checks,
    datetime_checks,
    float_check,
    validate_date,
    validate_datetime,
    validate_finite,
)
from memories.decay import DecayParams, decay_score
from memories.text import fold


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


# Ranking weights by namespace mode: similarity, recency (decay score), utility, confidence.
# agent_memory weights utility at 20% (seed 000).
MODE_WEIGHTS: dict[str, dict[str, float]] = {
    "agent_memory": {"similarity": 0.5, "recency": 0.2, "utility": 0.2, "confidence": 0.1},
    "personal": {"similarity": 0.6, "recency": 0.25, "utility": 0.05, "confidence": 0.1},
    "knowledge_base": {"similarity": 0.7, "recency": 0.05, "utility": 0.1, "confidence": 0.15},
}


class Namespace(models.Model):
    """A user's memory space; every memory, card and query lives in exactly one."""

    class Mode(models.TextChoices):
        AGENT_MEMORY = "agent_memory", "Agent memory"
        PERSONAL = "personal", "Personal"
        KNOWLEDGE_BASE = "knowledge_base", "Knowledge base"

    class DecayModel(models.TextChoices):
        EXPONENTIAL = "exponential", "Exponential"
        POWER_LAW = "power_law", "Power law"
        TWO_COMPONENT = "two_component", "Two-component exponential"

    class SchedulerKind(models.TextChoices):
        SM2 = "sm2", "SM-2"
        FSRS = "fsrs", "FSRS"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="namespaces"
    )
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=100)
    description = models.TextField(blank=True)
    mode = models.CharField(max_length=20, choices=Mode.choices, default=Mode.PERSONAL)

    # Ranking weights; null means "the mode's default" (MODE_WEIGHTS).
    weight_similarity = models.FloatField(
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)],
    )
    weight_recency = models.FloatField(
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)],
    )
    weight_utility = models.FloatField(
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)],
    )
    weight_confidence = models.FloatField(
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)],
    )

    # Decay (seed 003); null means the global setting of the same name.
    decay_model = models.CharField(max_length=20, choices=DecayModel.choices, blank=True)
    decay_half_life_days = models.FloatField(
        null=True, blank=True, validators=[validate_finite, MinValueValidator(0.001)]
    )
    decay_beta = models.FloatField(
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(2.0)],
    )
    decay_power_alpha = models.FloatField(
        null=True, blank=True, validators=[validate_finite, MinValueValidator(0.01)]
    )
    decay_fast_half_life_days = models.FloatField(
        null=True, blank=True, validators=[validate_finite, MinValueValidator(0.001)]
    )
    decay_slow_half_life_days = models.FloatField(
        null=True, blank=True, validators=[validate_finite, MinValueValidator(0.001)]
    )
    decay_fast_weight = models.FloatField(
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)],
    )

    # Review scheduling (seeds 000 and 004).
    scheduler = models.CharField(
        max_length=10, choices=SchedulerKind.choices, default=SchedulerKind.SM2
    )
    desired_retention = models.FloatField(
        default=0.9, validators=[validate_finite, MinValueValidator(0.7), MaxValueValidator(0.99)]
    )
    new_cards_per_day = models.PositiveSmallIntegerField(
        default=5, validators=[MaxValueValidator(1000)]
    )

    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    class Meta:
        ordering = ["owner_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "slug"], name="namespace_unique_slug"),
            float_check("namespace", "weight_similarity", 0.0, 1.0),
            float_check("namespace", "weight_recency", 0.0, 1.0),
            float_check("namespace", "weight_utility", 0.0, 1.0),
            float_check("namespace", "weight_confidence", 0.0, 1.0),
            float_check("namespace", "decay_half_life_days", 0.001, FLOAT_LIMIT),
            float_check("namespace", "decay_beta", 0.0, 2.0),
            float_check("namespace", "decay_power_alpha", 0.01, FLOAT_LIMIT),
            float_check("namespace", "decay_fast_half_life_days", 0.001, FLOAT_LIMIT),
            float_check("namespace", "decay_slow_half_life_days", 0.001, FLOAT_LIMIT),
            float_check("namespace", "decay_fast_weight", 0.0, 1.0),
            float_check("namespace", "desired_retention", 0.7, 0.99),
            *datetime_checks("namespace", "created_at"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.owner})"

    def ranking_weights(self) -> dict[str, float]:
        """The mode's weights with this namespace's overrides applied."""
        weights = dict(MODE_WEIGHTS.get(self.mode, MODE_WEIGHTS[self.Mode.PERSONAL]))
        for key in weights:
            value = getattr(self, f"weight_{key}")
            if value is not None:
                weights[key] = value
        return weights

    def decay_params(self) -> DecayParams:
        """This namespace's decay model and parameters, falling back to the global settings."""

        def pick(field: str, setting: str) -> float:
            value = getattr(self, field)
            return getattr(settings, setting) if value is None else value

        return DecayParams(
            model=self.decay_model or settings.DECAY_MODEL,
            half_life_days=pick("decay_half_life_days", "DECAY_HALF_LIFE_DAYS"),
            beta=pick("decay_beta", "DECAY_BETA"),
            power_alpha=pick("decay_power_alpha", "DECAY_POWER_ALPHA"),
            fast_half_life_days=pick("decay_fast_half_life_days", "DECAY_FAST_HALF_LIFE_DAYS"),
            slow_half_life_days=pick("decay_slow_half_life_days", "DECAY_SLOW_HALF_LIFE_DAYS"),
            fast_weight=pick("decay_fast_weight", "DECAY_FAST_WEIGHT"),
        )


class MemoryQuerySet(models.QuerySet["Memory"]):
    def in_namespace(self, namespace: Namespace | int) -> MemoryQuerySet:
        return self.filter(namespace=namespace)

    def owned_by(self, user) -> MemoryQuerySet:
        return self.filter(namespace__owner=user)

    def live(self) -> MemoryQuerySet:
        """Memories that recall and review may show: active or promoted."""
        return self.filter(status__in=LIVE_STATUSES)

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

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="memories")

    # Text. content is the English (or translated) text; content_original keeps the
    # source-language text when it differs. search_text/search_original are folded copies
    # (lower case, no diacritics) kept by the services for the trigram indexes.
    content = models.TextField()
    content_original = models.TextField(blank=True)
    language = models.CharField(max_length=16, default="en")
    keywords = models.JSONField(default=list, blank=True)
    topic = models.CharField(max_length=100, blank=True)
    cue = models.CharField(
        max_length=300,
        blank=True,
        help_text="The question a review card shows; empty: the topic and the first line.",
    )
    search_text = models.TextField(blank=True, editable=False)
    search_original = models.TextField(blank=True, editable=False)

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
    emotion_tags = models.JSONField(default=list, blank=True)
    # trust 0-3 (trust_factor = 0.5 + 0.5 * trust/3); credibility is a source rank
    # 1 (most credible) to 5, and ranks <= 2 get seed 002's 1.25 factor.
    trust = models.FloatField(
        default=3.0, validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(3.0)]
    )
    credibility = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(5)]
    )
    relevance_score = models.FloatField(default=0.0, validators=[validate_finite])
    importance_flags = models.JSONField(default=list, blank=True)

    # Counters and timestamps.
    use_count = models.PositiveIntegerField(default=0)
    last_used_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    access_count = models.PositiveIntegerField(default=0)
    last_accessed_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    recall_count = models.PositiveIntegerField(default=0)
    last_recalled_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    recall_timestamps = models.JSONField(default=list, blank=True)  # last 20, ISO 8601
    session_ids = models.JSONField(default=list, blank=True)

    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    updated_at = models.DateTimeField(auto_now=True, validators=[validate_datetime])
    expires_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])

    # Float32 vector bytes and the model that produced them; SimHash signature bytes.
    embedding = models.BinaryField(null=True, blank=True, editable=False)
    embedding_model = models.CharField(max_length=100, blank=True)
    signature = models.BinaryField(null=True, blank=True, editable=False)

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
            float_check("memory", "relevance_score"),
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
            ),
        ]

    def __str__(self) -> str:
        first_line = self.content.strip().splitlines()[0] if self.content.strip() else ""
        return first_line[:80]

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

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="events")
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


class Association(models.Model):
    """A weighted link between two memories of one namespace (seed 001's association)."""

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="associations")
    source = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="links_out")
    target = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="links_in")
    weight = models.FloatField(
        default=0.5, validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    kind = models.CharField(max_length=30, default="related")
    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

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
    object = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="relations_in")
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


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def usable(self, now) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )


class ApiToken(models.Model):
    """A bearer token for agents; only a SHA-256 of the secret is stored."""

    class Access(models.TextChoices):
        READ = "read", "Read only"
        WRITE = "write", "Read and write"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    all_namespaces = models.BooleanField(
        default=False, help_text="Use every namespace of the owner, present and future."
    )
    namespaces = models.ManyToManyField(Namespace, blank=True, related_name="tokens")
    access = models.CharField(max_length=5, choices=Access.choices, default=Access.READ)
    ceiling = models.PositiveSmallIntegerField(
        choices=Classification.choices, default=Classification.INTERNAL
    )
    expires_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    last_used_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    revoked_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = datetime_checks(
            "apitoken", "expires_at", "last_used_at", "revoked_at", "created_at"
        )

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def is_usable(self, now) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class BackgroundRun(models.Model):
    """One run of a background task (sweep, simulated recall, digests, embedding backfill)."""

    class Kind(models.TextChoices):
        SWEEP = "sweep", "Decay sweep"
        SIMULATED_RECALL = "simulated_recall", "Simulated recall"
        DIGESTS = "digests", "Consolidation digests"
        EMBEDDING_BACKFILL = "embedding_backfill", "Embedding backfill"
        TERM_STATS = "term_stats", "Full-text term statistics"
        IMPORT = "import", "Namespace import"

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        OK = "ok", "OK"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    namespace = models.ForeignKey(
        Namespace,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="background_runs",
        help_text="Empty: the run covered every namespace.",
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    finished_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    # What the run did: {"promoted": 3, "forgotten": 12, ...}; keys depend on the kind.
    counts = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    # The django-q2 task id (empty when run from a command), and which attempt this was.
    task_id = models.CharField(max_length=64, blank=True)
    attempt = models.PositiveSmallIntegerField(default=1)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [
            models.Index(fields=["kind", "started_at"], name="bgrun_kind_started"),
            models.Index(fields=["status", "started_at"], name="bgrun_status_started"),
        ]
        constraints = datetime_checks("backgroundrun", "started_at", "finished_at")

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.started_at:%Y-%m-%d %H:%M} {self.status}"

    @property
    def duration_seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class ImportChunk(models.Model):
    """A piece of a queued import's body (POST .../import over API_MAX_BODY_BYTES), kept in
    the database so that any machine's worker can read it; deleted when the import ends.

    Pieces are cut by size, not by line: the reader joins them (memories.importer).
    """

    run = models.ForeignKey(BackgroundRun, on_delete=models.CASCADE, related_name="import_chunks")
    position = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "position"], name="importchunk_unique_position")
        ]

    def __str__(self) -> str:
        return f"import #{self.run_id} piece {self.position}"
