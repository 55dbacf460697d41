from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from review.sm2 import (
    DEFAULT_MAX_INTERVAL_DAYS,
    LATEST_DUE,
    Button,
    SM2Config,
    SM2State,
    easiness_delta,
    is_due,
    preview_intervals,
    priority_score,
    sm2_update,
)
from tests.review.strategies import grade_histories

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
DEFAULT = SM2Config()


def run(grades: list[int], config: SM2Config = DEFAULT) -> list[SM2State]:
    state = SM2State()
    states = []
    for grade in grades:
        state = sm2_update(state, grade, now=NOW, config=config)
        states.append(state)
    return states


def test_it_reproduces_seed_000_worked_example():
    states = run([4, 5, 5, 1])

    assert [s.interval_days for s in states] == [1, 6, 15, 1]
    assert [s.repetitions for s in states] == [1, 2, 3, 0]


def test_it_schedules_next_review_interval_days_after_now():
    first, second, third = run([4, 5, 5])

    assert first.next_review == NOW + timedelta(days=1)
    assert second.next_review == NOW + timedelta(days=6)
    assert third.next_review == NOW + timedelta(days=15)


@pytest.mark.parametrize(
    ("quality", "delta"),
    [(5, 0.10), (4, 0.0), (3, -0.14), (2, -0.32), (1, -0.54), (0, -0.80)],
)
def test_it_changes_easiness_by_seed_004_delta_per_grade(quality, delta):
    assert easiness_delta(quality) == pytest.approx(delta, abs=1e-12)
    state = SM2State(easiness=2.0)
    wide = SM2Config(ef_floor=1.0, ef_ceiling=3.0)

    updated = sm2_update(state, quality, now=NOW, config=wide)

    assert updated.easiness == pytest.approx(2.0 + delta, abs=1e-9)


def test_it_uses_the_easiness_from_before_the_review_for_the_interval():
    # Without a ceiling-like bound EF reaches 2.6 after the second grade 5, so the third
    # interval is ceil(6 * 2.6) = 16; using the updated EF (2.7) would give 17.
    states = run([4, 5, 5], SM2Config(ef_ceiling=10.0))

    assert [s.interval_days for s in states] == [1, 6, 16]
    assert states[-1].easiness == pytest.approx(2.7)


def test_it_rounds_fractional_intervals_up():
    state = SM2State(easiness=2.36, interval_days=6, repetitions=2)

    updated = sm2_update(state, 4, now=NOW, config=DEFAULT)

    assert updated.interval_days == math.ceil(6 * 2.36) == 15


def test_it_does_not_overshoot_exact_products_because_of_float_noise():
    state = SM2State(easiness=2.3, interval_days=6, repetitions=2)

    assert sm2_update(state, 4, now=NOW, config=DEFAULT).interval_days == 14  # 6 * 2.3 = 13.8


def test_it_floors_easiness_at_1_3():
    states = run([0, 0, 0, 0])

    assert states[-1].easiness == 1.3


def test_it_updates_easiness_on_failure_by_default():
    (failed,) = run([1])

    assert failed.easiness == pytest.approx(2.5 - 0.54)


def test_it_keeps_easiness_on_failure_when_configured():
    keep = SM2Config(ef_on_failure="keep")
    state = SM2State(easiness=2.1, interval_days=15, repetitions=3)

    failed = sm2_update(state, 2, now=NOW, config=keep)

    assert failed.easiness == 2.1
    assert (failed.interval_days, failed.repetitions) == (1, 0)


def test_it_restarts_the_1_then_6_sequence_after_a_failure():
    states = run([5, 5, 5, 0, 4, 4])

    assert [s.interval_days for s in states[3:]] == [1, 1, 6]


@pytest.mark.parametrize("quality", [-1, 6, 3.0, "4", None, True])
def test_it_rejects_grades_that_are_not_ints_from_0_to_5(quality):
    with pytest.raises(ValueError):
        sm2_update(SM2State(), quality, now=NOW, config=DEFAULT)


def test_it_accepts_buttons_as_grades():
    assert sm2_update(SM2State(), Button.GOOD, now=NOW, config=DEFAULT).last_quality == 4


def test_it_treats_a_new_card_as_not_due():
    assert not is_due(SM2State(), NOW)


def test_it_is_due_from_next_review_on():
    state = SM2State(next_review=NOW)

    assert is_due(state, NOW)
    assert not is_due(state, NOW - timedelta(seconds=1))


def test_it_computes_priority_from_overdue_easiness_and_repetitions():
    state = SM2State(easiness=1.9, repetitions=3, next_review=NOW - timedelta(days=12))

    expected = 0.5 * (12 / 30) + 0.3 * ((2.5 - 1.9) / (2.5 - 1.3)) + 0.2 * (1 / 4)

    assert priority_score(state, NOW) == pytest.approx(expected)


def test_it_caps_overdue_at_30_days():
    hard = SM2State(easiness=1.3, repetitions=0, next_review=NOW - timedelta(days=400))

    assert priority_score(hard, NOW) == pytest.approx(1.0)


def test_it_ranks_more_overdue_cards_higher():
    late = SM2State(next_review=NOW - timedelta(days=10), repetitions=2)
    later = SM2State(next_review=NOW - timedelta(days=20), repetitions=2)

    assert priority_score(later, NOW) > priority_score(late, NOW)


def test_it_previews_one_day_for_again_and_the_sm2_interval_otherwise():
    state = SM2State(easiness=2.5, interval_days=6, repetitions=2)

    preview = preview_intervals(state, now=NOW, config=DEFAULT)

    assert preview == {Button.AGAIN: 1, Button.HARD: 15, Button.GOOD: 15, Button.EASY: 15}


# Up to 300 grades: long enough for the easiness floor and ceiling, the interval cap and
# failures after it (tests/review/strategies.py).
histories = grade_histories()
configs = st.builds(
    SM2Config,
    ef_ceiling=st.floats(min_value=1.3, max_value=4.0),
    ef_on_failure=st.sampled_from(["update", "keep"]),
)


@given(histories, configs)
def test_it_keeps_easiness_between_floor_and_ceiling(sequence, config):
    for state in run(sequence, config):
        assert config.ef_floor <= state.easiness <= config.ef_ceiling


@given(histories, configs)
def test_it_never_shrinks_the_interval_on_success(sequence, config):
    state = SM2State()
    for grade in sequence:
        updated = sm2_update(state, grade, now=NOW, config=config)
        if grade >= 3:
            assert updated.interval_days >= state.interval_days
            assert updated.repetitions == state.repetitions + 1
        else:
            assert (updated.interval_days, updated.repetitions) == (1, 0)
        state = updated


@given(histories, st.floats(min_value=-1000, max_value=1000))
def test_it_keeps_priority_within_0_and_1(sequence, offset_days):
    state = run(sequence)[-1]

    assert 0.0 <= priority_score(state, NOW + timedelta(days=offset_days)) <= 1.0


@given(histories)
def test_it_previews_non_decreasing_intervals_by_button(sequence):
    preview = preview_intervals(run(sequence)[-1], now=NOW, config=DEFAULT)

    values = [preview[b] for b in (Button.AGAIN, Button.HARD, Button.GOOD, Button.EASY)]
    assert values == sorted(values)


# --- The interval cap: no sequence of grades overflows the calendar (issue 13) ---------


def test_it_caps_the_interval_instead_of_overflowing_on_the_17th_pass():
    states = run([5] * 20)

    intervals = [s.interval_days for s in states]
    assert intervals[:11] == [1, 6, 15, 38, 95, 238, 595, 1488, 3720, 9300, 23250]
    assert intervals[11:] == [DEFAULT_MAX_INTERVAL_DAYS] * 9 == [36_500] * 9
    assert states[-1].next_review == NOW + timedelta(days=36_500)


def test_it_caps_the_interval_at_the_configured_maximum():
    states = run([5] * 6, SM2Config(max_interval_days=30))

    assert [s.interval_days for s in states] == [1, 6, 15, 30, 30, 30]


def test_it_caps_an_oversized_stored_interval():
    stored = SM2State(easiness=2.5, interval_days=10**12, repetitions=5)

    updated = sm2_update(stored, 5, now=NOW, config=DEFAULT)

    assert updated.interval_days == 36_500


@pytest.mark.parametrize("cap", [0, -1, 1.5, math.nan, math.inf, True, None])
def test_it_refuses_an_interval_cap_that_is_not_a_positive_int(cap):
    with pytest.raises(ValueError, match="max_interval_days"):
        SM2Config(max_interval_days=cap)


@given(histories, st.integers(min_value=1, max_value=DEFAULT_MAX_INTERVAL_DAYS))
def test_it_never_raises_or_passes_the_cap_along_any_grades(sequence, cap):
    config = SM2Config(max_interval_days=cap)
    state = SM2State()
    for grade in sequence:
        state = sm2_update(state, grade, now=NOW, config=config)
        assert 1 <= state.interval_days <= cap
        assert state.next_review == NOW + timedelta(days=state.interval_days)
        assert state.next_review.astimezone(UTC) <= LATEST_DUE


@given(histories)
def test_it_holds_due_dates_at_the_end_of_the_calendar_when_graded_as_they_fall_due(sequence):
    # Each grade lands on the due date, so a long run of passes walks past year 9999.
    state = SM2State()
    now = NOW
    for grade in sequence:
        state = sm2_update(state, grade, now=now, config=DEFAULT)
        assert now <= state.next_review <= LATEST_DUE
        now = state.next_review


def test_it_holds_next_review_at_the_last_storable_instant():
    late = datetime(9999, 1, 1, tzinfo=UTC)
    seasoned = SM2State(easiness=2.5, interval_days=1000, repetitions=5)

    updated = sm2_update(seasoned, 5, now=late, config=DEFAULT)

    assert updated.interval_days == 2500
    assert updated.next_review == LATEST_DUE == datetime(9999, 12, 30, tzinfo=UTC)


def test_it_holds_naive_datetimes_at_the_same_wall_clock_instant():
    seasoned = SM2State(easiness=2.5, interval_days=1000, repetitions=5)

    updated = sm2_update(seasoned, 5, now=datetime(9999, 1, 1), config=DEFAULT)

    assert updated.next_review == datetime(9999, 12, 30)


def test_it_refuses_a_now_past_the_last_storable_instant():
    with pytest.raises(ValueError, match="now must be no later than"):
        sm2_update(SM2State(), 5, now=datetime(9999, 12, 31, tzinfo=UTC), config=DEFAULT)


# --- NaN and infinities are refused, not mapped to a plausible number -----------------

NOT_FINITE = [math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("easiness", NOT_FINITE)
@pytest.mark.parametrize("repetitions", [0, 1, 2])
@pytest.mark.parametrize("quality", [1, 5])
def test_it_refuses_a_non_finite_easiness_when_grading(easiness, repetitions, quality):
    # Before: NaN came out as EF 1.3 (or an unnamed ceil() error from the third pass on).
    state = SM2State(easiness=easiness, interval_days=6, repetitions=repetitions)

    with pytest.raises(ValueError, match=r"easiness must be a finite number, got -?(nan|inf)"):
        sm2_update(state, quality, now=NOW, config=DEFAULT)


@pytest.mark.parametrize("easiness", NOT_FINITE)
def test_it_refuses_a_non_finite_easiness_in_priority(easiness):
    # Before: NaN gave a low-EF term of 0, ranking the card as the easiest there is.
    state = SM2State(easiness=easiness, next_review=NOW)

    with pytest.raises(ValueError, match="easiness must be a finite number"):
        priority_score(state, NOW)


@pytest.mark.parametrize("bound", ["ef_floor", "ef_ceiling"])
@pytest.mark.parametrize("value", NOT_FINITE)
def test_it_refuses_non_finite_easiness_bounds(bound, value):
    with pytest.raises(ValueError, match=f"{bound} must be a finite number"):
        SM2Config(**{bound: value})


# --- Anki's modifiers (issue 17: the buttons mean something under SM-2) ------------------

MODIFIED = SM2Config(modifiers=True)


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        # First pass: Anki's easy interval of 4 days; Hard and Good a day.
        (SM2State(), {Button.AGAIN: 1, Button.HARD: 1, Button.GOOD: 1, Button.EASY: 4}),
        # Second: Hard 1.2 x 1 day (rounded up), Good 6, Easy 1.3 x 6.
        (
            SM2State(interval_days=1, repetitions=1),
            {Button.AGAIN: 1, Button.HARD: 2, Button.GOOD: 6, Button.EASY: 8},
        ),
        # Then: Hard 1.2 x 6, Good 6 x 2.5, Easy 1.3 x 15.
        (
            SM2State(easiness=2.5, interval_days=6, repetitions=2),
            {Button.AGAIN: 1, Button.HARD: 8, Button.GOOD: 15, Button.EASY: 20},
        ),
        # A low easiness: Hard never passes Good, Easy always passes it.
        (
            SM2State(easiness=1.3, interval_days=10, repetitions=5),
            {Button.AGAIN: 1, Button.HARD: 12, Button.GOOD: 13, Button.EASY: 17},
        ),
    ],
)
def test_with_modifiers_each_button_schedules_its_own_interval(state, expected):
    assert preview_intervals(state, now=NOW, config=MODIFIED) == expected


def test_modifiers_keep_the_cap_and_leave_easiness_and_repetitions_to_sm2():
    capped = SM2Config(modifiers=True, max_interval_days=30)
    state = SM2State(easiness=2.5, interval_days=29, repetitions=4)
    assert set(preview_intervals(state, now=NOW, config=capped).values()) <= set(range(1, 31))
    plain, modified = (
        sm2_update(state, Button.EASY, now=NOW, config=config) for config in (DEFAULT, MODIFIED)
    )
    assert (plain.easiness, plain.repetitions) == (modified.easiness, modified.repetitions)
