from __future__ import annotations

from datetime import timedelta

import pytest

from review.api import card_payload
from review.models import Card, ReviewLog, StudySession, StudySessionItem
from review.selectors import study_session_active, study_session_progress
from review.services import (
    AlreadyAnswered,
    CardNotInSession,
    InvalidRequest,
    SessionFinished,
    card_undo,
    cram_start,
    study_session_finish,
    study_session_grade,
    study_session_start,
)
from tests.review.conftest import NOW, TZ, card_row


def order(session: StudySession) -> list[int]:
    """Card ids still to show, in show order."""
    return list(
        session.items.filter(done=False)
        .order_by("position", "id")
        .values_list("card_id", flat=True)
    )


def test_it_starts_a_session_with_due_cards_then_new_ones(three_due, study_ns, user):
    a, b, c, new = three_due

    session = study_session_start(namespace=study_ns, tz=TZ, user=user, now=NOW)

    session.refresh_from_db()
    assert session.mode == "study"
    assert session.status == "active"
    assert session.user == user
    assert session.started_at == NOW
    assert order(session) == [a.pk, b.pk, c.pk, new.pk]
    items = {item.card_id: item for item in session.items.all()}
    assert items[new.pk].is_new
    assert items[c.pk].deck == "math"
    assert not ReviewLog.objects.exists()


def test_it_studies_one_deck(three_due, study_ns):
    _, _, c, new = three_due

    session = study_session_start(namespace=study_ns, tz=TZ, deck="math", now=NOW)

    assert session.deck == "math"
    assert order(session) == [c.pk, new.pk]


def test_it_finishes_a_session_with_nothing_to_study_at_once(study_ns):
    session = study_session_start(namespace=study_ns, tz=TZ, now=NOW)

    session.refresh_from_db()
    assert session.status == "finished"
    assert session.items.count() == 0


# Seed 004's session rule as SM-2 schedules it; FSRS's learning steps are tested below.
@pytest.mark.parametrize("scheduler_name", ["sm2"])
def test_it_brings_back_cards_graded_below_4_until_they_score_4(three_due, study_ns, user):
    a, b, c, new = three_due
    session = study_session_start(namespace=study_ns, tz=TZ, user=user, now=NOW)

    study_session_grade(session=session, card=a, grade=5, user=user, now=NOW)
    study_session_grade(session=session, card=b, grade=3, user=user, now=NOW)

    assert order(session) == [c.pk, new.pk, b.pk]
    study_session_grade(session=session, card=c, grade=1, user=user, now=NOW)
    assert order(session) == [new.pk, b.pk, c.pk]
    study_session_grade(session=session, card=new, grade=4, user=user, now=NOW)
    study_session_grade(session=session, card=b, grade=2, user=user, now=NOW)
    study_session_grade(session=session, card=c, grade=4, user=user, now=NOW)
    assert order(session) == [b.pk]
    assert session.status == "active"
    study_session_grade(session=session, card=b, grade=4, user=user, now=NOW)

    session.refresh_from_db()
    assert session.status == "finished"
    assert session.finished_at == NOW
    item_b = session.items.get(card=b)
    assert (item_b.first_grade, item_b.last_grade, item_b.attempts) == (3, 4, 3)
    assert item_b.done


# Seed 004's session rule as SM-2 schedules it; FSRS's learning steps are tested below.
@pytest.mark.parametrize("scheduler_name", ["sm2"])
def test_it_lets_only_the_first_grade_in_a_session_change_the_schedule(three_due, study_ns):
    a, *_ = three_due
    session = study_session_start(namespace=study_ns, tz=TZ, now=NOW)

    study_session_grade(session=session, card=a, grade=1, now=NOW)
    after_first = card_row(a)
    a.refresh_from_db()
    study_session_grade(session=session, card=a, grade=2, now=NOW + timedelta(minutes=1))
    study_session_grade(session=session, card=a, grade=5, now=NOW + timedelta(minutes=2))

    assert card_row(a) == after_first
    assert after_first["last_quality"] == 1
    assert after_first["repetitions"] == 0
    log = ReviewLog.objects.get(card=a)
    assert (log.grade, log.session_id) == (1, session.pk)
    item = session.items.get(card=a)
    assert item.review_log_id == log.pk
    assert item.done


# Seed 004's session rule as SM-2 schedules it; FSRS's learning steps are tested below.
@pytest.mark.parametrize("scheduler_name", ["sm2"])
def test_it_records_progress_and_resumes(three_due, study_ns, user):
    a, b, c, new = three_due
    session = study_session_start(namespace=study_ns, tz=TZ, user=user, now=NOW)
    study_session_grade(session=session, card=a, grade=4, user=user, now=NOW)
    study_session_grade(session=session, card=b, grade=2, user=user, now=NOW)

    # Later, from another request: find the session and carry on where it stopped.
    resumed = study_session_active(namespace=study_ns, user=user, ceiling=None)
    progress = study_session_progress(session=resumed, ceiling=None)

    assert resumed.pk == session.pk
    assert (progress.total, progress.done, progress.graded, progress.attempts) == (4, 1, 2, 2)
    assert progress.remaining == 3
    assert progress.next_item.card_id == c.pk
    assert progress.next_item.card.memory.content == "c"
    study_session_grade(session=resumed, card=c, grade=5, user=user, now=NOW)
    assert study_session_progress(session=resumed, ceiling=None).next_item.card_id == new.pk


def test_it_does_not_resume_finished_or_cram_sessions(three_due, study_ns, user):
    session = study_session_start(namespace=study_ns, tz=TZ, user=user, now=NOW)
    cram_start(namespace=study_ns, user=user, now=NOW)
    study_session_finish(session=session, now=NOW)

    assert study_session_active(namespace=study_ns, user=user, ceiling=None) is None
    assert study_session_progress(session=session, ceiling=None).next_item is None


def test_it_refuses_cards_outside_the_session_done_cards_and_finished_sessions(
    three_due, study_ns, make_card
):
    a, b, _c, _new = three_due
    stranger = make_card("stranger", next_review=NOW + timedelta(days=3))
    session = study_session_start(namespace=study_ns, tz=TZ, now=NOW)
    study_session_grade(session=session, card=a, grade=5, now=NOW)

    with pytest.raises(CardNotInSession) as not_in:
        study_session_grade(session=session, card=stranger, grade=4, now=NOW)
    with pytest.raises(AlreadyAnswered):
        study_session_grade(session=session, card=a, grade=4, now=NOW)
    study_session_finish(session=session, now=NOW)
    with pytest.raises(SessionFinished):
        study_session_grade(session=session, card=b, grade=4, now=NOW)

    assert not_in.value.field == "card"
    assert ReviewLog.objects.count() == 1
    assert Card.objects.get(pk=stranger.pk).version == stranger.version
    session.refresh_from_db()
    assert session.status == "finished"


def test_it_refuses_to_grade_a_cram_session(three_due, study_ns):
    a, *_ = three_due
    cram = cram_start(namespace=study_ns, now=NOW)

    with pytest.raises(InvalidRequest):
        study_session_grade(session=cram, card=a, grade=4, now=NOW)


def test_it_puts_a_card_back_in_front_when_its_grade_is_undone(three_due, study_ns, user):
    a, b, c, new = three_due
    session = study_session_start(namespace=study_ns, tz=TZ, user=user, now=NOW)
    before = card_row(c)
    study_session_grade(session=session, card=a, grade=5, user=user, now=NOW)
    study_session_grade(session=session, card=b, grade=5, user=user, now=NOW)
    study_session_grade(session=session, card=c, grade=2, user=user, now=NOW)
    c.refresh_from_db()

    card_undo(card=c, user=user, now=NOW)

    item = session.items.get(card=c)
    assert (item.first_grade, item.last_grade, item.attempts, item.review_log_id) == (
        None,
        None,
        0,
        None,
    )
    assert order(session) == [c.pk, new.pk]
    assert card_row(c) == {**before, "version": before["version"] + 2}
    # Graded again, the new first grade is the one that schedules.
    study_session_grade(session=session, card=c, grade=4, user=user, now=NOW)
    assert ReviewLog.objects.filter(card=c, undone_at__isnull=True).get().grade == 4


def test_it_reopens_a_finished_session_when_its_last_grade_is_undone(make_card, study_ns):
    card = make_card("only", next_review=NOW - timedelta(days=1))
    session = study_session_start(namespace=study_ns, tz=TZ, now=NOW)
    study_session_grade(session=session, card=card, grade=5, now=NOW)
    assert session.status == "finished"

    card_undo(card=card, now=NOW)

    session.refresh_from_db()
    assert session.status == "active"
    assert session.finished_at is None
    assert order(session) == [card.pk]


# Seed 004's session rule as SM-2 schedules it; FSRS's learning steps are tested below.
@pytest.mark.parametrize("scheduler_name", ["sm2"])
def test_it_keeps_grades_given_before_a_session_is_finished_early(three_due, study_ns):
    a, _b, *_ = three_due
    session = study_session_start(namespace=study_ns, tz=TZ, now=NOW)
    study_session_grade(session=session, card=a, grade=4, now=NOW)

    study_session_finish(session=session, now=NOW + timedelta(minutes=5))
    study_session_finish(session=session, now=NOW + timedelta(minutes=9))

    session.refresh_from_db()
    assert session.finished_at == NOW + timedelta(minutes=5)
    assert Card.objects.get(pk=a.pk).total_reviews == 1
    assert StudySessionItem.objects.filter(session=session, done=True).count() == 1


@pytest.mark.parametrize("scheduler_name", ["fsrs"])
def test_a_card_in_a_learning_step_comes_back_in_the_session_when_due(make_card, study_ns):
    """FSRS's Good on a new card means 10 minutes: the card waits in the session, comes back
    when due, and that grade counts with the interval its button showed (issue 17, item 3)."""
    first = make_card("first")
    second = make_card("second")
    session = study_session_start(namespace=study_ns, tz=TZ, now=NOW)
    progress = study_session_progress(session=session, ceiling=None, now=NOW)
    assert (progress.new, progress.learning, progress.review) == (2, 0, 0)

    study_session_grade(session=session, card=first, grade=4, now=NOW)
    item = session.items.get(card=first)
    assert not item.done and item.due_at == first.next_review == NOW + timedelta(minutes=10)
    progress = study_session_progress(session=session, ceiling=None, now=NOW)
    assert progress.next_item.card_id == second.pk
    assert (progress.new, progress.learning, progress.review) == (1, 1, 0)
    assert progress.next_kind == "new"

    study_session_grade(session=session, card=second, grade=4, now=NOW)
    waiting = study_session_progress(session=session, ceiling=None, now=NOW)
    assert waiting.next_item is None and not waiting.finished
    assert waiting.waiting_until == NOW + timedelta(minutes=10)
    session.refresh_from_db()
    assert session.status == "active"  # the session does not end while cards wait

    later = NOW + timedelta(minutes=11)
    back = study_session_progress(session=session, ceiling=None, now=later)
    assert back.next_item.card_id == first.pk and back.next_kind == "learning"
    first.refresh_from_db()
    shown = card_payload(first, study_ns, now=later)["preview"]["good"]
    study_session_grade(session=session, card=first, grade=4, now=later)
    first.refresh_from_db()
    assert (first.next_review - later) / timedelta(days=1) == pytest.approx(shown, abs=1e-3)
    assert shown >= 1  # graduated: done in this session
    assert session.items.get(card=first).done
    assert ReviewLog.objects.filter(card=first).count() == 2  # both grades counted


@pytest.mark.parametrize("scheduler_name", ["fsrs"])
def test_undoing_a_learning_steps_second_grade_makes_the_card_due_again(make_card, study_ns):
    card = make_card("only")
    session = study_session_start(namespace=study_ns, tz=TZ, now=NOW)
    study_session_grade(session=session, card=card, grade=4, now=NOW)
    later = NOW + timedelta(minutes=10)
    study_session_grade(session=session, card=card, grade=4, now=later)
    session.refresh_from_db()
    assert session.status == "finished"

    card_undo(card=card, now=later)

    session.refresh_from_db()
    progress = study_session_progress(session=session, ceiling=None, now=later)
    assert session.status == "active" and progress.next_item.card_id == card.pk
    item = session.items.get(card=card)
    assert (item.first_grade, item.attempts, item.done) == (4, 1, False)
    card.refresh_from_db()
    study_session_grade(session=session, card=card, grade=4, now=later)
    assert ReviewLog.objects.filter(card=card, undone_at__isnull=True).count() == 2


def test_answer_time_is_kept_on_the_log_and_refused_when_it_is_not_a_duration(three_due, study_ns):
    a, b, *_ = three_due
    session = study_session_start(namespace=study_ns, tz=TZ, now=NOW)
    study_session_grade(session=session, card=a, grade=5, now=NOW, duration_ms=4200)
    study_session_grade(session=session, card=b, grade=5, now=NOW, duration_ms=10**12)
    assert list(ReviewLog.objects.order_by("id").values_list("duration_ms", flat=True)) == [
        4200,
        86_400_000,  # a card left open overnight counts as a day at most
    ]
    with pytest.raises(InvalidRequest) as refused:
        study_session_grade(session=session, card=three_due[2], grade=5, now=NOW, duration_ms=-1)
    assert refused.value.field == "duration_ms"
