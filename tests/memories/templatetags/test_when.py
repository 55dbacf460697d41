from __future__ import annotations

from datetime import timedelta

from django.template import Context, Template
from django.utils import timezone


def render(moment) -> str:
    return Template("{{ moment|ago }}").render(Context({"moment": moment}))


def test_a_moment_in_the_last_minute_is_just_now_and_older_ones_say_how_long_ago():
    now = timezone.now()
    assert render(now) == "just now"
    assert render(now - timedelta(seconds=59)) == "just now"
    assert render(now + timedelta(seconds=5)) == "just now"  # a clock a little ahead
    assert render(now - timedelta(minutes=3, seconds=5)) == "3\xa0minutes ago"
    assert render(now - timedelta(days=2, hours=1)) == "2\xa0days, 1\xa0hour ago"
    assert render(None) == ""
