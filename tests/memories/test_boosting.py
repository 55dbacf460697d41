from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.boosting import (
    BoostConfig,
    ColdStorageRule,
    CorePromotionRule,
    Reactivation,
    at_floor,
    boosted_stability,
    reactivation,
    should_archive,
    should_move_to_cold,
    should_promote_to_core,
    spaced_rep_factor,
)
from memories.decay import Thresholds

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
CONFIG = BoostConfig()
RULE = CorePromotionRule()
COLD = ColdStorageRule()
THRESHOLDS = Thresholds()


def core(**row) -> bool:
    row = {"status": "active", "tier": "short_term", "rule": RULE, **row}
    return should_promote_to_core(**row)


def faded(**row) -> dict:
    """A promoted long-term hot memory at its floor: unused for 20 days, never recalled."""
    return {
        "status": "promoted",
        "tier": "long_term",
        "storage": "hot",
        "score": 0.05,
        "last_used_at": NOW - timedelta(days=20),
        "last_accessed_at": None,
        "now": NOW,
        "thresholds": THRESHOLDS,
        "rule": COLD,
        **row,
    }


def test_it_reproduces_seed_001_worked_example():
    ten_days_ago = NOW - timedelta(days=10)

    direct = boosted_stability(
        stability=0.3, last_accessed_at=ten_days_ago, now=NOW, direct=True, config=CONFIG
    )
    associative = boosted_stability(
        stability=0.3, last_accessed_at=ten_days_ago, now=NOW, direct=False, config=CONFIG
    )

    assert round(direct, 3) == 0.443
    assert round(associative, 3) == 0.343


@pytest.mark.parametrize(
    ("days", "factor"),
    [(0, 0.0), (1, 1 / 7), (3, 3 / 7), (7, 1.0), (10, 10 / 7), (14, 2.0), (90, 2.0)],
)
def test_it_grows_the_spaced_rep_factor_with_the_gap_up_to_the_cap(days, factor):
    assert spaced_rep_factor(days, CONFIG) == pytest.approx(factor)


def test_it_never_gives_a_negative_factor_for_clock_skew():
    assert spaced_rep_factor(-3, CONFIG) == 0.0


def test_it_gives_no_boost_the_same_instant():
    assert boosted_stability(
        stability=0.4, last_accessed_at=NOW, now=NOW, direct=True, config=CONFIG
    ) == pytest.approx(0.4)


def test_it_gives_a_first_retrieval_exactly_the_base_boost():
    assert boosted_stability(
        stability=0.2, last_accessed_at=None, now=NOW, direct=True, config=CONFIG
    ) == pytest.approx(0.3)


def test_it_caps_stability():
    long_ago = NOW - timedelta(days=365)

    assert (
        boosted_stability(
            stability=0.95, last_accessed_at=long_ago, now=NOW, direct=True, config=CONFIG
        )
        == 1.0
    )


@given(
    st.floats(min_value=0, max_value=1),
    st.floats(min_value=-30, max_value=3650),
    st.booleans(),
)
def test_it_never_lowers_stability_nor_exceeds_the_cap(stability, days, direct):
    boosted = boosted_stability(
        stability=stability,
        last_accessed_at=NOW - timedelta(days=days),
        now=NOW,
        direct=direct,
        config=CONFIG,
    )

    assert stability <= boosted <= CONFIG.max_stability


def test_it_promotes_to_core_after_three_distinct_sessions_and_enough_use():
    assert core(session_ids=["a", "b", "c"], access_count=5, stability=0.5)
    assert core(session_ids=["a", "b", "c"], access_count=5, stability=0.5, tier="long_term")
    assert core(session_ids=["a", "b", "c"], access_count=5, stability=0.5, status="promoted")


@pytest.mark.parametrize(("status", "tier"), [("active", "core"), ("forgotten", "short_term"),
                                              ("archived", "long_term")])  # fmt: skip
def test_core_and_dead_memories_are_not_promoted_to_core(status, tier):
    assert not core(session_ids=["a", "b", "c"], access_count=9, stability=1.0, status=status,
                    tier=tier)  # fmt: skip


@pytest.mark.parametrize(
    ("sessions", "access_count", "stability"),
    [
        (["a", "b", "a", "b"], 9, 0.9),  # only two distinct sessions
        (["a", "b", ""], 9, 0.9),  # blank ids are not sessions
        (["a", "b", "c"], 4, 0.9),
        (["a", "b", "c"], 9, 0.49),
    ],
)
def test_it_does_not_promote_to_core_when_any_condition_fails(sessions, access_count, stability):
    assert not core(session_ids=sessions, access_count=access_count, stability=stability)


def test_it_moves_faded_long_term_memories_to_cold_storage():
    assert should_move_to_cold(**faded())
    assert should_move_to_cold(**faded(score=0.2, rule=ColdStorageRule(floor=0.3)))
    assert not should_move_to_cold(**faded(score=0.051))
    assert not should_move_to_cold(**faded(storage="cold"))
    assert not should_move_to_cold(**faded(tier="short_term", status="active"))
    assert not should_move_to_cold(**faded(tier="core"))


def test_a_memory_sits_at_its_floor_only_unused_in_the_window_and_unrecalled_in_the_grace():
    assert at_floor(**{k: v for k, v in faded().items() if k not in ("status", "tier", "storage")})
    window_start, grace_start = NOW - timedelta(days=14), NOW - timedelta(days=7)
    assert not should_move_to_cold(**faded(last_used_at=window_start))
    assert should_move_to_cold(**faded(last_used_at=window_start - timedelta(microseconds=1)))
    assert not should_move_to_cold(**faded(last_accessed_at=grace_start))
    assert should_move_to_cold(**faded(last_accessed_at=grace_start - timedelta(microseconds=1)))


def test_it_archives_long_unused_cold_or_faded_long_term_memories():
    half_year = NOW - timedelta(days=180)
    old = half_year - timedelta(microseconds=1)
    assert should_archive(**faded(last_used_at=old))
    assert should_archive(**faded(last_used_at=old, storage="cold", score=1.5))
    assert not should_archive(**faded(last_used_at=old, score=1.5))  # hot, above its floor
    assert not should_archive(**faded(last_used_at=half_year, storage="cold"))
    assert not should_archive(**faded(last_used_at=old, rule=ColdStorageRule(archive_after_days=0)))
    assert not should_archive(**faded(last_used_at=old, tier="core"))


def test_it_reactivates_a_cold_memory_reached_through_an_association():
    result = reactivation(
        cold=True,
        via_association=True,
        stability=0.3,
        last_accessed_at=NOW - timedelta(days=10),
        now=NOW,
        config=CONFIG,
    )

    assert result.cold is False
    assert result.stability == pytest.approx(0.3 + 0.03 * 10 / 7)


@pytest.mark.parametrize(
    ("cold", "via_association"), [(True, False), (False, True), (False, False)]
)
def test_it_leaves_other_touches_to_the_ordinary_boost(cold, via_association):
    result = reactivation(
        cold=cold,
        via_association=via_association,
        stability=0.3,
        last_accessed_at=NOW - timedelta(days=10),
        now=NOW,
        config=CONFIG,
    )

    assert result == Reactivation(stability=0.3, cold=cold)


# --- NaN and infinities are refused, not mapped to a plausible number (issue 13) -------

NOT_FINITE = [math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("days", NOT_FINITE)
def test_it_refuses_a_non_finite_gap(days):
    # Before: NaN days earned the full 2.0 multiplier.
    with pytest.raises(ValueError, match="days_since_last_access must be a finite number"):
        spaced_rep_factor(days, CONFIG)


@pytest.mark.parametrize("stability", NOT_FINITE)
def test_it_refuses_a_non_finite_stability_when_boosting(stability):
    # Before: min(cap, NaN + boost) returned the cap, a NaN memory became fully stable.
    with pytest.raises(ValueError, match="stability must be a finite number"):
        boosted_stability(
            stability=stability, last_accessed_at=None, now=NOW, direct=True, config=CONFIG
        )


@pytest.mark.parametrize("stability", NOT_FINITE)
def test_it_refuses_a_non_finite_stability_when_promoting(stability):
    with pytest.raises(ValueError, match="stability must be a finite number"):
        core(session_ids=["a", "b", "c"], access_count=9, stability=stability)


@pytest.mark.parametrize("score", NOT_FINITE)
def test_it_refuses_a_non_finite_score_when_moving_to_cold(score):
    # Before: NaN <= floor is False, so a NaN-scored memory never went cold.
    with pytest.raises(ValueError, match="score must be a finite number"):
        should_move_to_cold(**faded(score=score))


@pytest.mark.parametrize(
    "field",
    [
        "direct_boost",
        "associative_boost",
        "max_spaced_rep_multiplier",
        "spaced_rep_interval_days",
        "max_stability",
    ],
)
@pytest.mark.parametrize("value", NOT_FINITE)
def test_it_refuses_a_non_finite_boost_config(field, value):
    with pytest.raises(ValueError, match=f"{field} must be a finite number"):
        BoostConfig(**{field: value})
