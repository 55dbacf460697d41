"""Simulated recall for the background recall worker (seed 000).

The worker has no human to grade a memory, so it estimates how likely the memory is to
be recalled from its confidence, utility and recency, turns that into an SM-2 grade, and
nudges utility by the outcome. Randomness is the caller's: pass a uniform draw, or none
for a deterministic run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from memories.decay import require_finite
from review.sm2 import PASSING_QUALITY, validate_quality


@dataclass(frozen=True)
class SimulationParams:
    """Weights and cut-offs of the simulated recall.

    p = confidence_weight * confidence + utility_weight * utility
        + recency_weight * 0.5^(days / recency_half_life_days), clamped to [0, 1].
    Recall succeeds when the draw is below p; without a draw, `deterministic_draw`
    stands in (0.5: succeed exactly when recall is likelier than not).
    A success grades 5 when p >= easy_at, 4 when p >= good_at, else 3.
    A failure grades 2 when p >= near_miss_at ("seemed easy"), 1 when p >= blank_at,
    else 0 (blackout).
    """

    confidence_weight: float = 0.5
    utility_weight: float = 0.3
    recency_weight: float = 0.2
    recency_half_life_days: float = 7.0
    deterministic_draw: float = 0.5
    easy_at: float = 0.85
    good_at: float = 0.65
    near_miss_at: float = 0.4
    blank_at: float = 0.2
    success_gain: float = 0.1
    failure_loss: float = 0.15

    def __post_init__(self) -> None:
        for field in fields(self):
            require_finite(field.name, getattr(self, field.name))


DEFAULT_PARAMS = SimulationParams()


def _clamp01(value: float) -> float:
    return min(1.0, max(0.0, value))


def _clamp01_input(name: str, value: float) -> float:
    # _clamp01 alone would turn NaN into 0.0, a plausible confidence or utility.
    return _clamp01(require_finite(name, value))


def recall_probability(
    *,
    confidence: float,
    utility: float,
    days_since_last_recall: float,
    params: SimulationParams = DEFAULT_PARAMS,
) -> float:
    """Estimated chance of recall in [0, 1]; inputs outside [0, 1] are clamped first."""
    days = max(0.0, require_finite("days_since_last_recall", days_since_last_recall))
    recency = 0.5 ** (days / params.recency_half_life_days)
    p = (
        params.confidence_weight * _clamp01_input("confidence", confidence)
        + params.utility_weight * _clamp01_input("utility", utility)
        + params.recency_weight * recency
    )
    return _clamp01(p)


def simulate_quality(
    *,
    confidence: float,
    utility: float,
    days_since_last_recall: float,
    rng_value: float | None = None,
    params: SimulationParams = DEFAULT_PARAMS,
) -> int:
    """SM-2 grade 0-5 for one simulated recall; rng_value is a uniform draw in [0, 1)."""
    if rng_value is not None and not (0.0 <= rng_value < 1.0 and math.isfinite(rng_value)):
        raise ValueError(f"rng_value must be in [0, 1), got {rng_value}")
    p = recall_probability(
        confidence=confidence,
        utility=utility,
        days_since_last_recall=days_since_last_recall,
        params=params,
    )
    draw = params.deterministic_draw if rng_value is None else rng_value
    if draw < p:
        if p >= params.easy_at:
            return 5
        return 4 if p >= params.good_at else 3
    if p >= params.near_miss_at:
        return 2
    return 1 if p >= params.blank_at else 0


def adjust_utility(
    utility: float,
    quality: int,
    *,
    success_gain: float = DEFAULT_PARAMS.success_gain,
    failure_loss: float = DEFAULT_PARAMS.failure_loss,
) -> float:
    """Move utility toward 1 after a success (by gain * (1 - u)) or toward 0 after a
    failure (by loss * u), so it stays in [0, 1] and changes least near the bound it
    approaches. Failure costs more than success earns: memories must keep earning."""
    utility = _clamp01_input("utility", utility)
    require_finite("success_gain", success_gain)
    require_finite("failure_loss", failure_loss)
    if validate_quality(quality) >= PASSING_QUALITY:
        return _clamp01(utility + success_gain * (1.0 - utility))
    return _clamp01(utility - failure_loss * utility)
