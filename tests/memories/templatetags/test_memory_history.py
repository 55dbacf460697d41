"""A memory's history rendered for people (memories/templatetags/memory_history.py): pure
functions, no database."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from django.template import Context, Template

from memories.templatetags.memory_history import (
    EMPTY,
    format_number,
    format_value,
    history_changes,
)

TOKYO = ZoneInfo("Asia/Tokyo")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.05124329393835, "1.051"),
        (0.55, "0.55"),
        (1.0, "1"),
        (2.0004, "2"),  # 2.000, zeros dropped
        (-0.0001, "-0.0001"),
        (0.000123456, "0.000123"),
        (0.0, "0"),
        (-0.0, "0"),
        (123456.789, "123456.789"),
    ],
)
def test_it_rounds_numbers_to_three_decimals(value, text):
    assert format_number(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, EMPTY),
        ("", EMPTY),
        ([], EMPTY),
        ({}, EMPTY),
        (True, "yes"),
        (False, "no"),
        (4, "4"),
        (["japanese", "verbs"], "japanese, verbs"),
        ([1.23456, None], "1.235, —"),
        ({"use_count": 2, "strength": 1.10001}, "use count: 2, strength: 1.1"),
        ("hot", "hot"),
        ("Paris is the capital of France.", "Paris is the capital of France."),
        # Instants in the person's zone: 15:30 UTC is 00:30 the next day in Tokyo.
        ("2025-03-10T15:30:00+00:00", "Mar 11, 2025, 00:30"),
        ("2025-03-10T15:30:00.123456Z", "Mar 11, 2025, 00:30"),
        ("2025-03-10T15:30:00", "Mar 11, 2025, 00:30"),  # naive: stored in UTC
        (datetime(2025, 3, 10, 15, 30, tzinfo=UTC), "Mar 11, 2025, 00:30"),
        ("2025-03-10", "Mar 10, 2025"),
        ("2025-13-45T99:99", "2025-13-45T99:99"),  # not a date after all
    ],
)
def test_it_formats_values_for_people(value, text):
    assert format_value(value, TOKYO) == text


def test_it_leaves_out_unchanged_and_empty_pairs():
    changes = [
        ("score", None, None),
        ("storage", "hot", "hot"),
        ("strength", 1.0, 1.05124329393835),
        ("tags", ["japanese"], ["japanese", "verbs"]),
        ("keywords", [], ["kanji"]),
        ("next_review", None, "2025-03-10T15:30:00+00:00"),
        ("valid_until", "2025-03-10T15:30:00+00:00", None),
        ("utility", 0.5000001, 0.5000002),  # the same once rounded
    ]

    assert history_changes(changes, TOKYO) == [
        ("strength", "1", "1.051"),
        ("tags", "japanese", "japanese, verbs"),
        ("keywords", None, "kanji"),
        ("next review", None, "Mar 11, 2025, 00:30"),
        ("valid until", "Mar 11, 2025, 00:30", EMPTY),
    ]


def test_the_filter_renders_in_the_sites_time_zone(settings):
    settings.TIME_ZONE = "Asia/Tokyo"
    template = Template(
        "{% load memory_history %}"
        "{% for key, before, after in changes|for_people %}"
        "{{ key }}: {% if before %}{{ before }} → {% endif %}{{ after }};"
        "{% endfor %}"
    )

    changes = [("storage", "hot", "hot"), ("next_review", None, "2025-03-10T15:30Z")]

    text = template.render(Context({"changes": changes}))

    assert text == "next review: Mar 11, 2025, 00:30;"
