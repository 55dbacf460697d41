"""Statistics are the person's: the simulated worker's and agents' implicit grades are
counted apart, as agent reinforcement (issue 17, part 7).

NOW is 11:00 on Monday 10 March 2025 in New York; the local day starts at 04:00 UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from review.models import ReviewLog
from review.selectors import AgentReinforcement, counted_logs, review_statistics
from review.services import card_grade
from tests.review.conftest import NOW, TZ

pytestmark = pytest.mark.django_db


def at(day: int, hour: int) -> datetime:
    return datetime(2025, 3, day, hour, tzinfo=UTC)


def log(card, source: str, grade: int, when: datetime) -> ReviewLog:
    return ReviewLog.objects.create(
        card=card, namespace=card.namespace, grade=grade, source=source, reviewed_at=when
    )


def test_agents_grades_alone_leave_the_persons_statistics_empty(make_card, study_ns):
    cards = [make_card(f"fact {i}", next_review=NOW - timedelta(days=1)) for i in range(3)]
    # The worker's grades of today (as in the issue: "13 reviews today, 1-day streak").
    for card in cards:
        card_grade(card=card, grade=4, source=ReviewLog.Source.SIMULATED, now=NOW)
    card_grade(card=cards[0], grade=2, source=ReviewLog.Source.SIMULATED, now=NOW)
    log(cards[1], ReviewLog.Source.IMPLICIT, 4, NOW - timedelta(days=2))

    stats = review_statistics(namespace=study_ns, tz=TZ, now=NOW)

    assert (stats.reviews, stats.retention, stats.streak) == (0, None, 0)
    assert (stats.reviews_last_30_days, stats.retention_last_30_days) == (0, None)
    assert stats.reviews_today == 0
    assert all(n == 0 for _, n in stats.reviews_per_day)
    assert stats.agent_reinforcement == AgentReinforcement(simulated=4, implicit=1, today=4)
    assert stats.agent_reinforcement.total == 5


def test_only_the_persons_grades_count_when_sources_mix(make_card, study_ns):
    a = make_card("a", topic="geo")
    b = make_card("b", topic="math")
    log(a, ReviewLog.Source.HUMAN, 4, at(10, 14))  # today
    log(b, ReviewLog.Source.HUMAN, 1, at(9, 15))  # yesterday
    log(a, ReviewLog.Source.SIMULATED, 1, at(10, 13))
    log(a, ReviewLog.Source.SIMULATED, 5, at(8, 13))  # would lengthen the streak
    log(b, ReviewLog.Source.IMPLICIT, 0, at(10, 12))
    undone = log(b, ReviewLog.Source.IMPLICIT, 4, at(10, 12))
    ReviewLog.objects.filter(pk=undone.pk).update(undone_at=at(10, 12) + timedelta(minutes=1))

    stats = review_statistics(namespace=study_ns, tz=TZ, now=NOW)
    geo = review_statistics(namespace=study_ns, tz=TZ, now=NOW, deck="geo")

    assert (stats.reviews, stats.retention, stats.streak) == (2, 0.5, 2)
    assert stats.retention_last_30_days == 0.5
    assert stats.reviews_today == 1
    assert {day.day: n for day, n in stats.reviews_per_day if n} == {9: 1, 10: 1}
    assert stats.agent_reinforcement == AgentReinforcement(simulated=2, implicit=1, today=2)
    assert (geo.reviews, geo.retention, geo.streak) == (1, 1.0, 1)
    assert geo.agent_reinforcement == AgentReinforcement(simulated=2, implicit=0, today=1)


def test_counted_logs_are_the_persons_unless_asked_for_every_source(make_card, study_ns):
    card = make_card("a")
    mine = log(card, ReviewLog.Source.HUMAN, 4, at(10, 14))
    worker = log(card, ReviewLog.Source.SIMULATED, 4, at(10, 13))

    assert list(counted_logs(namespace=study_ns)) == [mine]
    assert set(counted_logs(namespace=study_ns, person_only=False)) == {mine, worker}


def test_the_sources_add_no_query(make_card, study_ns, django_assert_max_num_queries):
    card = make_card("a", next_review=NOW)
    for i in range(20):
        source = list(ReviewLog.Source)[i % 3]
        log(card, source, i % 6, NOW - timedelta(days=i))

    with django_assert_max_num_queries(7):
        stats = review_statistics(namespace=study_ns, tz=TZ, now=NOW)

    assert stats.reviews + stats.agent_reinforcement.total == 20
