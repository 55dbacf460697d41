"""Answer times and the year of reviews in the statistics (issue 17, item 4): the average
answer time per card and the time spent per day count only the person's grades that were
not undone, leave untimed grades out, and read days in the person's time zone; the
heatmap's days come from the same grouped query.

NOW is 11:00 on Monday 10 March 2025 in New York (EDT); the local day starts at 04:00 UTC.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from review.models import ReviewLog
from review.selectors import review_statistics
from tests.review.conftest import NOW, TZ

pytestmark = pytest.mark.django_db

TODAY = date(2025, 3, 10)


def at(month: int, day: int, hour: int, minute: int = 0, year: int = 2025) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def log(card, when: datetime, ms: int | None, **fields) -> ReviewLog:
    return ReviewLog.objects.create(
        card=card,
        namespace=card.namespace,
        grade=fields.pop("grade", 4),
        source=fields.pop("source", ReviewLog.Source.HUMAN),
        reviewed_at=when,
        duration_ms=ms,
        **fields,
    )


@pytest.fixture
def timed(make_card):
    """The person's grades with and without a time, and grades that must not count.

    Counted (New York day, ms): 10 Mar 14:00 6000; 10 Mar 13:00 untimed; 10 Mar 03:30 UTC =
    9 Mar 2000; 8 Mar 4000; 1 Jan untimed. Average (6000 + 2000 + 4000) / 3 = 4000 ms of 3
    timed. Not counted: an undone grade (90000), the worker's (50000), an agent's implicit
    (70000), a cram answer (80000).
    """
    card = make_card("timed", next_review=NOW)
    log(card, at(3, 10, 14), 6000)
    log(card, at(3, 10, 13), None)
    log(card, at(3, 10, 3, 30), 2000)
    log(card, at(3, 8, 16), 4000)
    log(card, at(1, 1, 12), None)
    log(card, at(3, 10, 12), 90000, undone_at=at(3, 10, 12, 1))
    log(card, at(3, 10, 11), 50000, source=ReviewLog.Source.SIMULATED)
    log(card, at(3, 10, 11), 70000, source=ReviewLog.Source.IMPLICIT)
    log(card, at(3, 10, 10), 80000, mode=ReviewLog.Mode.CRAM)
    return card


def test_the_average_answer_time_counts_only_the_persons_timed_grades(timed, study_ns):
    stats = review_statistics(namespace=study_ns, tz=TZ, now=NOW)
    assert stats.reviews == 5
    assert (stats.average_answer_ms, stats.timed_reviews) == (4000, 3)


def test_the_time_per_day_is_summed_on_the_persons_local_days(timed, study_ns):
    stats = review_statistics(namespace=study_ns, tz=TZ, now=NOW)
    per_day = dict(stats.time_per_day)
    assert [day for day, _ in stats.time_per_day] == [day for day, _ in stats.reviews_per_day]
    assert per_day[TODAY] == 6000 == stats.time_today_ms  # the untimed grade adds nothing
    assert per_day[date(2025, 3, 9)] == 2000  # 03:30 UTC is still the 9th in New York
    assert per_day[date(2025, 3, 8)] == 4000
    assert per_day[date(2025, 3, 7)] is None  # no review: no time, not 0
    in_utc = dict(review_statistics(namespace=study_ns, tz=UTC, now=NOW).time_per_day)
    assert in_utc[TODAY] == 8000 and in_utc[date(2025, 3, 9)] is None


def test_without_a_timed_grade_there_is_no_time_rather_than_zero(make_card, study_ns):
    card = make_card("untimed", next_review=NOW)
    log(card, at(3, 10, 14), None)
    log(card, at(3, 10, 13), 5000, source=ReviewLog.Source.SIMULATED)
    stats = review_statistics(namespace=study_ns, tz=TZ, now=NOW)
    assert stats.reviews_today == 1
    assert (stats.average_answer_ms, stats.timed_reviews, stats.time_today_ms) == (None, 0, None)


def test_the_year_of_reviews_has_every_local_day_oldest_first(timed, study_ns):
    first = TODAY - timedelta(days=364)
    # 11 Mar 2024 is 364 days ago, the first day (New York on EDT, UTC-4, since 10 Mar).
    log(timed, datetime(2024, 3, 11, 3, 30, tzinfo=UTC), 1000)  # 10 Mar 23:30: too old
    log(timed, datetime(2024, 3, 11, 4, 30, tzinfo=UTC), 1000)  # 11 Mar 00:30: counted
    stats = review_statistics(namespace=study_ns, tz=TZ, now=NOW)
    year = stats.reviews_per_day_year
    assert len(year) == 365 and (year[0][0], year[-1][0]) == (first, TODAY)
    assert {day: n for day, n in year if n} == {
        first: 1,
        date(2025, 1, 1): 1,
        date(2025, 3, 8): 1,
        date(2025, 3, 9): 1,
        TODAY: 2,
    }
    assert stats.reviews_per_day == year[-30:]


def test_times_and_the_year_add_no_query(timed, study_ns, django_assert_max_num_queries):
    # As many as before answer times and the heatmap (the 30 days' query became the year's).
    with django_assert_max_num_queries(7):
        review_statistics(namespace=study_ns, tz=TZ, now=NOW)
