"""A stored decay fit for tests: plausible parameters of every model, any field overridable."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memories.models import DecayFit, Namespace


def make_decay_fit(namespace: Namespace, **fields: Any) -> DecayFit:
    values: dict[str, Any] = {
        "created_at": datetime.now(UTC),
        "model": "exponential",
        "half_life_days": 3.0,
        "beta": 0.6,
        "power_alpha": 1.1,
        "fast_half_life_days": 0.5,
        "slow_half_life_days": 7.0,
        "fast_weight": 0.7,
        "rate": 1e-6,
        "default_rate": 1e-6,
        "n_memories": 1,
        "n_uses_train": 0,
        "n_uses_validation": 0,
    }
    return DecayFit.objects.create(namespace=namespace, **(values | fields))
