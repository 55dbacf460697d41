"""card_grade never overflows the calendar, however many passes a card collects (issue 13)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from review.models import Card
from review.services import card_grade
from review.sm2 import LATEST_DUE, Button
from tests.review.conftest import NOW


def test_it_caps_the_interval_over_many_easy_grades(make_card, user, scheduler_name):
    # SM-2 raised OverflowError on the 17th consecutive pass.
    card = make_card()
    for _ in range(30):
        card_grade(card=card, grade=Button.EASY, source="human", user=user, now=NOW)

    stored = Card.objects.get(pk=card.pk)
    assert (stored.total_reviews, stored.correct_reviews) == (30, 30)
    assert 1 <= stored.interval_days <= 36_500
    assert NOW < stored.next_review <= NOW + timedelta(days=36_500)
    if scheduler_name == "sm2":
        assert stored.interval_days == 36_500


def test_it_holds_due_dates_at_the_end_of_the_calendar(make_card, user):
    # Graded on each due date, a card passes year 9999: its due date stays storable.
    card = make_card()
    now = NOW
    for _ in range(120):
        card_grade(card=card, grade=Button.EASY, source="human", user=user, now=now)
        stored = Card.objects.get(pk=card.pk)
        assert now <= stored.next_review <= LATEST_DUE
        now = stored.next_review

    assert stored.next_review == LATEST_DUE


@pytest.mark.parametrize("scheduler_name", ["sm2"])
def test_it_caps_sm2_intervals_at_the_setting(make_card, user, settings):
    settings.SM2_MAX_INTERVAL_DAYS = 30
    card = make_card()
    intervals = []
    for _ in range(6):
        card_grade(card=card, grade=Button.EASY, source="human", user=user, now=NOW)
        intervals.append(Card.objects.get(pk=card.pk).interval_days)

    assert intervals == [1, 6, 15, 30, 30, 30]
