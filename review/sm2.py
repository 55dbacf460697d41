"""SuperMemo-2 scheduling (seeds 000 and 004), pure: the caller passes `now`.

Intervals: 1 day, 6 days, then ceil(previous interval * EF) using the EF from *before*
this review, as SM-2 and seed 004's code sample do. EF changes by
0.1 - (5 - q) * (0.08 + (5 - q) * 0.02), clamped to [ef_floor, ef_ceiling].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import IntEnum
from typing import Literal

EfOnFailure = Literal["update", "keep"]

INITIAL_EASINESS = 2.5
PASSING_QUALITY = 3
MAX_OVERDUE_DAYS = 30.0

# Priority weights: lateness dominates, difficulty next, fragility last; they sum to 1.
OVERDUE_WEIGHT = 0.5
LOW_EF_WEIGHT = 0.3
FEW_REPETITIONS_WEIGHT = 0.2


class Button(IntEnum):
    """Seed 004's four buttons and the SM-2 grade each one stands for."""

    AGAIN = 1
    HARD = 3
    GOOD = 4
    EASY = 5


@dataclass(frozen=True)
class SM2State:
    """Per-card SM-2 state; next_review None means a new card that was never scheduled."""

    easiness: float = INITIAL_EASINESS
    interval_days: int = 0
    repetitions: int = 0
    next_review: datetime | None = None
    last_quality: int | None = None


@dataclass(frozen=True)
class SM2Config:
    """EF bounds and the failure rule; defaults mirror SM2_EF_CEILING and SM2_EF_ON_FAILURE.

    ef_on_failure="update" applies the EF formula on every review (seed 000, and seed
    004's own code sample); "keep" leaves EF untouched when q < 3 (published SM-2).
    """

    ef_floor: float = 1.3
    ef_ceiling: float = 2.5
    ef_on_failure: EfOnFailure = "update"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.ef_ceiling) and self.ef_floor <= self.ef_ceiling):
            raise ValueError("ef_ceiling must be finite and at least ef_floor")
        if self.ef_on_failure not in ("update", "keep"):
            raise ValueError(
                f"ef_on_failure must be 'update' or 'keep', not {self.ef_on_failure!r}"
            )


def validate_quality(quality: int) -> int:
    """Reject anything but an int grade 0..5 (bools are not grades)."""
    if isinstance(quality, bool) or not isinstance(quality, int):
        raise ValueError(f"quality must be an int from 0 to 5, got {quality!r}")
    if not 0 <= quality <= 5:
        raise ValueError(f"quality must be from 0 to 5, got {quality}")
    return int(quality)


def easiness_delta(quality: int) -> float:
    """SM-2's EF change for a grade: +0.10, 0, -0.14, -0.32, -0.54, -0.80 for q = 5..0."""
    miss = 5 - validate_quality(quality)
    return 0.1 - miss * (0.08 + miss * 0.02)


def next_interval_days(state: SM2State, quality: int) -> int:
    """Days until the next review after grading `state` with `quality`."""
    if validate_quality(quality) < PASSING_QUALITY:
        return 1
    if state.repetitions == 0:
        return 1
    if state.repetitions == 1:
        return 6
    # round() strips float noise (6 * 2.3 = 13.799999999999999) before rounding up.
    return max(1, math.ceil(round(state.interval_days * state.easiness, 9)))


def sm2_update(state: SM2State, quality: int, *, now: datetime, config: SM2Config) -> SM2State:
    """Grade a card: the new interval, repetition count, EF and due date."""
    quality = validate_quality(quality)
    interval = next_interval_days(state, quality)
    passed = quality >= PASSING_QUALITY
    if passed or config.ef_on_failure == "update":
        easiness = state.easiness + easiness_delta(quality)
    else:
        easiness = state.easiness
    # Rounding strips float noise (2.5 - 0.14 = 2.3600000000000003); clamping comes last
    # so a bound that is not a round number is still never crossed.
    easiness = min(config.ef_ceiling, max(config.ef_floor, round(easiness, 6)))
    return SM2State(
        easiness=easiness,
        interval_days=interval,
        repetitions=state.repetitions + 1 if passed else 0,
        next_review=now + timedelta(days=interval),
        last_quality=quality,
    )


def is_due(state: SM2State, now: datetime) -> bool:
    """Due once next_review has passed; a new card (next_review None) is not due."""
    return state.next_review is not None and state.next_review <= now


def priority_score(state: SM2State, now: datetime, *, config: SM2Config | None = None) -> float:
    """Review urgency in [0, 1]: 0.5 * overdue + 0.3 * low EF + 0.2 * few repetitions.

    overdue = days past next_review / 30, capped at 1 (0 when not yet due or new);
    low EF = (ceiling - EF) / (ceiling - floor), clamped to [0, 1];
    few repetitions = 1 / (1 + repetitions).
    A card that is not due still gets its EF and repetition terms, so the score can rank
    a preview of upcoming work; callers that only want due cards filter with is_due.
    """
    config = config or SM2Config()
    overdue = 0.0
    if state.next_review is not None:
        days_late = (now - state.next_review).total_seconds() / 86_400
        overdue = min(1.0, max(0.0, days_late / MAX_OVERDUE_DAYS))
    span = config.ef_ceiling - config.ef_floor
    low_ef = 0.0 if span == 0 else (config.ef_ceiling - state.easiness) / span
    low_ef = min(1.0, max(0.0, low_ef))
    few_reps = 1.0 / (1 + max(0, state.repetitions))
    return OVERDUE_WEIGHT * overdue + LOW_EF_WEIGHT * low_ef + FEW_REPETITIONS_WEIGHT * few_reps


def preview_intervals(state: SM2State, *, now: datetime, config: SM2Config) -> dict[Button, int]:
    """Days each button would schedule; Hard, Good and Easy agree in classic SM-2 because
    the grade only changes EF, which affects the review after next."""
    return {
        button: sm2_update(state, int(button), now=now, config=config).interval_days
        for button in Button
    }
