"""Temporal decay score and the lifecycle thresholds built on it (seed 003).

score = (use_count + 1)^beta * decay(dt) * strength. The formulas govern, not seed 003's
printed numbers; docs/algorithms.md lists its arithmetic slips. Everything, including
`now`, is a parameter: callers read settings and the clock, this module never does.

DecayParams and Thresholds declare the defaults, once: config/settings.py takes the
DECAY_*, FORGET_*, PROMOTE_* and REVIEW_DANGER_ZONE_* defaults from them, and
memories.sweep builds them from those settings. should_promote and should_forget are the
specification of the decay sweep's promote and forget rules (memories/sweep.py decides in
SQL; tests/memories/test_sweep_agreement.py checks, on both engines, that the two decide
identically for generated rows).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

SECONDS_PER_DAY = 86_400.0

TIER_SHORT_TERM = "short_term"
TIER_LONG_TERM = "long_term"
TIER_CORE = "core"

STATUS_ACTIVE = "active"
STATUS_PROMOTED = "promoted"

# A score below this is 0: a memory that far gone is gone. It also keeps the database's float8
# arithmetic (memories.sweep computes the score in SQL) off the numbers PostgreSQL refuses to
# round to 0 ("value out of range: underflow").
SCORE_FLOOR = 1e-300

DecayModel = Literal["exponential", "power_law", "two_component"]
DECAY_MODELS: tuple[str, ...] = ("exponential", "power_law", "two_component")


def require_finite(name: str, value: float) -> float:
    """`value` if it is a finite number, else ValueError naming `name`.

    The pure modules (here, boosting, review.sm2 and its kin, recall.scoring and mmr) call
    it at their boundaries because NaN slips through their clamps and comparisons as a
    plausible number: max(0.0, nan) is 0.0, min(1.0, nan) is 1.0 and nan < x is False.
    It lives here, the lowest pure module, so review and recall can share it without
    memories importing them.
    """
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


def half_life_order_error(fast_days: float, slow_days: float) -> str | None:
    """Why a two-component pair of half-lives is refused, or None when it is in order.

    Seed 003's two-component decay has a fast component (12 hours) and a slow one (7
    days): the fast half-life is never longer than the slow one (equal is one exponential
    and allowed). The other way round is the same curve with the components and weights
    named backwards, which the fitting step (memories.decay_fit) swaps and every other
    writer refuses: the settings at start-up, Namespace.clean (API, dashboard, admin,
    import) and the database's CHECK constraints on namespaces and fits.
    """
    if fast_days > slow_days:
        return (
            f"The fast half-life ({fast_days:g} days) must not be longer than the slow "
            f"half-life ({slow_days:g} days)."
        )
    return None


@dataclass(frozen=True)
class DecayParams:
    """Decay model and its shape. The defaults are the DECAY_* settings' defaults."""

    model: DecayModel = "exponential"
    half_life_days: float = 3.0
    beta: float = 0.6
    power_alpha: float = 1.1
    fast_half_life_days: float = 0.5
    slow_half_life_days: float = 7.0
    fast_weight: float = 0.7

    def __post_init__(self) -> None:
        for name in (
            "half_life_days",
            "beta",
            "power_alpha",
            "fast_half_life_days",
            "slow_half_life_days",
            "fast_weight",
        ):
            require_finite(name, getattr(self, name))
        if self.model not in DECAY_MODELS:
            raise ValueError(f"unknown decay model {self.model!r}; expected one of {DECAY_MODELS}")
        for name in ("half_life_days", "power_alpha", "fast_half_life_days", "slow_half_life_days"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.beta < 0:
            raise ValueError(f"beta must not be negative, got {self.beta}")
        if not 0.0 <= self.fast_weight <= 1.0:
            raise ValueError(f"fast_weight must be within [0, 1], got {self.fast_weight}")


@dataclass(frozen=True)
class Thresholds:
    """Lifecycle thresholds. The defaults are the FORGET_THRESHOLD, REVIEW_DANGER_ZONE_*,
    PROMOTE_THRESHOLD, PROMOTE_USE_COUNT, PROMOTE_TIME_WINDOW_DAYS and PROMOTE_SCORE_MIN_USES
    settings' defaults.

    promote_score_min_uses is ours, not seed 003's: the uses a memory needs before its
    score alone can promote it (a fresh memory scores 1.0 >= 0.65 and has proven nothing;
    0 restores the seed's literal rule; docs/background.md).
    """

    forget: float = 0.05
    danger_min: float = 0.15
    danger_max: float = 0.35
    promote: float = 0.65
    promote_use_count: int = 5
    promote_window_days: float = 14.0
    promote_score_min_uses: int = 1

    def __post_init__(self) -> None:
        for name in ("forget", "danger_min", "danger_max", "promote", "promote_window_days"):
            require_finite(name, getattr(self, name))
        if not self.danger_min < self.danger_max:
            raise ValueError("danger_min must be below danger_max")
        if not self.forget < self.promote:
            raise ValueError("forget must be below promote")

    @property
    def danger_centre(self) -> float:
        return (self.danger_min + self.danger_max) / 2

    def window_start(self, now: datetime) -> datetime:
        """The start of the promotion window that ends at `now`."""
        return now - timedelta(days=self.promote_window_days)


def half_life_to_lambda(days: float) -> float:
    """Decay rate per second for a half-life in days: ln 2 / (days * 86400)."""
    if not days > 0:
        raise ValueError(f"half-life must be positive, got {days}")
    return math.log(2) / (days * SECONDS_PER_DAY)


def lambda_to_half_life(lam: float) -> float:
    """Half-life in days for a decay rate per second (inverse of half_life_to_lambda)."""
    if not lam > 0:
        raise ValueError(f"lambda must be positive, got {lam}")
    return math.log(2) / lam / SECONDS_PER_DAY


def power_law_t0_seconds(half_life_days: float, alpha: float) -> float:
    """Reference time t0 that makes (1 + dt/t0)^-alpha halve at the half-life.

    Solving (1 + H/t0)^-alpha = 1/2 gives t0 = H / (2^(1/alpha) - 1), so every model
    agrees on DECAY_HALF_LIFE_DAYS and only the shape of the tail differs.
    """
    return half_life_days * SECONDS_PER_DAY / (2 ** (1 / alpha) - 1)


def decay_factor(dt_seconds: float, params: DecayParams) -> float:
    """Fraction of the score left after dt_seconds without use; negative dt counts as 0."""
    dt = max(0.0, require_finite("dt_seconds", dt_seconds))
    if params.model == "exponential":
        return math.exp(-half_life_to_lambda(params.half_life_days) * dt)
    if params.model == "power_law":
        t0 = power_law_t0_seconds(params.half_life_days, params.power_alpha)
        return (1 + dt / t0) ** -params.power_alpha
    fast = math.exp(-half_life_to_lambda(params.fast_half_life_days) * dt)
    slow = math.exp(-half_life_to_lambda(params.slow_half_life_days) * dt)
    return params.fast_weight * fast + (1 - params.fast_weight) * slow


def decay_score(
    *,
    use_count: int,
    last_used_at: datetime,
    strength: float,
    now: datetime,
    params: DecayParams,
) -> float:
    """(use_count + 1)^beta * decay(now - last_used_at) * strength."""
    return decay_score_after(
        use_count=use_count,
        dt_seconds=(now - last_used_at).total_seconds(),
        strength=strength,
        params=params,
    )


def decay_score_after(
    *, use_count: int, dt_seconds: float, strength: float, params: DecayParams
) -> float:
    """decay_score given the seconds since the last use (recall ranks on epoch seconds); a
    score below SCORE_FLOOR is 0."""
    require_finite("strength", strength)
    score = (max(0, use_count) + 1) ** params.beta * decay_factor(dt_seconds, params) * strength
    return score if score >= SCORE_FLOOR else 0.0


def iso_second(moment: datetime) -> str:
    """YYYY-MM-DDTHH:MM:SS in UTC: how an entry of recall_timestamps (ISO 8601 text) is
    compared with a moment, as text on its first 19 characters (a malformed entry never
    raises, it merely compares)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def count_uses_in_window(
    *, touched_at: Iterable[datetime], recall_timestamps: Iterable[object], window_start: datetime
) -> int:
    """Uses inside the promotion window: the memory's touches (its 'touched' events) at or
    after window_start, plus its recall times (ISO 8601 strings; anything else is ignored)
    whose first 19 characters are at or after iso_second(window_start)."""
    stamp = iso_second(window_start)
    touches = sum(1 for moment in touched_at if moment >= window_start)
    recalls = sum(1 for t in recall_timestamps if isinstance(t, str) and t[:19] >= stamp)
    return touches + recalls


def should_promote(
    *,
    status: str,
    tier: str,
    score: float,
    use_count: int,
    last_used_at: datetime,
    uses_in_window: int,
    now: datetime,
    thresholds: Thresholds,
) -> bool:
    """Seed 003's promotion of an active short-term memory: a high score OR enough uses
    inside the promotion window (either suffices).

    The score counts only once the memory has been used promote_score_min_uses times.
    Uses in the window count only for a memory that has that many uses in all and whose
    last use is inside the window: both follow from the uses being there, and a row whose
    counters contradict its events is not promoted on its counts.
    """
    require_finite("score", score)
    if status != STATUS_ACTIVE or tier != TIER_SHORT_TERM:
        return False
    if score >= thresholds.promote and use_count >= thresholds.promote_score_min_uses:
        return True
    return (
        use_count >= thresholds.promote_use_count
        and last_used_at >= thresholds.window_start(now)
        and uses_in_window >= thresholds.promote_use_count
    )


def should_forget(*, status: str, tier: str, score: float, thresholds: Thresholds) -> bool:
    """Only active short-term memories are forgotten, and only strictly below the
    threshold (promoted, long-term and core memories go cold and are archived instead)."""
    require_finite("score", score)
    return status == STATUS_ACTIVE and tier == TIER_SHORT_TERM and score < thresholds.forget


def in_danger_zone(score: float, thresholds: Thresholds) -> bool:
    """Fading but not forgotten: danger_min <= score <= danger_max, both ends inclusive."""
    return thresholds.danger_min <= require_finite("score", score) <= thresholds.danger_max


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def review_priority(score: float, thresholds: Thresholds) -> float:
    """sigmoid(0.5 - |centre - score|) / sigmoid(0.5): 1.0 at the danger-zone centre.

    max_priority is sigmoid(0.5), the value at the centre, so the result lies in (0, 1].
    The curve is shallow by construction (0.90 at scores 0 and 0.5, 0.70 at 1.0); parabola_boost
    is the sharp alternative.
    """
    distance = abs(thresholds.danger_centre - require_finite("score", score))
    return _sigmoid(0.5 - distance) / _sigmoid(0.5)


def parabola_boost(score: float, thresholds: Thresholds, *, half_width: float = 0.25) -> float:
    """Inverted parabola max(0, 1 - (score - centre)^2 / half_width^2), 1.0 at the centre.

    half_width defaults to 0.25 as seed 003 writes it, so the boost reaches zero at scores
    0 and 0.5, not at the danger-zone edges (it is 0.84 at 0.15 and 0.35).
    """
    require_finite("score", score)
    require_finite("half_width", half_width)
    return max(0.0, 1.0 - (score - thresholds.danger_centre) ** 2 / half_width**2)


def decay_curve(
    *,
    use_count: int,
    last_used_at: datetime,
    strength: float,
    now: datetime,
    params: DecayParams,
    days: int = 30,
    points_per_day: int = 4,
) -> list[tuple[float, float]]:
    """(days from now, score) points over the next `days` days, for plotting."""
    if days < 0 or points_per_day < 1:
        raise ValueError("days must be >= 0 and points_per_day >= 1")
    points = []
    for step in range(days * points_per_day + 1):
        offset = step / points_per_day
        score = decay_score(
            use_count=use_count,
            last_used_at=last_used_at,
            strength=strength,
            now=now + timedelta(days=offset),
            params=params,
        )
        points.append((offset, score))
    return points


# --- When a memory will be forgotten -------------------------------------------------------

OUTLOOK_HORIZON_DAYS = 3650.0  # "not within ten years" is as good as never


def seconds_until_below(
    threshold: float,
    *,
    use_count: int,
    dt_seconds: float,
    strength: float,
    params: DecayParams,
    horizon_days: float = OUTLOOK_HORIZON_DAYS,
) -> float | None:
    """Seconds from now until the score falls strictly below `threshold` without a use: 0
    when it is already below, None when it stays at or above it for `horizon_days`.

    Every model's decay is decreasing in time, so the crossing is found by bisection to a
    second (the same code for the three models; the exponential's closed form agrees).
    """
    require_finite("threshold", threshold)
    dt = max(0.0, require_finite("dt_seconds", dt_seconds))

    def below(extra: float) -> bool:
        score = decay_score_after(
            use_count=use_count, dt_seconds=dt + extra, strength=strength, params=params
        )
        return score < threshold

    if below(0.0):
        return 0.0
    high = horizon_days * SECONDS_PER_DAY
    if not below(high):
        return None
    low = 0.0
    while high - low > 1.0:
        middle = (low + high) / 2
        if below(middle):
            high = middle
        else:
            low = middle
    return high


@dataclass(frozen=True)
class ForgettingOutlook:
    """What the decay sweep will do to one memory if nothing changes (seed 003's forget
    rule, should_forget): whether it can be forgotten at all (and if not, why), the
    seconds left until its score falls under the forget threshold (0: the next sweep;
    None: not within the horizon), and the seconds it would have left after one use now."""

    forgettable: bool
    reason: str
    seconds_left: float | None
    seconds_left_after_use: float | None

    @property
    def gain_per_use_seconds(self) -> float | None:
        """How much later one use now would make it forgotten (None when unknown)."""
        if self.seconds_left is None or self.seconds_left_after_use is None:
            return None
        return max(0.0, self.seconds_left_after_use - self.seconds_left)


def forgetting_outlook(
    *,
    status: str,
    tier: str,
    use_count: int,
    dt_seconds: float,
    strength: float,
    params: DecayParams,
    thresholds: Thresholds,
    horizon_days: float = OUTLOOK_HORIZON_DAYS,
) -> ForgettingOutlook:
    """The outlook of one memory (ForgettingOutlook). A use is what memory_touch records:
    one more use, the clock reset to now, strength unchanged."""
    if status != STATUS_ACTIVE:
        return ForgettingOutlook(False, f"it is {status}, not active", None, None)
    if tier != TIER_SHORT_TERM:
        reason = f"only short-term memories are forgotten; a {tier.replace('_', '-')} one goes cold"
        return ForgettingOutlook(False, reason, None, None)
    left = seconds_until_below(
        thresholds.forget,
        use_count=use_count,
        dt_seconds=dt_seconds,
        strength=strength,
        params=params,
        horizon_days=horizon_days,
    )
    after_use = seconds_until_below(
        thresholds.forget,
        use_count=use_count + 1,
        dt_seconds=0.0,
        strength=strength,
        params=params,
        horizon_days=horizon_days,
    )
    return ForgettingOutlook(True, "", left, after_use)
