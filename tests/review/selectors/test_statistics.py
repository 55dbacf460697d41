"""Statistics on a fixed history, checked against values computed by hand.

NOW is 11:00 on Monday 10 March 2025 in New York (EDT, UTC-4, since 9 March; EST before).

Cards (deck, next review, repetitions):
  c1 geo   8 Mar 15:00 UTC (overdue)            reps 3   due today, learned
  c2 geo  11 Mar 03:30 UTC = 10 Mar 23:30 EDT    reps 1   due today (though 11 Mar in UTC)
  c3 geo  11 Mar 04:30 UTC = 11 Mar 00:30 EDT    reps 2   due tomorrow, learned
  m1 math 15 Mar 15:00 UTC                       reps 4   due in 5 days, learned
  m2 math new                                   reps 0   new
  x  geo  overdue, its memory forgotten: no card count includes it

Reviews (card, grade, UTC time = New York date):
  1 c1 4  10 Mar 14:00 = 10 Mar
  2 c2 2  10 Mar 03:30 = 9 Mar (23:30 EDT)
  3 m1 5   8 Mar 16:00 = 8 Mar
  4 c3 1   6 Mar 12:00 = 6 Mar
  5 c1 3   1 Jan 12:00 = 1 Jan (outside the 30 days)
  6 c2 0  10 Mar 13:00, undone: counts nowhere
  7 x  5  10 Mar 12:00 = 10 Mar (the review happened; it counts)

Namespace: 6 reviews, 4 passed (1, 3, 5, 7) -> 4/6; last 30 days (from 9 Feb): 5 reviews,
3 passed (1, 3, 7) -> 3/5; review days 10, 9, 8, 6 Mar -> streak 3; per day 10 Mar: 2,
9 Mar: 1, 8 Mar: 1, 6 Mar: 1. Forecast: today 2, 11 Mar 1, 15 Mar 1.
geo (x is a geo card): 5 reviews (1, 2, 4, 5, 7), 3 passed -> 3/5; last 30 days 4
(1, 2, 4, 7), 2 passed -> 2/4; days 10, 9, 6 Mar -> streak 2.
math: 1 review, passed -> 1.0; last on 8 Mar -> streak 0.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from memories import services as memory_services
from review.models import ReviewLog
from review.selectors import deck_statistics, review_statistics
from tests.review.conftest import NOW, TZ


def at(month: int, day: int, hour: int, minute: int = 0, year: int = 2025) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def history(make_card, study_ns):
    c1 = make_card("c1", topic="geo", next_review=at(3, 8, 15), repetitions=3)
    c2 = make_card("c2", topic="geo", next_review=at(3, 11, 3, 30), repetitions=1)
    c3 = make_card("c3", topic="geo", next_review=at(3, 11, 4, 30), repetitions=2)
    m1 = make_card("m1", topic="math", next_review=at(3, 15, 15), repetitions=4)
    m2 = make_card("m2", topic="math")
    x = make_card("x", topic="geo", next_review=at(3, 1, 12), repetitions=5)
    memory_services.memory_forget(memory=x.memory, reason="wrong")
    for card, grade, when, undone in [
        (c1, 4, at(3, 10, 14), None),
        (c2, 2, at(3, 10, 3, 30), None),
        (m1, 5, at(3, 8, 16), None),
        (c3, 1, at(3, 6, 12), None),
        (c1, 3, at(1, 1, 12), None),
        (c2, 0, at(3, 10, 13), at(3, 10, 13, 1)),
        (x, 5, at(3, 10, 12), None),
    ]:
        ReviewLog.objects.create(
            card=card,
            namespace=study_ns,
            grade=grade,
            source="human",
            reviewed_at=when,
            undone_at=undone,
        )
    return {"c1": c1, "c2": c2, "c3": c3, "m1": m1, "m2": m2, "x": x}


def per_day(stats) -> dict[date, int]:
    return {day: n for day, n in stats.reviews_per_day if n}


def test_it_counts_cards_of_the_namespace(history, study_ns):
    stats = review_statistics(namespace=study_ns, tz=TZ, now=NOW)

    cards = stats.cards
    assert (cards.total, cards.due_today, cards.learned, cards.new) == (5, 2, 3, 1)
    assert cards.new_available_today == 1


def test_it_computes_retention_overall_and_over_30_days(history, study_ns):
    stats = review_statistics(namespace=study_ns, tz=TZ, now=NOW)

    assert stats.reviews == 6
    assert stats.retention == pytest.approx(4 / 6)
    assert stats.reviews_last_30_days == 5
    assert stats.retention_last_30_days == pytest.approx(3 / 5)


def test_it_counts_the_streak_and_reviews_per_day_in_the_users_time_zone(history, study_ns):
    stats = review_statistics(namespace=study_ns, tz=TZ, now=NOW)

    assert stats.streak == 3
    assert len(stats.reviews_per_day) == 30
    assert stats.reviews_per_day[0][0] == date(2025, 2, 9)
    assert stats.reviews_per_day[-1][0] == date(2025, 3, 10)
    assert per_day(stats) == {
        date(2025, 3, 10): 2,
        date(2025, 3, 9): 1,
        date(2025, 3, 8): 1,
        date(2025, 3, 6): 1,
    }


def test_it_reads_days_in_utc_differently(history, study_ns):
    stats = review_statistics(namespace=study_ns, tz=ZoneInfo("UTC"), now=NOW)

    # Review 2 falls on 10 March in UTC, so 9 March is empty and the streak is 1.
    assert stats.streak == 1
    assert per_day(stats)[date(2025, 3, 10)] == 3
    # c2 (03:30 on 11 March UTC) is no longer due today.
    assert stats.cards.due_today == 1


def test_it_keeps_a_streak_alive_until_a_whole_day_passes(history, study_ns):
    tomorrow = review_statistics(namespace=study_ns, tz=TZ, now=NOW + timedelta(days=1))
    day_after = review_statistics(namespace=study_ns, tz=TZ, now=NOW + timedelta(days=2))

    assert tomorrow.streak == 3
    assert day_after.streak == 0


def test_it_forecasts_due_cards_for_14_days(history, study_ns):
    stats = review_statistics(namespace=study_ns, tz=TZ, now=NOW)

    assert len(stats.forecast) == 14
    assert stats.forecast[0] == (date(2025, 3, 10), 2)
    assert stats.forecast[-1][0] == date(2025, 3, 23)
    assert {day: n for day, n in stats.forecast if n} == {
        date(2025, 3, 10): 2,
        date(2025, 3, 11): 1,
        date(2025, 3, 15): 1,
    }


def test_it_computes_the_same_statistics_for_one_deck(history, study_ns):
    geo = review_statistics(namespace=study_ns, tz=TZ, now=NOW, deck="geo")
    math = review_statistics(namespace=study_ns, tz=TZ, now=NOW, deck="math")

    assert (geo.cards.total, geo.cards.due_today, geo.cards.learned, geo.cards.new) == (
        3,
        2,
        2,
        0,
    )
    # Review 7 belongs to x, whose memory is forgotten: still a geo review.
    assert geo.reviews == 5
    assert geo.retention == pytest.approx(3 / 5)
    assert geo.reviews_last_30_days == 4
    assert geo.retention_last_30_days == pytest.approx(2 / 4)
    assert geo.streak == 2
    assert (math.cards.total, math.cards.learned, math.cards.new) == (2, 1, 1)
    assert (math.reviews, math.retention, math.streak) == (1, 1.0, 0)
    assert {day: n for day, n in math.forecast if n} == {date(2025, 3, 15): 1}


def test_it_lists_every_deck_with_its_counts(history, study_ns):
    decks = deck_statistics(namespace=study_ns, tz=TZ, now=NOW)

    assert [(d.deck, d.total, d.due_today, d.learned, d.new) for d in decks] == [
        ("geo", 3, 2, 2, 0),
        ("math", 2, 0, 1, 1),
    ]


def test_it_reports_no_retention_without_reviews(study_ns, make_card):
    make_card("alone")

    stats = review_statistics(namespace=study_ns, tz=TZ, now=NOW)

    assert (stats.reviews, stats.retention, stats.retention_last_30_days) == (0, None, None)
    assert stats.streak == 0
    assert all(n == 0 for _, n in stats.reviews_per_day)


def test_it_aggregates_in_a_fixed_number_of_queries(
    history, study_ns, django_assert_max_num_queries
):
    with django_assert_max_num_queries(8):
        review_statistics(namespace=study_ns, tz=TZ, now=NOW)
