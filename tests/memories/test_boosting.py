from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.boosting import (
    BoostConfig,
    CorePromotionRule,
    Reactivation,
    boosted_stability,
    reactivation,
    should_move_to_cold,
    should_promote_to_core,
    spaced_rep_factor,
)

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
CONFIG = BoostConfig()
RULE = CorePromotionRule()


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
    assert should_promote_to_core(
        session_ids=["a", "b", "c"], access_count=5, stability=0.5, rule=RULE
    )


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
    assert not should_promote_to_core(
        session_ids=sessions, access_count=access_count, stability=stability, rule=RULE
    )


def test_it_moves_faded_long_term_memories_to_cold_storage():
    assert should_move_to_cold(tier="long_term", score=0.05)
    assert should_move_to_cold(tier="long_term", score=0.2, floor=0.3)
    assert not should_move_to_cold(tier="long_term", score=0.051)
    assert not should_move_to_cold(tier="long_term", score=0.01, cold=True)
    assert not should_move_to_cold(tier="short_term", score=0.0)
    assert not should_move_to_cold(tier="core", score=0.0)


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
        should_promote_to_core(
            session_ids=["a", "b", "c"], access_count=9, stability=stability, rule=RULE
        )


@pytest.mark.parametrize("score", NOT_FINITE)
def test_it_refuses_a_non_finite_score_when_moving_to_cold(score):
    # Before: NaN <= floor is False, so a NaN-scored memory never went cold.
    with pytest.raises(ValueError, match="score must be a finite number"):
        should_move_to_cold(tier="long_term", score=score)


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
