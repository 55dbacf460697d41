from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from review.simulation import (
    SimulationParams,
    adjust_utility,
    recall_probability,
    simulate_quality,
)

unit = st.floats(min_value=0.0, max_value=1.0)
days = st.floats(min_value=0.0, max_value=10_000.0)


def test_it_blends_confidence_utility_and_recency():
    p = recall_probability(confidence=0.8, utility=0.5, days_since_last_recall=7.0)

    assert p == pytest.approx(0.5 * 0.8 + 0.3 * 0.5 + 0.2 * 0.5)


def test_it_gives_full_recency_credit_for_a_fresh_recall():
    assert recall_probability(
        confidence=1.0, utility=1.0, days_since_last_recall=0.0
    ) == pytest.approx(1.0)


def test_it_clamps_inputs_outside_the_unit_interval():
    p = recall_probability(confidence=5.0, utility=-2.0, days_since_last_recall=-3.0)

    assert p == pytest.approx(0.5 * 1.0 + 0.3 * 0.0 + 0.2 * 1.0)


@pytest.mark.parametrize(
    ("confidence", "utility", "days", "quality"),
    [
        (1.0, 1.0, 0.0, 5),  # p = 1.0
        (0.8, 0.6, 1.0, 4),  # p = 0.4 + 0.18 + 0.2 * 0.5^(1/7) = 0.7610
        (0.6, 0.4, 7.0, 3),  # p = 0.3 + 0.12 + 0.1 = 0.52
        (0.5, 0.3, 7.0, 2),  # p = 0.25 + 0.09 + 0.1 = 0.44, a near miss
        (0.3, 0.2, 14.0, 1),  # p = 0.15 + 0.06 + 0.05 = 0.26
        (0.0, 0.0, 70.0, 0),  # p = 0.2 * 0.5^10, a blackout
    ],
)
def test_it_grades_deterministically_without_a_draw(confidence, utility, days, quality):
    graded = simulate_quality(confidence=confidence, utility=utility, days_since_last_recall=days)

    assert graded == quality


def test_it_succeeds_when_the_draw_falls_below_the_recall_probability():
    kwargs = {"confidence": 0.6, "utility": 0.4, "days_since_last_recall": 7.0}  # p = 0.52

    assert simulate_quality(**kwargs, rng_value=0.51) == 3
    assert simulate_quality(**kwargs, rng_value=0.53) == 2


def test_it_lets_a_lucky_draw_pass_a_weak_memory():
    kwargs = {"confidence": 0.3, "utility": 0.2, "days_since_last_recall": 14.0}  # p = 0.26

    assert simulate_quality(**kwargs, rng_value=0.1) == 3
    assert simulate_quality(**kwargs, rng_value=0.9) == 1


@pytest.mark.parametrize("rng_value", [-0.1, 1.0, float("nan")])
def test_it_rejects_draws_outside_0_1(rng_value):
    with pytest.raises(ValueError):
        simulate_quality(
            confidence=0.5, utility=0.5, days_since_last_recall=1.0, rng_value=rng_value
        )


def test_it_honours_custom_parameters():
    strict = SimulationParams(deterministic_draw=0.99)

    assert (
        simulate_quality(confidence=1.0, utility=1.0, days_since_last_recall=0.0, params=strict)
        == 5
    )
    assert (
        simulate_quality(confidence=0.8, utility=0.8, days_since_last_recall=0.0, params=strict)
        == 2
    )


def test_it_moves_utility_toward_one_on_success_and_toward_zero_on_failure():
    assert adjust_utility(0.5, 4) == pytest.approx(0.5 + 0.1 * 0.5)
    assert adjust_utility(0.5, 2) == pytest.approx(0.5 - 0.15 * 0.5)
    assert adjust_utility(0.2, 3, success_gain=0.5) == pytest.approx(0.6)
    assert adjust_utility(0.8, 0, failure_loss=0.5) == pytest.approx(0.4)


@given(unit, unit, days, st.one_of(st.none(), st.floats(min_value=0.0, max_value=0.999999)))
def test_it_always_returns_a_grade_from_0_to_5(confidence, utility, elapsed, draw):
    quality = simulate_quality(
        confidence=confidence, utility=utility, days_since_last_recall=elapsed, rng_value=draw
    )

    assert quality in range(6)


@given(unit, st.integers(min_value=0, max_value=5))
def test_it_keeps_utility_within_0_and_1_and_moves_it_the_right_way(utility, quality):
    adjusted = adjust_utility(utility, quality)

    assert 0.0 <= adjusted <= 1.0
    if quality >= 3:
        assert adjusted >= utility
    else:
        assert adjusted <= utility


@given(unit, unit, days, days)
def test_it_makes_older_recalls_less_likely(confidence, utility, earlier, later):
    earlier, later = sorted((earlier, later))
    fresh = recall_probability(
        confidence=confidence, utility=utility, days_since_last_recall=earlier
    )
    stale = recall_probability(confidence=confidence, utility=utility, days_since_last_recall=later)

    assert stale <= fresh
