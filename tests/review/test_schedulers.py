from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from review.schedulers import (
    CardState,
    FSRSScheduler,
    Scheduler,
    SM2Scheduler,
    fsrs_state_problem,
    get_scheduler,
)
from review.sm2 import LATEST_DUE, Button, SM2Config
from tests.review.strategies import timed_histories

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
BUTTONS = (Button.AGAIN, Button.HARD, Button.GOOD, Button.EASY)


@pytest.fixture(params=["sm2", "fsrs"])
def scheduler(request) -> Scheduler:
    return get_scheduler(request.param, sm2_config=SM2Config(), desired_retention=0.9)


def test_it_starts_cards_new_and_not_due(scheduler):
    state = scheduler.initial_state()

    assert state.next_review is None
    assert not scheduler.is_due(state, NOW)


def test_it_schedules_a_success_later_and_later(scheduler):
    first = scheduler.grade(scheduler.initial_state(), 4, now=NOW)
    second = scheduler.grade(first, 4, now=first.next_review)

    assert first.next_review > NOW
    assert second.next_review > first.next_review
    assert second.next_review - first.next_review > first.next_review - NOW


def test_it_is_not_due_right_after_a_success(scheduler):
    state = scheduler.grade(scheduler.initial_state(), 5, now=NOW)

    assert not scheduler.is_due(state, NOW)
    assert scheduler.is_due(state, state.next_review)


def test_it_gives_a_failure_a_short_interval(scheduler):
    state = scheduler.initial_state()
    for day in range(4):
        state = scheduler.grade(state, 5, now=NOW + timedelta(days=30 * day))
    when = NOW + timedelta(days=200)

    failed = scheduler.grade(state, 1, now=when)

    assert failed.next_review - when <= timedelta(days=1)
    assert failed.repetitions == 0
    assert failed.last_quality == 1
    assert failed.last_reviewed_at == when


def test_it_previews_four_buttons_in_non_decreasing_order(scheduler):
    state = scheduler.grade(scheduler.initial_state(), 4, now=NOW)

    preview = scheduler.preview(state, now=state.next_review)

    assert set(preview) == set(BUTTONS)
    values = [preview[b] for b in BUTTONS]
    assert values == sorted(values)
    assert all(isinstance(v, timedelta) for v in values)


def test_it_round_trips_state_through_json(scheduler):
    state = scheduler.grade(scheduler.initial_state(), 4, now=NOW)
    state = scheduler.grade(state, 3, now=state.next_review + timedelta(hours=5))

    restored = CardState.from_dict(json.loads(json.dumps(state.to_dict())))

    assert restored == state
    assert scheduler.grade(restored, 4, now=NOW + timedelta(days=40)) == scheduler.grade(
        state, 4, now=NOW + timedelta(days=40)
    )


def test_it_keeps_priority_within_0_and_1(scheduler):
    state = scheduler.grade(scheduler.initial_state(), 2, now=NOW)
    for offset in (0, 1, 10, 100, 1000):
        assert 0.0 <= scheduler.priority(state, NOW + timedelta(days=offset)) <= 1.0


def test_it_rejects_out_of_range_grades(scheduler):
    with pytest.raises(ValueError):
        scheduler.grade(scheduler.initial_state(), 6, now=NOW)


# Up to 300 grades, each given some days after the last one or on the card's due date
# (None): grades on time let FSRS grow its intervals to its cap as SM-2 does. A wait is at
# most LONGEST_WAIT, so the clock stays millennia before the end of the calendar.
LONGEST_WAIT = timedelta(days=3650)
histories = timed_histories(st.one_of(st.none(), st.floats(min_value=0, max_value=60)))


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(["sm2", "fsrs"]), history=histories)
def test_it_keeps_the_contract_along_any_history(name, history):
    scheduler = get_scheduler(name, sm2_config=SM2Config(), desired_retention=0.9)
    state = scheduler.initial_state()
    now = NOW
    for grade, gap in history:
        if gap is None:
            now += min((state.next_review or now) - now, LONGEST_WAIT)
        else:
            now += timedelta(days=gap)
        state = scheduler.grade(state, grade, now=now)
        assert state.next_review > now
        assert not scheduler.is_due(state, now)
        assert 0.0 <= scheduler.priority(state, now) <= 1.0
        preview = scheduler.preview(state, now=now)
        assert [preview[b] for b in BUTTONS] == sorted(preview[b] for b in BUTTONS)
    assert CardState.from_dict(json.loads(json.dumps(state.to_dict()))) == state


def test_it_matches_sm2_intervals_of_seed_000():
    scheduler = SM2Scheduler(SM2Config())
    state = scheduler.initial_state()
    intervals = []
    for grade in (4, 5, 5, 1):
        state = scheduler.grade(state, grade, now=NOW)
        intervals.append(state.interval_days)

    assert intervals == [1, 6, 15, 1]


def test_it_maps_grades_to_fsrs_ratings():
    fsrs = FSRSScheduler()
    new = fsrs.initial_state()

    # New FSRS cards: Again 1 min, Hard 5.5 min, Good 10 min (learning steps 1 and 10 min).
    assert [fsrs.grade(new, q, now=NOW).next_review - NOW for q in (0, 1, 2)] == [
        timedelta(minutes=1)
    ] * 3
    assert fsrs.grade(new, 3, now=NOW).next_review - NOW == timedelta(minutes=5, seconds=30)
    assert fsrs.grade(new, 4, now=NOW).next_review - NOW == timedelta(minutes=10)
    assert fsrs.grade(new, 5, now=NOW).next_review - NOW >= timedelta(days=1)


def test_it_counts_fsrs_interval_days_as_whole_days_rounded_up():
    state = FSRSScheduler().grade(CardState(), 4, now=NOW)

    assert state.interval_days == 1  # due in ten minutes
    assert state.fsrs is not None and state.fsrs["due"] == state.next_review.isoformat()


def test_it_is_deterministic_without_fuzzing():
    a = FSRSScheduler()
    b = FSRSScheduler()
    history = [(4, 0), (4, 1), (5, 5), (4, 40), (4, 200)]

    def replay(scheduler: FSRSScheduler) -> CardState:
        state = scheduler.initial_state()
        for grade, day in history:
            state = scheduler.grade(state, grade, now=NOW + timedelta(days=day, minutes=10))
        return state

    assert replay(a) == replay(b)


def test_it_accepts_any_aware_timezone_for_fsrs():
    paris = timezone(timedelta(hours=1))
    state = FSRSScheduler().grade(CardState(), 4, now=NOW.astimezone(paris))

    assert state.next_review == NOW + timedelta(minutes=10)


def test_it_refuses_naive_datetimes_for_fsrs():
    with pytest.raises(ValueError):
        FSRSScheduler().grade(CardState(), 4, now=NOW.replace(tzinfo=None))


def test_it_refuses_unknown_scheduler_names():
    with pytest.raises(ValueError):
        get_scheduler("leitner", sm2_config=SM2Config(), desired_retention=0.9)


# --- No overflow, no NaN (issue 13) ----------------------------------------------------


def test_it_caps_the_interval_over_many_easy_grades(scheduler):
    # SM-2 used to overflow the calendar on the 17th pass; FSRS caps at 36,500 days itself.
    state = scheduler.initial_state()
    for _ in range(60):
        state = scheduler.grade(state, 5, now=NOW)
        assert 1 <= state.interval_days <= 36_500
        assert NOW < state.next_review <= NOW + timedelta(days=36_500)


def test_it_holds_due_dates_at_the_end_of_the_calendar(scheduler):
    # Graded on each due date, a card reaches year 9999; its due date stays storable there.
    state = scheduler.initial_state()
    now = NOW
    for _ in range(200):
        state = scheduler.grade(state, 5, now=now)
        assert now <= state.next_review <= LATEST_DUE
        scheduler.preview(state, now=now)
        now = state.next_review

    assert state.next_review == LATEST_DUE


def test_it_refuses_to_grade_after_the_last_storable_instant(scheduler):
    with pytest.raises(ValueError, match="now must be no later than"):
        scheduler.grade(scheduler.initial_state(), 5, now=LATEST_DUE + timedelta(hours=1))


@pytest.mark.parametrize("easiness", [math.nan, math.inf, -math.inf])
def test_it_refuses_a_non_finite_sm2_easiness(easiness):
    scheduler = SM2Scheduler(SM2Config())
    state = CardState(easiness=easiness, interval_days=6, repetitions=1, next_review=NOW)

    with pytest.raises(ValueError, match="easiness must be a finite number"):
        scheduler.grade(state, 4, now=NOW)
    with pytest.raises(ValueError, match="easiness must be a finite number"):
        scheduler.priority(state, NOW)


BAD_FSRS_STATES = [
    *({name: value} for name in ("stability", "difficulty") for value in (math.nan, math.inf)),
    {"stability": 0.0},
    {"stability": -5.0},
    {"difficulty": 0.0},
    {"state": 2, "stability": None, "difficulty": None, "step": None},
    {"state": 3, "step": None},
    {"state": 7},
    {"due": "not a date"},
    {"due": "2025-03-01T09:00:00"},
]


@pytest.mark.parametrize("change", BAD_FSRS_STATES, ids=str)
def test_an_unreadable_fsrs_state_is_read_as_the_cards_sm2_fields(change):
    # Imported or written by hand, such a state made fsrs fail (ZeroDivisionError, complex
    # numbers, assertions; NaN raised ValueError): the queue, sessions, grading and tracked
    # recall answered 500. Stored data never makes a read fail: the card is read as SM-2's.
    scheduler = FSRSScheduler()
    reviewed = scheduler.grade(CardState(), 5, now=NOW)
    bad = {**reviewed.fsrs, **change}
    assert fsrs_state_problem(bad) is not None
    state = CardState.from_dict({**reviewed.to_dict(), "fsrs": bad})
    later = NOW + timedelta(days=3)

    assert 0.0 <= scheduler.priority(state, later) <= 1.0
    assert set(scheduler.preview(state, now=later)) == set(Button)
    graded = scheduler.grade(state, 4, now=later)
    assert fsrs_state_problem(graded.fsrs) is None
    assert graded.next_review > later


def test_fsrs_state_problem_accepts_what_fsrs_writes():
    scheduler = FSRSScheduler()
    state = scheduler.initial_state()
    moment = NOW
    for grade in (1, 3, 4, 5, 1, 4):
        state = scheduler.grade(state, grade, now=moment)
        assert fsrs_state_problem(state.fsrs) is None, state.fsrs
        moment = state.next_review


def test_a_card_sm2_scheduled_keeps_what_it_learned_under_fsrs():
    # A namespace switched from SM-2 to FSRS: its card fifteen days apart was offered
    # Again 1 min / Good 10 min like a new card.
    sm2_state = CardState(
        easiness=2.5,
        interval_days=15,
        repetitions=3,
        next_review=NOW,
        last_quality=4,
        last_reviewed_at=NOW - timedelta(days=15),
    )
    preview = FSRSScheduler().preview(sm2_state, now=NOW)

    assert preview[Button.GOOD] >= timedelta(days=15)
    assert preview[Button.AGAIN] < timedelta(days=1)
    new_card = FSRSScheduler().preview(CardState(), now=NOW)
    assert new_card[Button.GOOD] < timedelta(days=1)  # a new card still starts learning


@pytest.mark.parametrize("retention", [math.nan, math.inf, -math.inf, 0.0, 1.0])
def test_it_refuses_a_desired_retention_outside_0_and_1(retention):
    with pytest.raises(ValueError, match="desired_retention"):
        FSRSScheduler(retention)
