"""Two graders, one card: real threads, real transactions, PostgreSQL only."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connections

from config.db import is_postgres
from memories import services as memory_services
from memories.models import Memory
from review.models import Card, ReviewLog
from review.services import GradeConflict, card_ensure, card_grade, cards_grade_implicit
from tests.review.conftest import NOW, requires_postgresql

pytestmark = [requires_postgresql, pytest.mark.django_db(transaction=True)]


def make_due_card(scheduler: str) -> Card:
    owner = get_user_model().objects.create_user(f"racer-{scheduler}")
    namespace = memory_services.namespace_create(owner=owner, name="Race", scheduler=scheduler)
    memory = memory_services.memory_create(namespace=namespace, content="Contended fact")
    card = card_ensure(memory=memory)
    Card.objects.filter(pk=card.pk).update(
        next_review=NOW - timedelta(days=1), repetitions=2, interval_days=6
    )
    return Card.objects.get(pk=card.pk)


def run_together(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run the jobs in threads released at the same instant; results or raised errors."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)

    def worker(index: int, job: Callable[[], Any]) -> None:
        try:
            barrier.wait()
            results[index] = job()
        except Exception as error:
            results[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def assert_card_matches_its_log(card_id: int) -> None:
    card = Card.objects.get(pk=card_id)
    logs = list(ReviewLog.objects.filter(card_id=card_id).order_by("id"))
    assert card.total_reviews == len(logs)
    assert card.version == len(logs)
    # Each grade started from the state the previous one left: no grade on stale state.
    for previous, log in zip([None, *logs], logs, strict=False):
        expected_before = 0 if previous is None else previous.state_after["version"]
        assert log.state_before["version"] == expected_before
        assert log.state_after["version"] == expected_before + 1
    last = logs[-1].state_after
    assert card.next_review.isoformat() == last["next_review"]
    assert (card.repetitions, card.interval_days) == (last["repetitions"], last["interval_days"])
    assert card.correct_reviews == sum(1 for log in logs if log.grade >= 3)


@pytest.mark.parametrize("scheduler", ["sm2", "fsrs"])
def test_it_applies_exactly_one_of_two_simultaneous_grades(scheduler):
    assert is_postgres()
    card = make_due_card(scheduler)
    for round_ in range(5):
        seen = Card.objects.get(pk=card.pk)  # both graders read the same version
        person = Card.objects.get(pk=card.pk)
        worker = Card.objects.get(pk=card.pk)
        when = NOW + timedelta(days=30 * round_)

        results = run_together(
            [
                lambda p=person, w=when: card_grade(card=p, grade=5, source="human", now=w),
                lambda c=worker, w=when: card_grade(card=c, grade=1, source="simulated", now=w),
            ]
        )

        applied = [r for r in results if isinstance(r, ReviewLog)]
        conflicts = [r for r in results if isinstance(r, GradeConflict)]
        assert len(applied) == 1, results
        assert len(conflicts) == 1, results
        assert "reload" in conflicts[0].message
        stored = Card.objects.get(pk=card.pk)
        assert stored.version == seen.version + 1
        assert ReviewLog.objects.filter(card=card).count() == round_ + 1
        assert_card_matches_its_log(card.pk)


def test_it_serialises_many_graders_that_reload_on_conflict():
    card = make_due_card("sm2")
    grades_each, graders = 4, 4
    conflicts = []

    def grader(grade: int) -> int:
        applied = 0
        while applied < grades_each:
            fresh = Card.objects.get(pk=card.pk)
            try:
                card_grade(card=fresh, grade=grade, source="human", now=NOW)
                applied += 1
            except GradeConflict:
                conflicts.append(grade)
        return applied

    results = run_together([lambda g=g: grader(g) for g in (1, 3, 4, 5)][:graders])

    assert results == [grades_each] * graders
    assert ReviewLog.objects.filter(card=card).count() == grades_each * graders
    assert_card_matches_its_log(card.pk)
    memory = Memory.objects.get(pk=card.memory_id)
    assert 0.0 <= memory.utility <= 1.0


def test_implicit_grades_of_one_card_from_simultaneous_recalls_apply_once():
    """Two tracked recalls of the same due memory at once: the card is graded once (the
    second recall either skips the locked row or finds it no longer due), and a person's
    grade racing them still lands on the state the implicit grade left."""
    card = make_due_card("sm2")
    person = Card.objects.get(pk=card.pk)

    results = run_together(
        [
            lambda: cards_grade_implicit(memory_ids=[card.memory_id], now=NOW),
            lambda: cards_grade_implicit(memory_ids=[card.memory_id], now=NOW),
            lambda: card_grade(card=person, grade=5, source="human", now=NOW),
        ]
    )

    implicit = [log for result in results[:2] for log in result]
    assert len(implicit) <= 1, results
    logs = ReviewLog.objects.filter(card=card)
    assert logs.filter(source="implicit").count() == len(implicit)
    # The person's grade either won (then the card was no longer due for the recalls) or
    # conflicted with the implicit one and changed nothing.
    human = results[2]
    assert isinstance(human, ReviewLog | GradeConflict), results
    assert logs.count() == len(implicit) + isinstance(human, ReviewLog)
    assert logs.count() >= 1
    assert_card_matches_its_log(card.pk)


def test_two_simultaneous_session_starts_open_one_session():
    """The API and the dashboard start through study_session_begin: two presses at once
    take turns on its lock, and the second picks up the session the first opened."""
    from zoneinfo import ZoneInfo

    from review.models import StudySession
    from review.services import study_session_begin

    card = make_due_card("fsrs")
    namespace, owner = card.memory.namespace, card.memory.namespace.owner
    for _ in range(3):
        StudySession.objects.filter(namespace=namespace).delete()
        results = run_together(
            [
                lambda: study_session_begin(namespace=namespace, user=owner, tz=ZoneInfo("UTC"))
                for _ in range(4)
            ]
        )
        assert not [r for r in results if isinstance(r, Exception)], results
        assert len({session.pk for session, _ in results}) == 1
        assert sorted(resumed for _, resumed in results) == [False, True, True, True]
        assert StudySession.objects.filter(namespace=namespace).count() == 1
