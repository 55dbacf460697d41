"""The simulated recall worker (seed 000) on agent namespaces."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memories import services as memory_services
from memories.models import BackgroundRun, Memory, MemoryEvent, Namespace
from review import services as review_services
from review.models import Card, ReviewLog
from review.simulation import adjust_utility, simulate_quality
from review.tasks import simulated_recall
from review.worker import simulated_draw, simulated_recall_run

# A Monday noon; the worker's day is the UTC day.
NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(user) -> Namespace:
    return memory_services.namespace_create(
        owner=user, name="Agent 7", mode=Namespace.Mode.AGENT_MEMORY, new_cards_per_day=0
    )


@pytest.fixture
def due_card(agent):
    """due_card(days_overdue, **memory columns): a memory of the agent with a due card."""

    def make(days_overdue: float = 1.0, topic: str = "ops", **columns) -> Card:
        memory = memory_services.memory_create(
            namespace=agent, content=f"Fact due {days_overdue} days ago", topic=topic
        )
        if columns:
            Memory.objects.filter(pk=memory.pk).update(**columns)
        card = review_services.card_ensure(memory=memory)
        Card.objects.filter(pk=card.pk).update(
            next_review=NOW - timedelta(days=days_overdue), repetitions=2, interval_days=6
        )
        card.refresh_from_db()
        return card

    return make


def test_it_gives_agent_memories_cards_and_introduces_new_ones_within_the_daily_limit(agent):
    Namespace.objects.filter(pk=agent.pk).update(new_cards_per_day=2)
    for n in range(5):
        memory_services.memory_create(namespace=agent, content=f"Fact {n}", topic="ops")

    report = simulated_recall_run(now=NOW)

    assert report.cards_created == 5
    assert report.reviewed == 2
    assert Card.objects.filter(namespace=agent).count() == 5
    assert Card.objects.filter(namespace=agent, first_reviewed_at=NOW).count() == 2
    assert set(ReviewLog.objects.values_list("source", flat=True)) == {"simulated"}


def test_it_takes_the_most_urgent_due_cards_first_and_at_most_a_batch(due_card):
    cards = {days: due_card(days) for days in (1, 5, 20, 40)}

    report = simulated_recall_run(now=NOW, batch=2)

    assert report.picked == 2 and report.reviewed == 2
    graded = set(ReviewLog.objects.values_list("card_id", flat=True))
    assert graded == {cards[40].pk, cards[20].pk}


def test_the_grade_is_the_simulated_quality_and_goes_through_card_grade(due_card):
    card = due_card(3, confidence=0.9, utility=0.7, last_recalled_at=NOW - timedelta(days=2))
    draw = simulated_draw(card.pk, card.version)
    expected = simulate_quality(
        confidence=0.9, utility=0.7, days_since_last_recall=2.0, rng_value=draw
    )

    simulated_recall_run(now=NOW)

    log = ReviewLog.objects.get(card=card)
    assert (log.grade, log.source, log.reviewed_at) == (expected, "simulated", NOW)
    memory = Memory.objects.get(pk=card.memory_id)
    assert memory.utility == pytest.approx(adjust_utility(0.7, expected))
    assert log.state_before["utility"] == 0.7
    card.refresh_from_db()
    assert card.version == 1 and card.last_quality == expected and card.next_review > NOW
    event = MemoryEvent.objects.get(memory_ref=memory.pk, kind=MemoryEvent.Kind.GRADED)
    assert event.source == "simulated"


def test_a_second_run_at_the_same_moment_reviews_nothing(due_card):
    for days in (1, 2, 3):
        due_card(days)
    simulated_recall_run(now=NOW)
    logs = ReviewLog.objects.count()

    again = simulated_recall_run(now=NOW)

    assert again.reviewed == 0 and again.cards_created == 0
    assert ReviewLog.objects.count() == logs == 3


def test_cards_due_later_today_wait(due_card):
    later = due_card(-0.1)  # due in 2.4 hours, still "today" for the daily queue

    report = simulated_recall_run(now=NOW)

    assert report.reviewed == 0
    assert not ReviewLog.objects.filter(card=later).exists()


def test_personal_namespaces_are_left_to_people(user):
    personal = memory_services.namespace_create(owner=user, name="Mine")
    memory = memory_services.memory_create(namespace=personal, content="Mine to review")
    card = review_services.card_ensure(memory=memory)
    Card.objects.filter(pk=card.pk).update(next_review=NOW - timedelta(days=3))

    report = simulated_recall_run(now=NOW)
    only_it = simulated_recall_run(now=NOW, namespace=personal)

    assert report.namespaces == only_it.namespaces == 0
    assert not ReviewLog.objects.exists()


def test_forgotten_memories_are_not_reviewed(due_card):
    card = due_card(4, status=Memory.Status.FORGOTTEN)

    simulated_recall_run(now=NOW)

    assert not ReviewLog.objects.filter(card=card).exists()


def test_a_card_graded_meanwhile_is_skipped_not_regraded(due_card, monkeypatch):
    contested, other = due_card(10), due_card(2)
    real_grade = review_services.card_grade

    def person_first(*, card, **kwargs):
        if card.pk == contested.pk:
            # A person grades it between the worker's read and its write.
            real_grade(card=Card.objects.get(pk=card.pk), grade=4, source="human", now=NOW)
        return real_grade(card=card, **kwargs)

    monkeypatch.setattr("review.worker.card_grade", person_first)

    report = simulated_recall_run(now=NOW)

    assert report.conflicts == 1 and report.reviewed == 1
    assert list(ReviewLog.objects.filter(card=contested).values_list("source", flat=True)) == [
        "human"
    ]
    assert ReviewLog.objects.get(card=other).source == "simulated"


def test_the_draw_is_fixed_by_card_and_version():
    assert simulated_draw(7, 3) == simulated_draw(7, 3)
    assert simulated_draw(7, 3) != simulated_draw(7, 4)
    assert 0.0 <= simulated_draw(1, 0) < 1.0


def test_the_task_records_its_run(due_card, settings):
    due_card(3)
    settings.SIMULATED_RECALL_BATCH = 10

    counts = simulated_recall()

    run = BackgroundRun.objects.get(kind=BackgroundRun.Kind.SIMULATED_RECALL)
    assert run.status == BackgroundRun.Status.OK
    assert run.counts["reviewed"] == counts["reviewed"] == 1
    assert run.finished_at is not None
