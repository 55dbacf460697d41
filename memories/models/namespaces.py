"""Namespaces: a user's memory spaces, with their ranking, decay and review settings."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator, MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from config.bounds import (
    datetime_checks,
    float_check,
    validate_datetime,
    validate_finite,
)
from memories.decay import DecayParams, half_life_order_error

# Ranking weights by namespace mode: similarity, recency (decay score), utility, confidence.
# agent_memory weights utility at 20% (seed 000).
MODE_WEIGHTS: dict[str, dict[str, float]] = {
    "agent_memory": {"similarity": 0.5, "recency": 0.2, "utility": 0.2, "confidence": 0.1},
    "personal": {"similarity": 0.6, "recency": 0.25, "utility": 0.05, "confidence": 0.1},
    "knowledge_base": {"similarity": 0.7, "recency": 0.05, "utility": 0.1, "confidence": 0.15},
}


# Bounds of a namespace's settings, shared by the model (so the admin and the import refuse
# them) and the API's serializer.
DESCRIPTION_MAX = 2000
HALF_LIFE_MAX_DAYS = 36500
POWER_ALPHA_MAX = 100


class NamespaceQuerySet(models.QuerySet["Namespace"]):
    def update(self, **kwargs) -> int:
        """An update sends no signal, so the owners' API tokens are told here: their
        processes keep the namespaces they named (memories.token_cache)."""
        from memories.token_cache import namespaces_changed  # the cache imports the models

        owners = set(self.values_list("owner_id", flat=True))
        changed = super().update(**kwargs)
        namespaces_changed(owners)
        return changed

    update.alters_data = True


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
    description = models.TextField(blank=True, validators=[MaxLengthValidator(DESCRIPTION_MAX)])
    mode = models.CharField(max_length=20, choices=Mode.choices, default=Mode.PERSONAL)

    # Ranking weights; null means "the mode's default" (MODE_WEIGHTS).
    weight_similarity = models.FloatField(
        "similarity weight",
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)],
    )
    weight_recency = models.FloatField(
        "recency weight",
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)],
    )
    weight_utility = models.FloatField(
        "utility weight",
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)],
    )
    weight_confidence = models.FloatField(
        "confidence weight",
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)],
    )

    # Decay (seed 003); null means the global setting of the same name.
    decay_model = models.CharField(max_length=20, choices=DecayModel.choices, blank=True)
    decay_half_life_days = models.FloatField(
        "half-life (days)",
        null=True,
        blank=True,
        validators=[
            validate_finite,
            MinValueValidator(0.001),
            MaxValueValidator(HALF_LIFE_MAX_DAYS),
        ],
    )
    decay_beta = models.FloatField(
        "decay beta",
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(2.0)],
    )
    decay_power_alpha = models.FloatField(
        "power-law alpha",
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.01), MaxValueValidator(POWER_ALPHA_MAX)],
    )
    decay_fast_half_life_days = models.FloatField(
        "fast half-life (days)",
        null=True,
        blank=True,
        validators=[
            validate_finite,
            MinValueValidator(0.001),
            MaxValueValidator(HALF_LIFE_MAX_DAYS),
        ],
    )
    decay_slow_half_life_days = models.FloatField(
        "slow half-life (days)",
        null=True,
        blank=True,
        validators=[
            validate_finite,
            MinValueValidator(0.001),
            MaxValueValidator(HALF_LIFE_MAX_DAYS),
        ],
    )
    decay_fast_weight = models.FloatField(
        "fast component's weight",
        null=True,
        blank=True,
        validators=[validate_finite, MinValueValidator(0.0), MaxValueValidator(1.0)],
    )

    # Review scheduling (seeds 000 and 004).
    scheduler = models.CharField(
        max_length=10,
        choices=SchedulerKind.choices,
        default=SchedulerKind.SM2,
        help_text="SM-2: the classic rule, an easiness factor per card multiplying the "
        "interval. FSRS: a model of your memory that aims at the retention you ask for; "
        "suggested for a person's own namespace.",
    )
    sm2_modifiers = models.BooleanField(
        "SM-2 modifiers",
        default=False,
        help_text="With SM-2, Anki's modifiers: Hard gives 1.2 times the last interval, "
        "Easy 1.3 times Good's, so each button schedules its own interval. Off: the "
        "seed's exact SM-2, where the grade only moves the easiness factor.",
    )
    desired_retention = models.FloatField(
        default=0.9, validators=[validate_finite, MinValueValidator(0.7), MaxValueValidator(0.99)]
    )
    new_cards_per_day = models.PositiveSmallIntegerField(
        default=5, validators=[MaxValueValidator(1000)]
    )

    class CardFront(models.TextChoices):
        CLOZE = "cloze", "Cloze: the memory with its most telling words hidden"
        FIRST_LINE = "first_line", "First line: the topic and the memory's first line"
        TOPIC = "topic", "Topic: only the topic (and keywords) as the question"

    # What the front of a card without a cue shows (review.cloze).
    card_front = models.CharField(
        max_length=10,
        choices=CardFront.choices,
        default=CardFront.CLOZE,
        help_text="What a card without a cue asks: cloze (default) hides the memory's most "
        "telling words, first_line shows its first line, topic only its topic.",
    )
    # A card lapsing this many times is tagged leech and suspended (Anki's default: 8).
    leech_threshold = models.PositiveSmallIntegerField(
        default=8, validators=[MinValueValidator(1), MaxValueValidator(100)]
    )
    # FSRS parameters fitted from this namespace's own review logs (review.optimizer);
    # empty: the fsrs package's defaults. `fsrs_fit` records the last fit and its metrics.
    fsrs_parameters = models.JSONField(null=True, blank=True)
    fsrs_fit = models.JSONField(null=True, blank=True)
    # The write path links a memory to the previous turns of its session (memories.sessions).
    session_links = models.BooleanField(
        default=True, help_text="Link each new memory to the previous turns of its session."
    )

    class Dedupe(models.TextChoices):
        EXACT = "exact", "Exact: a memory of the same text is not stored twice"
        NEAR = "near", "Near: nor one of almost the same text"
        OFF = "off", "Off: store every write"

    # A create whose text a live memory of the namespace has answers with that memory
    # (memories.services.memories); near: also one that is a near-duplicate of it
    # (memories.near_duplicates). Under exact, near-duplicates are stored and linked.
    dedupe = models.CharField(
        "duplicates", max_length=8, choices=Dedupe.choices, default=Dedupe.EXACT
    )

    class DecayFitMode(models.TextChoices):
        OFF = "off", "Off: the constants above"
        SUGGEST = "suggest", "Suggest: fit to this namespace's uses and show the result"
        AUTO = "auto", "Auto: use the fit when it predicts uses better than the constants"

    # Decay fitted to the namespace's own uses (memories.decay_fit, issue 19). Under auto,
    # the latest fit, when it beat the constants on its validation slice, is applied: it
    # decides the score in the sweep, recall and every page (decay_params), before the
    # decay_* fields above. Any other mode, or a fit that did not beat them: the constants.
    decay_fit = models.CharField(
        "fitted decay",
        max_length=8,
        choices=DecayFitMode.choices,
        default=DecayFitMode.OFF,
        help_text="Fit decay to this namespace's own uses: off (default), suggest (fit and "
        "show), auto (use the fit when it beats the constants).",
    )
    decay_fit_applied = models.ForeignKey(
        "memories.DecayFit",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
    )

    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    objects = NamespaceQuerySet.as_manager()

    class Meta:
        ordering = ["owner_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "slug"], name="namespace_unique_slug"),
            float_check("namespace", "weight_similarity", 0.0, 1.0),
            float_check("namespace", "weight_recency", 0.0, 1.0),
            float_check("namespace", "weight_utility", 0.0, 1.0),
            float_check("namespace", "weight_confidence", 0.0, 1.0),
            float_check("namespace", "decay_half_life_days", 0.001, HALF_LIFE_MAX_DAYS),
            float_check("namespace", "decay_beta", 0.0, 2.0),
            float_check("namespace", "decay_power_alpha", 0.01, POWER_ALPHA_MAX),
            float_check("namespace", "decay_fast_half_life_days", 0.001, HALF_LIFE_MAX_DAYS),
            float_check("namespace", "decay_slow_half_life_days", 0.001, HALF_LIFE_MAX_DAYS),
            float_check("namespace", "decay_fast_weight", 0.0, 1.0),
            # Namespace.clean's rule where both are set (an empty one is the setting's,
            # which the start-up check keeps in order).
            models.CheckConstraint(
                condition=Q(decay_fast_half_life_days__isnull=True)
                | Q(decay_slow_half_life_days__isnull=True)
                | Q(decay_fast_half_life_days__lte=models.F("decay_slow_half_life_days")),
                name="namespace_half_lives_in_order",
            ),
            float_check("namespace", "desired_retention", 0.7, 0.99),
            models.CheckConstraint(
                condition=Q(leech_threshold__gte=1) & Q(leech_threshold__lte=100),
                name="namespace_leech_threshold_range",
            ),
            *datetime_checks("namespace", "created_at"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.owner})"

    def clean(self) -> None:
        """The fast half-life is never longer than the slow one (decay.half_life_order_error),
        each as it applies: the namespace's own, or the global setting where it has none.
        Every writer of a namespace runs it through full_clean (memories.services.namespaces:
        the API, dashboard, admin and import); the error is on the field it set."""
        fast, slow = self.decay_fast_half_life_days, self.decay_slow_half_life_days
        if fast is None and slow is None:
            return  # the settings' pair, checked at start-up
        if not all(isinstance(v, int | float) for v in (fast, slow) if v is not None):
            return  # clean_fields says what is wrong with the value itself
        message = half_life_order_error(
            settings.DECAY_FAST_HALF_LIFE_DAYS if fast is None else fast,
            settings.DECAY_SLOW_HALF_LIFE_DAYS if slow is None else slow,
        )
        if message:
            if fast is None or slow is None:
                message += " An empty half-life is the global setting's."
            field = "decay_slow_half_life_days" if fast is None else "decay_fast_half_life_days"
            raise ValidationError({field: message})

    @property
    def applied_fit(self):
        """The DecayFit that decides this namespace's decay (under auto), or None."""
        if self.decay_fit != self.DecayFitMode.AUTO or self.decay_fit_applied_id is None:
            return None
        return self.decay_fit_applied

    def ranking_weights(self) -> dict[str, float]:
        """The mode's weights with this namespace's overrides applied."""
        weights = dict(MODE_WEIGHTS.get(self.mode, MODE_WEIGHTS[self.Mode.PERSONAL]))
        for key in weights:
            value = getattr(self, f"weight_{key}")
            if value is not None:
                weights[key] = value
        return weights

    def decay_params(self) -> DecayParams:
        """This namespace's decay model and parameters: the applied fit under decay_fit
        auto, else its own decay_* fields, falling back to the global settings."""
        fit = self.applied_fit
        if fit is not None:
            return fit.params()

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
