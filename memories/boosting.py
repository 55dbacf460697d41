"""Retrieval boosting, core promotion and cold storage (seed 001).

Every retrieval strengthens a memory: stability grows by a base boost times a
spaced-repetition factor, so recall after a gap counts for more than recall the same day.

CorePromotionRule and ColdStorageRule declare the defaults of the CORE_*, COLD_* and
ARCHIVE_COLD_AFTER_DAYS settings, once (config/settings.py reads them from here).
should_promote_to_core, should_move_to_cold and should_archive are the specification of the
decay sweep's core, cold and archive rules (memories/sweep.py decides in SQL;
tests/memories/test_sweep_agreement.py checks that the two decide identically).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from memories.decay import (
    SECONDS_PER_DAY,
    STATUS_ACTIVE,
    STATUS_PROMOTED,
    TIER_LONG_TERM,
    TIER_SHORT_TERM,
    Thresholds,
    require_finite,
)

STORAGE_HOT = "hot"
STORAGE_COLD = "cold"


@dataclass(frozen=True)
class BoostConfig:
    """Seed 001's configuration; max_stability is the cap its worked example applies."""

    direct_boost: float = 0.1
    associative_boost: float = 0.03
    max_spaced_rep_multiplier: float = 2.0
    spaced_rep_interval_days: float = 7.0
    max_stability: float = 1.0

    def __post_init__(self) -> None:
        for name in (
            "direct_boost",
            "associative_boost",
            "max_spaced_rep_multiplier",
            "spaced_rep_interval_days",
            "max_stability",
        ):
            require_finite(name, getattr(self, name))
        if not self.spaced_rep_interval_days > 0:
            raise ValueError("spaced_rep_interval_days must be positive")


@dataclass(frozen=True)
class CorePromotionRule:
    """When a memory becomes core.

    min_sessions=3 is seed 001's. The other two are ours: five accesses (seed 003's
    PROMOTE_USE_COUNT) and stability 0.5 (half the cap), so that three sessions that
    merely brushed past a memory do not make it core.
    """

    min_sessions: int = 3
    min_access_count: int = 5
    min_stability: float = 0.5


@dataclass(frozen=True)
class ColdStorageRule:
    """When a long-term memory goes cold (seed 001's cold storage) and when it is archived.

    A memory sits at its floor when its score is at or below `floor` (by default the
    forget threshold: COLD_FLOOR defaults to FORGET_THRESHOLD), it was not used inside the
    promotion window and no recall, even associative, reached it for `grace_days` (recall
    reactivates cold memories without a use, so without the grace they would go cold
    again at once). archive_after_days of 0 disables archiving.
    """

    floor: float = Thresholds.forget
    grace_days: float = 7.0
    archive_after_days: float = 180.0

    @property
    def archives(self) -> bool:
        return self.archive_after_days > 0

    def grace_start(self, now: datetime) -> datetime:
        return now - timedelta(days=self.grace_days)

    def archive_before(self, now: datetime) -> datetime:
        return now - timedelta(days=self.archive_after_days)


@dataclass(frozen=True)
class Reactivation:
    """Outcome of touching a memory that may sit in cold storage."""

    stability: float
    cold: bool


def spaced_rep_factor(days_since_last_access: float, config: BoostConfig) -> float:
    """min(cap, days / interval), never negative (a clock skew gives 0, not a penalty)."""
    require_finite("days_since_last_access", days_since_last_access)
    factor = days_since_last_access / config.spaced_rep_interval_days
    return max(0.0, min(config.max_spaced_rep_multiplier, factor))


def boosted_stability(
    *,
    stability: float,
    last_accessed_at: datetime | None,
    now: datetime,
    direct: bool,
    config: BoostConfig,
) -> float:
    """min(cap, stability + base boost * spaced_rep_factor).

    A memory never accessed before is treated as last accessed one interval ago
    (factor 1.0): its first retrieval earns exactly the base boost.
    """
    require_finite("stability", stability)
    if last_accessed_at is None:
        days = config.spaced_rep_interval_days
    else:
        days = (now - last_accessed_at).total_seconds() / SECONDS_PER_DAY
    base = config.direct_boost if direct else config.associative_boost
    return min(config.max_stability, stability + base * spaced_rep_factor(days, config))


def should_promote_to_core(
    *,
    status: str,
    tier: str,
    session_ids: Iterable[str],
    access_count: int,
    stability: float,
    rule: CorePromotionRule,
) -> bool:
    """A live (active or promoted) short- or long-term memory becomes core when seen in
    enough distinct sessions (blank ids are none) AND accessed and stable enough."""
    require_finite("stability", stability)
    if status not in (STATUS_ACTIVE, STATUS_PROMOTED):
        return False
    if tier not in (TIER_SHORT_TERM, TIER_LONG_TERM):
        return False
    distinct_sessions = {session for session in session_ids if session}
    return (
        len(distinct_sessions) >= rule.min_sessions
        and access_count >= rule.min_access_count
        and stability >= rule.min_stability
    )


def at_floor(
    *,
    score: float,
    last_used_at: datetime,
    last_accessed_at: datetime | None,
    now: datetime,
    thresholds: Thresholds,
    rule: ColdStorageRule,
) -> bool:
    """Score at or below the floor, no use inside the promotion window (so a memory just
    promoted for its uses is not frozen by the next sweep) and no recall for grace_days."""
    require_finite("score", score)
    return (
        score <= rule.floor
        and last_used_at < thresholds.window_start(now)
        and (last_accessed_at is None or last_accessed_at < rule.grace_start(now))
    )


def should_move_to_cold(
    *,
    status: str,
    tier: str,
    storage: str,
    score: float,
    last_used_at: datetime,
    last_accessed_at: datetime | None,
    now: datetime,
    thresholds: Thresholds,
    rule: ColdStorageRule,
) -> bool:
    """A hot promoted long-term memory that sits at its floor goes cold.

    Short-term memories are forgotten instead (decay.should_forget) and core memories
    stay hot: they were promoted precisely so that they would not fade.
    """
    floor = at_floor(
        score=score,
        last_used_at=last_used_at,
        last_accessed_at=last_accessed_at,
        now=now,
        thresholds=thresholds,
        rule=rule,
    )
    return status == STATUS_PROMOTED and tier == TIER_LONG_TERM and storage == STORAGE_HOT and floor


def should_archive(
    *,
    status: str,
    tier: str,
    storage: str,
    score: float,
    last_used_at: datetime,
    last_accessed_at: datetime | None,
    now: datetime,
    thresholds: Thresholds,
    rule: ColdStorageRule,
) -> bool:
    """A promoted long-term memory unused for archive_after_days that is cold, or at its
    floor, is archived (and cold). Never when archive_after_days is 0."""
    floor = at_floor(
        score=score,
        last_used_at=last_used_at,
        last_accessed_at=last_accessed_at,
        now=now,
        thresholds=thresholds,
        rule=rule,
    )
    return (
        rule.archives
        and status == STATUS_PROMOTED
        and tier == TIER_LONG_TERM
        and last_used_at < rule.archive_before(now)
        and (storage == STORAGE_COLD or floor)
    )


def reactivation(
    *,
    cold: bool,
    via_association: bool,
    stability: float,
    last_accessed_at: datetime | None,
    now: datetime,
    config: BoostConfig,
) -> Reactivation:
    """A cold memory reached through an association link gets the associative boost and
    returns to hot; anything else comes back unchanged (hot memories get the ordinary
    boost from boosted_stability, and cold ones are not searchable directly)."""
    if not (cold and via_association):
        return Reactivation(stability=stability, cold=cold)
    boosted = boosted_stability(
        stability=stability,
        last_accessed_at=last_accessed_at,
        now=now,
        direct=False,
        config=config,
    )
    return Reactivation(stability=boosted, cold=False)
