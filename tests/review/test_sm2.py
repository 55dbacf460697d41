from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from review.sm2 import (
    Button,
    SM2Config,
    SM2State,
    easiness_delta,
    is_due,
    preview_intervals,
    priority_score,
    sm2_update,
)

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


grades = st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=40)
configs = st.builds(
    SM2Config,
    ef_ceiling=st.floats(min_value=1.3, max_value=4.0),
    ef_on_failure=st.sampled_from(["update", "keep"]),
)


@given(grades, configs)
def test_it_keeps_easiness_between_floor_and_ceiling(sequence, config):
    for state in run(sequence, config):
        assert config.ef_floor <= state.easiness <= config.ef_ceiling


@given(grades, configs)
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


@given(grades, st.floats(min_value=-1000, max_value=1000))
def test_it_keeps_priority_within_0_and_1(sequence, offset_days):
    state = run(sequence)[-1]

    assert 0.0 <= priority_score(state, NOW + timedelta(days=offset_days)) <= 1.0


@given(grades)
def test_it_previews_non_decreasing_intervals_by_button(sequence):
    preview = preview_intervals(run(sequence)[-1], now=NOW, config=DEFAULT)

    values = [preview[b] for b in (Button.AGAIN, Button.HARD, Button.GOOD, Button.EASY)]
    assert values == sorted(values)
