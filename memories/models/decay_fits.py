"""The use log (one row per use of a memory) and the decay fits learnt from it (issue 19).

MemoryUse is written, set-based, wherever a use is counted (recall's direct hits, touches,
a deduplicated create): memories.services.uses is its one writer. DecayFit keeps every fit
of a namespace's decay parameters (memories.decay_fit, pure; memories.services.decay_fits
reads the log and stores the result), so the dashboard can show their history.
"""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from config.bounds import (
    FLOAT_LIMIT,
    datetime_checks,
    float_check,
    validate_datetime,
    validate_finite,
)
from memories.decay import DecayParams
from memories.models.classification import DerivedQuerySet, derived_level
from memories.models.namespaces import Namespace


def _at_least(low: float, high: float | None = None) -> list:
    """Validators matching float_check(low, high): finite, and within the range."""
    found = [validate_finite, MinValueValidator(low)]
    return found if high is None else [*found, MaxValueValidator(high)]


class MemoryUse(models.Model):
    """One use of a memory in seed 003's sense: its use_count rose and its decay clock
    restarted. Kept DECAY_FIT_HISTORY_DAYS (the sweep prunes older rows); no foreign key
    to the memory, so a purged memory's uses still describe the namespace's past."""

    # Indexed by memoryuse_ns_used, which leads with it.
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    memory_ref = models.BigIntegerField()
    used_at = models.DateTimeField(validators=[validate_datetime])
    # The memory's use_count after this use (1 for its first).
    use_count = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["namespace", "used_at"], name="memoryuse_ns_used")]
        constraints = datetime_checks("memoryuse", "used_at")

    def __str__(self) -> str:
        return f"use {self.use_count} of #{self.memory_ref}"


class DecayFit(models.Model):
    """One fit of a namespace's decay model to its use log, kept as history."""

    class Trigger(models.TextChoices):
        SCHEDULE = "schedule", "Scheduled"
        REQUEST = "request", "Asked for"

    # Indexed by decayfit_ns_created, which leads with it.
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="decay_fits", db_index=False
    )
    created_at = models.DateTimeField(validators=[validate_datetime])
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.SCHEDULE)
    # The fitted parameters (a model's unused ones keep the defaults) and the use rate a
    # (uses per second per unit of score) that turns a score into a chance of use.
    model = models.CharField(max_length=20, choices=Namespace.DecayModel.choices)
    half_life_days = models.FloatField(validators=_at_least(0.001))
    beta = models.FloatField(validators=_at_least(0.0, 2.0))
    power_alpha = models.FloatField(validators=_at_least(0.01))
    fast_half_life_days = models.FloatField(validators=_at_least(0.001))
    slow_half_life_days = models.FloatField(validators=_at_least(0.001))
    fast_weight = models.FloatField(validators=_at_least(0.0, 1.0))
    rate = models.FloatField(validators=_at_least(0.0))
    default_rate = models.FloatField(validators=_at_least(0.0))
    n_memories = models.PositiveIntegerField()
    n_uses_train = models.PositiveIntegerField()
    n_uses_validation = models.PositiveIntegerField()
    # Validation log loss of the fitted and of the default parameters (null: too little
    # history to compute them), and each model's (JSON: {model: loss}).
    validation_loss = models.FloatField(null=True, blank=True, validators=_at_least(0.0))
    default_validation_loss = models.FloatField(null=True, blank=True, validators=_at_least(0.0))
    model_losses = models.JSONField(default=dict, blank=True)
    accepted = models.BooleanField(default=False)
    reason = models.TextField(blank=True)
    seconds = models.FloatField(default=0.0, validators=_at_least(0.0))
    # The level of the memories whose uses it learnt from: a caller below it never sees it.
    classification = derived_level()

    objects = DerivedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["namespace", "created_at"], name="decayfit_ns_created")]
        constraints = [
            float_check("decayfit", "half_life_days", 0.001, FLOAT_LIMIT),
            float_check("decayfit", "beta", 0.0, 2.0),
            float_check("decayfit", "power_alpha", 0.01, FLOAT_LIMIT),
            float_check("decayfit", "fast_half_life_days", 0.001, FLOAT_LIMIT),
            float_check("decayfit", "slow_half_life_days", 0.001, FLOAT_LIMIT),
            float_check("decayfit", "fast_weight", 0.0, 1.0),
            # The fitting step names the faster component fast (memories.decay_fit).
            models.CheckConstraint(
                condition=models.Q(fast_half_life_days__lte=models.F("slow_half_life_days")),
                name="decayfit_half_lives_in_order",
            ),
            float_check("decayfit", "rate", 0.0, FLOAT_LIMIT),
            float_check("decayfit", "default_rate", 0.0, FLOAT_LIMIT),
            float_check("decayfit", "seconds", 0.0, FLOAT_LIMIT),
            # Null (too little history) passes a check constraint.
            float_check("decayfit", "validation_loss", 0.0, FLOAT_LIMIT),
            float_check("decayfit", "default_validation_loss", 0.0, FLOAT_LIMIT),
            *datetime_checks("decayfit", "created_at"),
        ]

    def __str__(self) -> str:
        return f"{self.get_model_display()} fit, {self.created_at:%Y-%m-%d}"

    def params(self) -> DecayParams:
        """The fitted model and parameters, as the decay module takes them."""
        return DecayParams(
            model=self.model,
            half_life_days=self.half_life_days,
            beta=self.beta,
            power_alpha=self.power_alpha,
            fast_half_life_days=self.fast_half_life_days,
            slow_half_life_days=self.slow_half_life_days,
            fast_weight=self.fast_weight,
        )
