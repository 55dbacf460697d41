"""The year's heatmap and answer times for people: memories.plots' heatmap_cells,
heatmap_summary and heatmap_svg, duration_text and review_stats' answer_time filter (pure,
no database)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import date, timedelta

import pytest
from django.template import Context, Template

from memories.plots import (
    duration_text,
    heat_level,
    heatmap_cells,
    heatmap_summary,
    heatmap_svg,
    longest_streak,
)

SVG = "{http://www.w3.org/2000/svg}"
TODAY = date(2025, 3, 10)  # a Monday
YEAR = [TODAY - timedelta(days=back) for back in range(364, -1, -1)]


def year_with(counts: dict[date, int]) -> list[tuple[date, int]]:
    return [(day, counts.get(day, 0)) for day in YEAR]


def test_days_are_laid_out_in_week_columns_and_weekday_rows():
    cells = heatmap_cells(year_with({}))
    first, last = cells[0], cells[-1]
    # 11 Mar 2024 was a Monday too: 52 whole weeks, then today alone in column 52.
    assert (first.day, first.column, first.row) == (date(2024, 3, 11), 0, 0)
    assert (last.day, last.column, last.row) == (TODAY, 52, 0)
    sunday = next(c for c in cells if c.day == date(2025, 3, 9))
    assert (sunday.column, sunday.row) == (51, 6)
    assert len({(c.column, c.row) for c in cells}) == 365


def test_a_year_starting_midweek_leaves_the_first_weeks_days_empty():
    days = [(date(2025, 3, 12) + timedelta(days=n), 1) for n in range(10)]  # from a Wednesday
    cells = heatmap_cells(days)
    assert (cells[0].column, cells[0].row) == (0, 2)
    assert (cells[5].column, cells[5].row) == (1, 0)  # the next Monday


@pytest.mark.parametrize(
    ("count", "busiest", "level"),
    [(0, 10, 0), (1, 10, 1), (3, 10, 2), (5, 10, 2), (6, 10, 3), (10, 10, 4), (0, 0, 0)],
)
def test_darker_days_had_more_reviews(count, busiest, level):
    assert heat_level(count, busiest) == level


def test_the_summary_counts_reviews_days_and_the_longest_streak():
    counts = {TODAY - timedelta(days=back): 2 for back in (0, 1, 2)}  # a 3-day run to today
    counts |= {date(2024, 6, 1) + timedelta(days=n): 1 for n in range(9)}  # a 9-day run
    counts[date(2024, 12, 25)] = 5
    days = year_with(counts)
    assert longest_streak(days) == 9
    assert heatmap_summary(days) == (
        "20 reviews on 13 days in the last year, longest streak 9 days"
    )
    assert heatmap_summary(year_with({TODAY: 1})) == (
        "1 review on 1 day in the last year, longest streak 1 day"
    )
    assert heatmap_summary(year_with({})) == "No reviews in the last year"


def test_the_heatmap_is_an_image_with_a_tooltip_per_day():
    root = ET.fromstring(heatmap_svg(year_with({TODAY: 4, date(2025, 3, 1): 1})))
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    assert root.find(f"{SVG}title").text == "Reviews per day, last 365 days"
    assert root.find(f"{SVG}desc").text == (
        "5 reviews on 2 days in the last year, longest streak 1 day."
    )
    assert root.get("aria-label").endswith(
        "5 reviews on 2 days in the last year, longest streak 1 day."
    )
    days = [r for r in root.iter(f"{SVG}rect") if r.get("data-date")]
    assert len(days) == 365
    today = next(r for r in days if r.get("data-date") == "2025-03-10")
    assert (today.get("data-count"), today.get("class")) == ("4", "heat heat-4")
    assert today.find(f"{SVG}title").text == "Mon Mar 10, 2025: 4 reviews"
    quiet = next(r for r in days if r.get("data-date") == "2025-03-02")
    assert quiet.find(f"{SVG}title").text == "Sun Mar 2, 2025: no reviews"
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert {"Mon", "Wed", "Fri", "Less", "More", "Apr", "Jan"} <= set(labels)
    # Drawn at its natural size, wider than a phone: its container scrolls it.
    assert int(root.get("width")) > 375


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, "—"),
        (850, "850 ms"),
        (8240, "8.2 s"),
        (42_000, "42 s"),
        (190_000, "3 min 10 s"),
        (120_000, "2 min"),
        (3_900_000, "1 h 5 min"),
    ],
)
def test_answer_times_read_as_people_say_them(ms, text):
    assert duration_text(ms) == text


def test_the_answer_time_filter_says_dash_for_no_time():
    template = Template("{% load review_stats %}{{ ms|answer_time }}")
    assert template.render(Context({"ms": 4000.0})) == "4.0 s"
    for nothing in (None, "", "x", float("nan"), -1):
        assert template.render(Context({"ms": nothing})) == "—"
