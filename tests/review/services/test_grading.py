from __future__ import annotations

from datetime import timedelta

import pytest

from memories.models import Memory, MemoryEvent
from review.models import Card, ReviewLog
from review.selectors import card_state, scheduler_for
from review.services import (
    GradeConflict,
    InvalidGrade,
    InvalidRequest,
    NothingToUndo,
    card_grade,
    card_reschedule_now,
    card_undo,
    grade_quality,
)
from review.sm2 import Button
from tests.review.conftest import NOW, card_row


def test_it_applies_a_grade_to_the_schedule_counters_and_utility(make_card, user, study_ns):
    card = make_card()
    expected = scheduler_for(study_ns).grade(card_state(card), 4, now=NOW)

    log = card_grade(card=card, grade=Button.GOOD, source="human", user=user, now=NOW)

    stored = Card.objects.get(pk=card.pk)
    assert stored.next_review == expected.next_review
    assert stored.next_review > NOW
    assert (stored.interval_days, stored.repetitions) == (expected.interval_days, 1)
    assert stored.fsrs_state == expected.fsrs
    assert stored.last_quality == 4
    assert stored.last_reviewed_at == NOW
    assert stored.first_reviewed_at == NOW
    assert (stored.total_reviews, stored.correct_reviews, stored.version) == (1, 1, 1)
    assert stored.scheduler == study_ns.scheduler
    # The caller's instance follows the database.
    assert (card.version, card.next_review) == (1, stored.next_review)

    log = ReviewLog.objects.get(pk=log.pk)
    assert (log.grade, log.source, log.mode, log.user, log.reviewed_at) == (
        4,
        "human",
        "normal",
        user,
        NOW,
    )
    assert log.state_before["next_review"] is None
    assert log.state_before["version"] == 0
    assert log.state_after["next_review"] == stored.next_review.isoformat()
    assert log.state_after["version"] == 1
    assert (log.state_before["utility"], log.state_after["utility"]) == (0.5, 0.55)

    memory = Memory.objects.get(pk=card.memory_id)
    assert memory.utility == pytest.approx(0.55)
    graded = MemoryEvent.objects.get(memory=memory, kind="graded")
    assert graded.after["grade"] == 4
    assert graded.after["review_log"] == log.pk
    assert graded.actor == user


def test_it_counts_a_success_as_a_use_when_auto_reinforce_is_on(make_card, settings):
    settings.AUTO_REINFORCE = True
    card = make_card()

    card_grade(card=card, grade=5, source="human", now=NOW)

    memory = Memory.objects.get(pk=card.memory_id)
    assert memory.use_count == 1
    assert memory.last_used_at == NOW
    assert MemoryEvent.objects.filter(memory=memory, kind="touched").count() == 1


def test_a_simulated_success_is_not_a_use(make_card, settings):
    settings.AUTO_REINFORCE = True
    card = make_card()

    card_grade(card=card, grade=5, source="simulated", now=NOW)

    memory = Memory.objects.get(pk=card.memory_id)
    assert memory.use_count == 0
    assert not MemoryEvent.objects.filter(memory=memory, kind="touched").exists()


def test_it_does_not_touch_the_memory_when_auto_reinforce_is_off(make_card, settings):
    settings.AUTO_REINFORCE = False
    card = make_card()

    card_grade(card=card, grade=5, source="human", now=NOW)

    assert Memory.objects.get(pk=card.memory_id).use_count == 0
    assert not MemoryEvent.objects.filter(kind="touched").exists()


def test_it_resets_a_failed_card_and_lowers_utility(make_card):
    card = make_card(
        next_review=NOW - timedelta(days=1), repetitions=3, interval_days=15, easiness=2.5
    )
    for _ in range(2):
        card_grade(card=card, grade=5, source="human", now=NOW)

    card_grade(card=card, grade=Button.AGAIN, source="human", now=NOW + timedelta(days=200))

    stored = Card.objects.get(pk=card.pk)
    assert stored.repetitions == 0
    assert stored.next_review - (NOW + timedelta(days=200)) <= timedelta(days=1)
    assert (stored.total_reviews, stored.correct_reviews) == (3, 2)
    memory = Memory.objects.get(pk=card.memory_id)
    assert memory.utility == pytest.approx((0.5 + 0.1 * 0.5 + 0.1 * 0.45) * 0.85)
    assert memory.use_count == 2  # the failure is no use


@pytest.mark.parametrize("scheduler_name", ["sm2"])
def test_it_follows_seed_000s_worked_example_through_the_service(make_card):
    card = make_card()
    when = NOW
    intervals = []
    for grade in (4, 5, 5, 1):
        card_grade(card=card, grade=grade, source="human", now=when)
        intervals.append((card.interval_days, card.repetitions))
        when = card.next_review

    assert intervals == [(1, 1), (6, 2), (15, 3), (1, 0)]


@pytest.mark.parametrize(
    ("grade", "quality"),
    [
        (Button.AGAIN, 1),
        (Button.HARD, 3),
        (Button.GOOD, 4),
        (Button.EASY, 5),
        ("again", 1),
        ("Hard", 3),
        ("GOOD", 4),
        ("easy", 5),
        (0, 0),
        (2, 2),
        ("5", 5),
    ],
)
def test_it_maps_buttons_and_grades_to_sm2_quality(grade, quality):
    assert grade_quality(grade) == quality


@pytest.mark.parametrize("grade", [6, -1, True, 2.5, "meh", "", None])
def test_it_rejects_a_bad_grade_and_writes_nothing(make_card, grade):
    card = make_card()
    before = card_row(card)

    with pytest.raises(InvalidGrade) as error:
        card_grade(card=card, grade=grade, source="human", now=NOW)

    assert error.value.field == "grade"
    assert card_row(card) == before
    assert not ReviewLog.objects.exists()


def test_it_rejects_an_unknown_source(make_card):
    card = make_card()

    with pytest.raises(InvalidRequest) as error:
        card_grade(card=card, grade=4, source="telepathy", now=NOW)

    assert "telepathy" in error.value.message
    # A source is chosen by code, never sent in a request, so no request field is named.
    assert error.value.field is None
    assert not ReviewLog.objects.exists()


def test_it_refuses_a_grade_computed_from_a_stale_version(make_card):
    card = make_card(next_review=NOW - timedelta(days=1))
    stale = Card.objects.get(pk=card.pk)
    card_grade(card=card, grade=4, source="human", now=NOW)
    after_first = card_row(card)

    with pytest.raises(GradeConflict) as error:
        card_grade(card=stale, grade=1, source="simulated", now=NOW)
    with pytest.raises(GradeConflict):
        card_grade(card=card, grade=1, source="human", now=NOW, expected_version=0)

    assert "reload" in error.value.message
    assert error.value.field == "version"
    assert card_row(card) == after_first
    assert ReviewLog.objects.count() == 1
    assert Memory.objects.get(pk=card.memory_id).utility == pytest.approx(0.55)


def test_it_applies_a_grade_on_the_version_the_caller_saw(make_card):
    card = make_card()
    card_grade(card=card, grade=4, source="human", now=NOW)
    fresh = Card.objects.get(pk=card.pk)

    card_grade(card=fresh, grade=5, source="human", now=NOW, expected_version=1)

    assert Card.objects.get(pk=card.pk).version == 2


# --- Undo ------------------------------------------------------------------------------


def test_it_undoes_the_last_grade_back_to_the_state_before(make_card, user):
    card = make_card(
        next_review=NOW - timedelta(days=2), repetitions=2, interval_days=6, easiness=2.36
    )
    original = card_row(card)
    log = card_grade(card=card, grade=1, source="human", user=user, now=NOW)

    undone = card_undo(card=card, user=user, now=NOW + timedelta(minutes=1))

    restored = card_row(card)
    assert restored == {**original, "version": 2}
    assert card.version == 2
    assert card.next_review == original["next_review"]
    undone.refresh_from_db()
    assert undone.pk == log.pk
    assert undone.undone_at == NOW + timedelta(minutes=1)
    assert Memory.objects.get(pk=card.memory_id).utility == pytest.approx(0.5)
    assert MemoryEvent.objects.filter(kind="graded", after__undone_review_log=log.pk).exists()


def test_it_returns_a_new_card_to_the_daily_budget_on_undo(make_card):
    card = make_card()
    card_grade(card=card, grade=4, source="human", now=NOW)

    card_undo(card=card, now=NOW)

    stored = Card.objects.get(pk=card.pk)
    assert stored.first_reviewed_at is None
    assert stored.next_review is None
    assert stored.total_reviews == 0


def test_it_undoes_only_one_level(make_card):
    card = make_card()
    card_grade(card=card, grade=4, source="human", now=NOW)
    card_grade(card=card, grade=5, source="human", now=NOW + timedelta(days=1))
    card_undo(card=card, now=NOW + timedelta(days=1))

    with pytest.raises(NothingToUndo):
        card_undo(card=card, now=NOW + timedelta(days=1))
    assert Card.objects.get(pk=card.pk).total_reviews == 1


def test_it_has_nothing_to_undo_on_a_card_never_graded(make_card):
    card = make_card()

    with pytest.raises(NothingToUndo) as error:
        card_undo(card=card)

    # The card is the URL of the undo, not a field of its (empty) body.
    assert error.value.field is None


def test_it_refuses_to_undo_a_grade_that_is_no_longer_the_latest_change(make_card):
    card = make_card()
    card_grade(card=card, grade=4, source="human", now=NOW)
    card_reschedule_now(memories=Memory.objects.filter(pk=card.memory_id), now=NOW)
    rescheduled = card_row(card)

    with pytest.raises(NothingToUndo):
        card_undo(card=card, now=NOW)

    assert card_row(card) == rescheduled


def test_it_refuses_to_undo_someone_elses_grade(make_card, user, other_user):
    card = make_card()
    card_grade(card=card, grade=4, source="simulated", now=NOW)

    with pytest.raises(NothingToUndo):
        card_undo(card=card, user=user)
    card_undo(card=card)  # the system itself may

    assert Card.objects.get(pk=card.pk).total_reviews == 0


def test_it_refuses_a_grade_based_on_the_state_before_an_undo(make_card):
    card = make_card()
    seen = Card.objects.get(pk=card.pk)
    card_grade(card=card, grade=4, source="human", now=NOW)
    card_undo(card=card, now=NOW)

    with pytest.raises(GradeConflict):
        card_grade(card=seen, grade=4, source="human", now=NOW)


def test_it_keeps_utility_changed_by_someone_else_on_undo(make_card):
    card = make_card()
    card_grade(card=card, grade=4, source="human", now=NOW)
    Memory.objects.filter(pk=card.memory_id).update(utility=0.9)

    card_undo(card=card, now=NOW)

    assert Memory.objects.get(pk=card.memory_id).utility == 0.9
