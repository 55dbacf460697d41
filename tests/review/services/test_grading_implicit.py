from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import Env
from memories import services as memory_services
from memories.models import Memory
from review.models import Card, ReviewLog
from review.services import (
    card_grade_implicit,
    cards_grade_implicit,
    implicit_review_settings,
)
from tests.review.conftest import NOW, card_row


def test_it_counts_a_recall_of_a_due_memory_as_an_implicit_review(make_card, settings):
    settings.IMPLICIT_REVIEW_ENABLED = True
    settings.IMPLICIT_REVIEW_QUALITY = 4
    card = make_card(next_review=NOW - timedelta(hours=1), repetitions=1, interval_days=1)

    log = card_grade_implicit(memory=card.memory, now=NOW)

    assert log is not None
    stored = ReviewLog.objects.get(pk=log.pk)
    assert (stored.source, stored.grade, stored.user_id) == ("implicit", 4, None)
    card.refresh_from_db()
    assert card.next_review > NOW
    assert (card.total_reviews, card.correct_reviews, card.version) == (1, 1, 1)
    memory = Memory.objects.get(pk=card.memory_id)
    assert memory.utility == pytest.approx(0.55)
    # The recall that triggered it is the use; the grade does not count a second one.
    assert memory.use_count == 0


def test_it_uses_the_configured_quality(make_card, settings):
    settings.IMPLICIT_REVIEW_QUALITY = 5
    card = make_card(next_review=NOW - timedelta(days=1))

    log = card_grade_implicit(memory=card.memory, now=NOW)

    assert log.grade == 5


def test_it_defaults_to_on_with_quality_4():
    # The settings module's defaults, read from an empty environment.
    assert Env({}).bool("IMPLICIT_REVIEW_ENABLED", True) is True
    options = implicit_review_settings()

    assert (options.enabled, options.quality) == (True, 4)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("IMPLICIT_REVIEW_QUALITY", 6),
        ("IMPLICIT_REVIEW_QUALITY", "4"),
        ("IMPLICIT_REVIEW_ENABLED", "yes"),
    ],
)
def test_it_fails_loudly_on_a_malformed_setting(settings, name, value):
    setattr(settings, name, value)

    with pytest.raises(ImproperlyConfigured, match=name):
        implicit_review_settings()


def test_it_does_nothing_when_implicit_reviews_are_off(make_card, settings):
    settings.IMPLICIT_REVIEW_ENABLED = False
    card = make_card(next_review=NOW - timedelta(days=1))
    before = card_row(card)

    assert card_grade_implicit(memory=card.memory, now=NOW) is None

    assert card_row(card) == before
    assert not ReviewLog.objects.exists()


def test_it_ignores_memories_that_are_not_due_new_forgotten_or_without_a_card(make_card, study_ns):
    later = make_card("later", next_review=NOW + timedelta(minutes=1))
    new = make_card("new")
    forgotten = make_card("forgotten", next_review=NOW - timedelta(days=1))
    memory_services.memory_forget(memory=forgotten.memory, reason="wrong")
    bare = memory_services.memory_create(namespace=study_ns, content="no card")
    Card.objects.filter(memory=bare).delete()
    rows = [card_row(c) for c in (later, new, forgotten)]

    results = [
        card_grade_implicit(memory=memory, now=NOW)
        for memory in (later.memory, new.memory, forgotten.memory, bare)
    ]

    assert results == [None, None, None, None]
    assert [card_row(c) for c in (later, new, forgotten)] == rows
    assert not ReviewLog.objects.exists()
    assert not Card.objects.filter(memory=bare).exists()


def test_it_stops_counting_once_the_card_is_no_longer_due(make_card):
    card = make_card(next_review=NOW - timedelta(days=1))

    first = card_grade_implicit(memory=card.memory, now=NOW)
    second = card_grade_implicit(memory=card.memory, now=NOW + timedelta(minutes=5))

    assert first is not None
    assert second is None
    assert ReviewLog.objects.count() == 1


def test_it_leaves_suspended_buried_and_superseded_cards_alone(make_card):
    """The reviewable rule, in the one locking read: a recall rescheduled cards the person
    had set aside, and superseded memories' cards."""
    due = NOW - timedelta(days=1)
    suspended = make_card("suspended", next_review=due, suspended_at=NOW - timedelta(hours=1))
    buried = make_card("buried", next_review=due, buried_until=NOW + timedelta(hours=1))
    superseded = make_card("superseded", next_review=due)
    Memory.objects.filter(pk=superseded.memory_id).update(
        valid_from=NOW - timedelta(days=2), valid_until=NOW - timedelta(hours=1)
    )
    unburied = make_card("unburied", next_review=due, buried_until=NOW - timedelta(hours=1))
    set_aside = [suspended, buried, superseded]
    rows = [card_row(c) for c in set_aside]

    logs = cards_grade_implicit(memory_ids=[c.memory_id for c in [*set_aside, unburied]], now=NOW)

    assert [log.card_id for log in logs] == [unburied.pk]
    assert [card_row(c) for c in set_aside] == rows
