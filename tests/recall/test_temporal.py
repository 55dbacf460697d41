"""recall.temporal: the dates a query names, as ranges of creation times."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from recall.stages.query import analyse_query
from recall.temporal import parse

NOW = datetime(2026, 11, 26, 15, 0, tzinfo=UTC)


def _days(text, tz=UTC):
    """Each range as (first day, last day) in tz."""
    found = parse(text, now=NOW, tz=tz)
    return [
        (
            datetime.fromtimestamp(r.start, tz).date(),
            datetime.fromtimestamp(r.end - 1, tz).date(),
        )
        for r in found.ranges
    ]


@pytest.mark.parametrize(
    "text",
    [
        "What painting did Melanie show on October 13, 2023?",
        "on 13 October 2023",
        "on the 13th of October, 2023",
        "on Oct. 13th 2023",
        "on 2023-10-13",
    ],
)
def test_a_day_is_that_day_with_a_day_either_side(text):
    assert _days(text) == [(date(2023, 10, 12), date(2023, 10, 14))]


def test_a_month_and_a_year_are_their_whole_span():
    assert _days("What did Maria donate in December 2023?") == [
        (date(2023, 12, 1), date(2023, 12, 31))
    ]
    assert _days("during 2022") == [(date(2022, 1, 1), date(2022, 12, 31))]


def test_before_a_day_is_the_two_weeks_up_to_and_including_it():
    assert _days("the week before August 3, 2023") == [(date(2023, 7, 20), date(2023, 8, 4))]
    assert _days("How many has Nate won by July 10, 2022?") == [
        (date(2022, 6, 26), date(2022, 7, 11))
    ]


def test_a_month_without_a_year_is_that_month_of_any_year():
    found = parse("When did Melanie go camping in June?", now=NOW, tz=UTC)
    assert found.months == [6] and not found.ranges
    assert found.contains(datetime(2019, 6, 30, 12, tzinfo=UTC).timestamp(), UTC)
    assert not found.contains(datetime(2019, 7, 1, 12, tzinfo=UTC).timestamp(), UTC)


def test_relative_dates_count_back_from_now():
    assert _days("what did we decide yesterday") == [(date(2026, 11, 25), date(2026, 11, 26))]
    assert _days("the call last week") == [(date(2026, 11, 12), date(2026, 11, 26))]
    assert _days("three weeks ago") == [(date(2026, 11, 2), date(2026, 11, 8))]


def test_ranges_are_read_in_the_users_time_zone():
    tokyo = ZoneInfo("Asia/Tokyo")
    found = parse("on 13 October 2023", now=NOW, tz=tokyo)
    start = datetime.fromtimestamp(found.ranges[0].start, UTC)
    assert start == datetime(2023, 10, 11, 15, 0, tzinfo=UTC)  # midnight 12 Oct in Tokyo


@pytest.mark.parametrize(
    "text",
    [
        "It may rain",  # "may" the verb
        "the 2023 budget",  # a bare number is not a year
        "room 13, floor 2",
        "",
    ],
)
def test_what_is_not_a_date_is_left_alone(text):
    assert not parse(text, now=NOW, tz=UTC)


def test_a_day_that_does_not_exist_is_its_month():
    assert _days("on 31 February 2023") == [(date(2023, 2, 1), date(2023, 2, 28))]


def test_the_words_of_a_date_are_not_content_words():
    terms = analyse_query("What did Maria donate in December 2023?", now=NOW)
    assert terms.terms == ["maria", "donate"]
    assert terms.when.describe() == "December 2023"
    # Without a `now` nothing is read as a date (the words stay).
    assert "december" in analyse_query("What did Maria donate in December 2023?").terms
    # "may" the verb stays a word; only a date is taken out.
    assert analyse_query("It may rain in May 2024", now=NOW).terms == ["may", "rain"]
