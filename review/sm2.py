"""SuperMemo-2 scheduling (seeds 000 and 004), pure: the caller passes `now`.

Intervals: 1 day, 6 days, then ceil(previous interval * EF) using the EF from *before*
this review, as SM-2 and seed 004's code sample do. EF changes by
0.1 - (5 - q) * (0.08 + (5 - q) * 0.02), clamped to [ef_floor, ef_ceiling].
Intervals stop at max_interval_days (100 years by default, as FSRS): uncapped, they grow
by EF each pass and the 17th consecutive pass overflowed the calendar.

In that exact SM-2 the grade only moves EF, so Hard, Good and Easy schedule the same next
interval. With `modifiers` (Anki's, a namespace's choice) the buttons differ at once: Hard
gives HARD_FACTOR times the previous interval, Easy gives EASY_BONUS times Good's (EASY_FIRST
days for a card's first pass), Good and Again stay SM-2's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import IntEnum
from typing import Literal

from memories.decay import require_finite

EfOnFailure = Literal["update", "keep"]

INITIAL_EASINESS = 2.5
PASSING_QUALITY = 3
MAX_OVERDUE_DAYS = 30.0
DEFAULT_MAX_INTERVAL_DAYS = 36_500
# The last instant a card may be due: config.bounds.DATETIME_MAX, the latest datetime
# every database column and time zone round-trip. Due dates saturate here.
LATEST_DUE = datetime(9999, 12, 30, tzinfo=UTC)

# Anki's SM-2 modifiers (SM2Config.modifiers): Hard and Easy mean something at once.
HARD_FACTOR = 1.2
EASY_BONUS = 1.3
EASY_FIRST_DAYS = 4

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
    """EF bounds, the failure rule and the interval cap; defaults mirror SM2_EF_CEILING,
    SM2_EF_ON_FAILURE and SM2_MAX_INTERVAL_DAYS.

    ef_on_failure="update" applies the EF formula on every review (seed 000, and seed
    004's own code sample); "keep" leaves EF untouched when q < 3 (published SM-2).
    """

    ef_floor: float = 1.3
    ef_ceiling: float = 2.5
    ef_on_failure: EfOnFailure = "update"
    max_interval_days: int = DEFAULT_MAX_INTERVAL_DAYS
    modifiers: bool = False  # Anki's Hard and Easy modifiers (module docstring)

    def __post_init__(self) -> None:
        require_finite("ef_floor", self.ef_floor)
        require_finite("ef_ceiling", self.ef_ceiling)
        if not self.ef_floor <= self.ef_ceiling:
            raise ValueError("ef_ceiling must be at least ef_floor")
        cap = self.max_interval_days
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ValueError(f"max_interval_days must be an int of at least 1, got {cap!r}")
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


def next_interval_days(
    state: SM2State,
    quality: int,
    *,
    max_days: int = DEFAULT_MAX_INTERVAL_DAYS,
    modifiers: bool = False,
) -> int:
    """Days until the next review after grading `state` with `quality`, at most max_days;
    `modifiers`: Anki's Hard and Easy (module docstring)."""
    easiness = require_finite("easiness", state.easiness)
    quality = validate_quality(quality)
    if quality < PASSING_QUALITY:
        return 1
    good = _good_interval(state, easiness, max_days)
    if not modifiers or quality == Button.GOOD:
        return good
    if quality == Button.EASY:
        easy = EASY_FIRST_DAYS if state.repetitions == 0 else good * EASY_BONUS
        return min(max_days, max(good + 1, math.ceil(round(easy, 9))))
    # Hard: a little more than the last interval, never more than Good's.
    previous = min(max(state.interval_days, 1), max_days)
    hard = math.ceil(round(previous * HARD_FACTOR, 9)) if state.repetitions else 1
    return min(good, max(1, hard))


def _good_interval(state: SM2State, easiness: float, max_days: int) -> int:
    if state.repetitions == 0:
        return 1
    if state.repetitions == 1:
        return min(6, max_days)
    # Capping the previous interval first keeps the product finite whatever is stored.
    previous = min(state.interval_days, max_days)
    # round() strips float noise (6 * 2.3 = 13.799999999999999) before rounding up.
    return min(max_days, max(1, math.ceil(round(previous * easiness, 9))))


def due_after(now: datetime, days: int) -> datetime:
    """now + days, or LATEST_DUE when that would pass it, so the date stays storable."""
    latest = LATEST_DUE if now.utcoffset() is not None else LATEST_DUE.replace(tzinfo=None)
    if now > latest:
        raise ValueError(f"now must be no later than {latest.isoformat()}, got {now.isoformat()}")
    if latest - now < timedelta(days=days):
        return latest
    return now + timedelta(days=days)


def sm2_update(state: SM2State, quality: int, *, now: datetime, config: SM2Config) -> SM2State:
    """Grade a card: the new interval, repetition count, EF and due date."""
    quality = validate_quality(quality)
    interval = next_interval_days(
        state, quality, max_days=config.max_interval_days, modifiers=config.modifiers
    )
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
        next_review=due_after(now, interval),
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
    # Unchecked, a NaN EF would clamp to a low-EF term of 0: the easiest card there is.
    easiness = require_finite("easiness", state.easiness)
    overdue = 0.0
    if state.next_review is not None:
        days_late = (now - state.next_review).total_seconds() / 86_400
        overdue = min(1.0, max(0.0, days_late / MAX_OVERDUE_DAYS))
    span = config.ef_ceiling - config.ef_floor
    low_ef = 0.0 if span == 0 else (config.ef_ceiling - easiness) / span
    low_ef = min(1.0, max(0.0, low_ef))
    few_reps = 1.0 / (1 + max(0, state.repetitions))
    return OVERDUE_WEIGHT * overdue + LOW_EF_WEIGHT * low_ef + FEW_REPETITIONS_WEIGHT * few_reps


def preview_intervals(state: SM2State, *, now: datetime, config: SM2Config) -> dict[Button, int]:
    """Days each button would schedule; Hard, Good and Easy agree in classic SM-2 because
    the grade only changes EF, which affects the review after next (not so with
    config.modifiers)."""
    return {
        button: sm2_update(state, int(button), now=now, config=config).interval_days
        for button in Button
    }
