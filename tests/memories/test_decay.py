from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.decay import (
    DECAY_MODELS,
    DecayParams,
    Thresholds,
    count_uses_in_window,
    decay_curve,
    decay_factor,
    decay_score,
    decay_score_after,
    forgetting_outlook,
    half_life_to_lambda,
    in_danger_zone,
    iso_second,
    lambda_to_half_life,
    parabola_boost,
    power_law_t0_seconds,
    require_finite,
    review_priority,
    seconds_until_below,
    should_forget,
    should_promote,
)

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
DAY = 86_400
EXPONENTIAL = DecayParams()
THRESHOLDS = Thresholds()


def test_it_converts_a_3_day_half_life_to_lambda_per_second():
    lam = half_life_to_lambda(3.0)

    assert lam == math.log(2) / 259_200
    assert f"{lam:.3e}" == "2.674e-06"
    assert lambda_to_half_life(lam) == pytest.approx(3.0)


def test_it_halves_after_the_half_life_exactly():
    assert decay_factor(3 * DAY, EXPONENTIAL) == 0.5


@pytest.mark.parametrize("model", ["exponential", "power_law"])
def test_it_halves_at_the_half_life_for_single_curve_models(model):
    params = DecayParams(model=model, half_life_days=5.0)

    assert decay_factor(5 * DAY, params) == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize(
    ("hours", "expected"),
    [(0, 1.0), (6, 2 ** (-1 / 12)), (12, 2 ** (-1 / 6)), (24, 2 ** (-1 / 3)), (48, 2 ** (-2 / 3)),
     (72, 0.5), (168, 2 ** (-7 / 3)), (336, 2 ** (-14 / 3)), (720, 2**-10)],
)  # fmt: skip
def test_it_decays_exponentially_as_powers_of_one_half(hours, expected):
    assert decay_factor(hours * 3600, EXPONENTIAL) == pytest.approx(expected, rel=1e-12)


def test_it_scores_seed_003_example_from_the_formula_not_its_printed_2_34():
    score = decay_score(
        use_count=3,
        last_used_at=NOW - timedelta(days=1),
        strength=1.5,
        now=NOW,
        params=EXPONENTIAL,
    )

    expected = 4**0.6 * math.exp(-math.log(2) / 3) * 1.5
    assert score == pytest.approx(expected)
    assert round(score, 2) == 2.74


def test_it_scores_seed_003_sql_test_case_at_3_49_not_1_19():
    score = decay_score(
        use_count=5, last_used_at=NOW - timedelta(days=1), strength=1.5, now=NOW, params=EXPONENTIAL
    )

    assert score == pytest.approx(6**0.6 * 2 ** (-1 / 3) * 1.5)
    assert round(score, 2) == 3.49


@pytest.mark.parametrize("use_count", [0, 1, 2, 5, 10, 50, 100])
def test_it_weighs_use_count_sub_linearly(use_count):
    score = decay_score(
        use_count=use_count, last_used_at=NOW, strength=1.0, now=NOW, params=EXPONENTIAL
    )

    assert score == pytest.approx(math.exp(0.6 * math.log(use_count + 1)))


def test_it_picks_power_law_t0_so_the_curve_halves_at_the_half_life():
    t0 = power_law_t0_seconds(3.0, 1.1)

    assert t0 == pytest.approx(3 * DAY / (2 ** (1 / 1.1) - 1))
    params = DecayParams(model="power_law")
    assert decay_factor(10 * DAY, params) == pytest.approx((1 + 10 * DAY / t0) ** -1.1)


def test_it_keeps_a_longer_tail_with_power_law_than_exponential():
    power = DecayParams(model="power_law")

    assert decay_factor(30 * DAY, power) > 10 * decay_factor(30 * DAY, EXPONENTIAL)


def test_it_mixes_fast_and_slow_components():
    params = DecayParams(model="two_component")
    dt = 2 * DAY

    expected = 0.7 * 0.5 ** (2 / 0.5) + 0.3 * 0.5 ** (2 / 7)
    assert decay_factor(dt, params) == pytest.approx(expected)


@pytest.mark.parametrize("model", DECAY_MODELS)
def test_it_clamps_negative_elapsed_time_to_zero(model):
    assert decay_factor(-5 * DAY, DecayParams(model=model)) == 1.0


def test_it_rejects_unknown_models_and_bad_shapes():
    with pytest.raises(ValueError):
        DecayParams(model="linear")
    with pytest.raises(ValueError):
        DecayParams(half_life_days=0)
    with pytest.raises(ValueError):
        DecayParams(fast_weight=1.5)


def promote(**row) -> bool:
    """should_promote for an active short-term memory used 5 times, the last an hour ago."""
    row = {
        "status": "active",
        "tier": "short_term",
        "use_count": 5,
        "last_used_at": NOW - timedelta(hours=1),
        "uses_in_window": 0,
        "thresholds": THRESHOLDS,
        **row,
    }
    return should_promote(now=NOW, **row)


def test_it_promotes_on_score_or_on_uses_in_window():
    assert promote(score=0.65)
    assert promote(score=0.1, uses_in_window=5)
    assert not promote(score=0.649, uses_in_window=4)


def test_the_score_alone_promotes_only_a_memory_used_at_least_once():
    # A fresh memory scores (0 + 1)^0.6 * 1 * 1 = 1.0: seed 003 to the letter would promote
    # it at once. PROMOTE_SCORE_MIN_USES (1) makes it prove itself; 0 is the literal rule.
    assert not promote(score=1.0, use_count=0)
    assert promote(score=1.0, use_count=1)
    assert promote(score=1.0, use_count=0, thresholds=Thresholds(promote_score_min_uses=0))


def test_uses_in_the_window_count_only_when_the_row_can_have_them():
    assert not promote(score=0.1, uses_in_window=5, use_count=4)
    assert not promote(score=0.1, uses_in_window=5, last_used_at=NOW - timedelta(days=15))
    assert promote(score=0.1, uses_in_window=5, last_used_at=NOW - timedelta(days=14))


@pytest.mark.parametrize(
    ("status", "tier"),
    [
        ("promoted", "short_term"),
        ("active", "long_term"),
        ("active", "core"),
        ("forgotten", "short_term"),
    ],
)
def test_only_active_short_term_memories_are_promoted(status, tier):
    assert not promote(score=2.0, uses_in_window=9, status=status, tier=tier)


def test_uses_in_the_window_are_touches_and_recall_times_from_its_start_on():
    start = NOW - timedelta(days=14)
    touched = [start - timedelta(microseconds=1), start, NOW]
    recalls = [iso_second(start), iso_second(start - timedelta(seconds=1)) + "+00:00",
               f"{iso_second(NOW)}.5+00:00", 17, None, "0000-garbage"]  # fmt: skip

    assert iso_second(start) == "2025-02-15T12:00:00"
    counted = count_uses_in_window(
        touched_at=touched, recall_timestamps=recalls, window_start=start
    )
    assert counted == 2 + 2
    # Entries compare as text, so a malformed one never raises; it merely sorts somewhere.
    assert count_uses_in_window(touched_at=[], recall_timestamps=["zzz"], window_start=start) == 1


def forget(score: float, *, status: str = "active", tier: str = "short_term") -> bool:
    return should_forget(status=status, tier=tier, score=score, thresholds=THRESHOLDS)


def test_it_forgets_only_active_short_term_memories_strictly_below_the_threshold():
    assert forget(0.049)
    assert not forget(0.05)
    assert not forget(0.0, tier="long_term")
    assert not forget(0.0, tier="core")
    assert not forget(0.0, status="promoted")
    assert not forget(0.0, status="forgotten")


def test_it_forgets_an_untouched_memory_after_about_13_days():
    def score(days: float) -> float:
        return decay_score(
            use_count=0,
            last_used_at=NOW - timedelta(days=days),
            strength=1.0,
            now=NOW,
            params=EXPONENTIAL,
        )

    crossing = 3 * math.log2(1 / 0.05)  # 12.97 days
    assert not forget(score(crossing - 0.01))
    assert forget(score(crossing + 0.01))


@pytest.mark.parametrize(
    ("score", "inside"), [(0.149, False), (0.15, True), (0.25, True), (0.35, True), (0.351, False)]
)
def test_it_treats_the_danger_zone_as_inclusive(score, inside):
    assert in_danger_zone(score, THRESHOLDS) is inside


def test_it_gives_full_review_priority_at_the_danger_zone_centre():
    def sigmoid(x: float) -> float:
        return 1 / (1 + math.exp(-x))

    assert review_priority(0.25, THRESHOLDS) == pytest.approx(1.0)
    assert review_priority(0.0, THRESHOLDS) == pytest.approx(sigmoid(0.25) / sigmoid(0.5))
    assert review_priority(0.15, THRESHOLDS) == pytest.approx(review_priority(0.35, THRESHOLDS))


def test_it_shapes_the_parabola_boost_around_the_centre():
    assert parabola_boost(0.25, THRESHOLDS) == 1.0
    assert parabola_boost(0.35, THRESHOLDS) == pytest.approx(1 - 0.01 / 0.0625)
    assert parabola_boost(0.5, THRESHOLDS) == 0.0
    assert parabola_boost(0.9, THRESHOLDS) == 0.0
    assert parabola_boost(0.35, THRESHOLDS, half_width=0.1) == pytest.approx(0.0)


def test_it_plots_a_curve_from_now_onwards():
    curve = decay_curve(
        use_count=0, last_used_at=NOW, strength=1.0, now=NOW, params=EXPONENTIAL, days=3
    )

    assert len(curve) == 3 * 4 + 1
    assert curve[0] == (0.0, 1.0)
    assert curve[-1] == (3.0, 0.5)
    assert [offset for offset, _ in curve[:3]] == [0.0, 0.25, 0.5]


params_strategy = st.builds(
    DecayParams,
    model=st.sampled_from(DECAY_MODELS),
    half_life_days=st.floats(min_value=0.01, max_value=365),
    beta=st.floats(min_value=0, max_value=2),
    power_alpha=st.floats(min_value=0.1, max_value=5),
    fast_half_life_days=st.floats(min_value=0.01, max_value=30),
    slow_half_life_days=st.floats(min_value=0.01, max_value=365),
    fast_weight=st.floats(min_value=0, max_value=1),
)
seconds = st.floats(min_value=0, max_value=3e8)


@given(params_strategy, seconds, seconds, st.integers(0, 1000))
def test_it_never_rises_as_time_passes(params, a, b, use_count):
    earlier, later = sorted((a, b))
    base = NOW - timedelta(seconds=4e8)

    def at(offset: float) -> float:
        return decay_score(
            use_count=use_count,
            last_used_at=base,
            strength=1.0,
            now=base + timedelta(seconds=offset),
            params=params,
        )

    assert at(later) <= at(earlier)


@given(params_strategy, seconds, st.integers(0, 1000), st.integers(0, 1000))
def test_it_never_falls_as_use_count_grows(params, elapsed, a, b):
    fewer, more = sorted((a, b))

    def with_uses(use_count: int) -> float:
        return decay_score(
            use_count=use_count,
            last_used_at=NOW - timedelta(seconds=elapsed),
            strength=1.0,
            now=NOW,
            params=params,
        )

    assert with_uses(more) >= with_uses(fewer)


@given(st.floats(min_value=-10, max_value=10))
def test_it_keeps_review_priority_and_boost_within_0_and_1(score):
    assert 0.0 <= review_priority(score, THRESHOLDS) <= 1.0
    assert 0.0 <= parabola_boost(score, THRESHOLDS) <= 1.0


# --- NaN and infinities are refused, not mapped to a plausible number (issue 13) -------

NOT_FINITE = [math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("value", NOT_FINITE)
def test_it_names_the_parameter_that_is_not_finite(value):
    with pytest.raises(ValueError, match=r"^score must be a finite number, got -?(nan|inf)$"):
        require_finite("score", value)


def test_it_passes_finite_numbers_through():
    assert require_finite("score", 0.25) == 0.25
    assert require_finite("count", 3) == 3


@pytest.mark.parametrize("model", DECAY_MODELS)
@pytest.mark.parametrize("dt", NOT_FINITE)
def test_it_refuses_a_non_finite_age(model, dt):
    # Before: NaN seconds counted as 0, a memory as fresh as a brand-new one.
    with pytest.raises(ValueError, match="dt_seconds must be a finite number"):
        decay_factor(dt, DecayParams(model=model))


@pytest.mark.parametrize("strength", NOT_FINITE)
def test_it_refuses_a_non_finite_strength(strength):
    with pytest.raises(ValueError, match="strength must be a finite number"):
        decay_score_after(use_count=1, dt_seconds=DAY, strength=strength, params=EXPONENTIAL)


@pytest.mark.parametrize(
    "check",
    [
        lambda score: promote(score=score),
        lambda score: forget(score),
        lambda score: forget(score, status="forgotten"),
        lambda score: in_danger_zone(score, THRESHOLDS),
        lambda score: review_priority(score, THRESHOLDS),
        lambda score: parabola_boost(score, THRESHOLDS),
    ],
    ids=["should_promote", "should_forget", "should_forget_out_of_scope", "in_danger_zone"]
    + ["review_priority", "parabola_boost"],
)
@pytest.mark.parametrize("score", NOT_FINITE)
def test_it_refuses_a_non_finite_score(check, score):
    # Before: every comparison with NaN is False, so a NaN score was never forgotten,
    # promoted or flagged, and parabola_boost clamped it to 0.
    with pytest.raises(ValueError, match="score must be a finite number"):
        check(score)


@pytest.mark.parametrize(
    "field",
    ["half_life_days", "beta", "power_alpha", "fast_half_life_days", "slow_half_life_days"]
    + ["fast_weight"],
)
@pytest.mark.parametrize("value", NOT_FINITE)
def test_it_refuses_non_finite_decay_params(field, value):
    with pytest.raises(ValueError, match=f"{field} must be a finite number"):
        DecayParams(**{field: value})


@pytest.mark.parametrize(
    "field", ["forget", "danger_min", "danger_max", "promote", "promote_window_days"]
)
@pytest.mark.parametrize("value", NOT_FINITE)
def test_it_refuses_non_finite_thresholds(field, value):
    with pytest.raises(ValueError, match=f"{field} must be a finite number"):
        Thresholds(**{field: value})


# --- When a memory will be forgotten -------------------------------------------------------


def test_seconds_until_below_matches_the_exponential_closed_form():
    params = DecayParams(half_life_days=3.0, beta=0.6)
    # 1 * 2^(-t/3) < 0.05  <=>  t > 3 log2(20) days
    left = seconds_until_below(0.05, use_count=0, dt_seconds=0, strength=1.0, params=params)
    assert left == pytest.approx(3 * math.log2(20) * 86_400, abs=2)
    # One day already gone leaves one day less; a strength of 0.5 halves the start.
    later = seconds_until_below(0.05, use_count=0, dt_seconds=86_400, strength=1.0, params=params)
    assert later == pytest.approx(left - 86_400, abs=2)
    weaker = seconds_until_below(0.05, use_count=0, dt_seconds=0, strength=0.5, params=params)
    assert weaker == pytest.approx(3 * math.log2(10) * 86_400, abs=2)


@pytest.mark.parametrize("model", ["exponential", "power_law", "two_component"])
def test_the_score_crosses_the_threshold_exactly_when_said(model):
    params = DecayParams(model=model)
    left = seconds_until_below(0.05, use_count=3, dt_seconds=3_600, strength=1.0, params=params)
    assert left is not None and left > 0

    def score(extra):
        return decay_score_after(use_count=3, dt_seconds=3_600 + extra, strength=1.0, params=params)

    assert score(left - 2) >= 0.05 > score(left)


def test_already_below_is_zero_and_a_slow_tail_past_the_horizon_is_none():
    params = DecayParams()
    gone = seconds_until_below(
        0.05, use_count=0, dt_seconds=30 * 86_400, strength=1.0, params=params
    )
    assert gone == 0.0
    slow = DecayParams(model="power_law", power_alpha=0.05)
    assert seconds_until_below(0.05, use_count=0, dt_seconds=0, strength=1.0, params=slow) is None


def test_the_outlook_says_what_one_use_adds_and_who_is_never_forgotten():
    base = {"use_count": 0, "dt_seconds": 0.0, "strength": 1.0, "params": DecayParams()}
    outlook = forgetting_outlook(
        status="active", tier="short_term", thresholds=Thresholds(), **base
    )
    assert outlook.forgettable
    # After a use: (1 + 1)^0.6 / 0.05 to fall through, from now.
    assert outlook.seconds_left_after_use == pytest.approx(
        3 * math.log2(2**0.6 / 0.05) * 86_400, abs=2
    )
    assert outlook.gain_per_use_seconds == pytest.approx(3 * 0.6 * 86_400, abs=4)
    for status, tier, why in (
        ("active", "long_term", "only short-term memories are forgotten"),
        ("active", "core", "a core one goes cold"),
        ("promoted", "short_term", "it is promoted"),
    ):
        other = forgetting_outlook(status=status, tier=tier, thresholds=Thresholds(), **base)
        assert not other.forgettable and why in other.reason
        assert other.seconds_left is None and other.gain_per_use_seconds is None
