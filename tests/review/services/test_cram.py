from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from memories import services as memory_services
from memories.models import Classification, Memory, MemoryEvent
from review.models import Card, ReviewLog
from review.selectors import cram_score
from review.services import (
    AlreadyAnswered,
    CardNotInSession,
    InvalidRequest,
    SessionFinished,
    card_grade,
    cram_answer,
    cram_finish,
    cram_start,
    study_session_start,
)
from tests.review.conftest import NOW, TZ


@pytest.fixture
def decks(make_card):
    """Four geo cards and two math cards in every state: due, scheduled later, new."""
    geo = [
        make_card("g due", topic="geo", next_review=NOW - timedelta(days=3), repetitions=2),
        make_card("g later", topic="geo", next_review=NOW + timedelta(days=9), repetitions=4),
        make_card("g new", topic="geo"),
        make_card("g failed", topic="geo", next_review=NOW + timedelta(days=1), last_quality=1),
    ]
    math = [
        make_card("m due", topic="math", next_review=NOW - timedelta(days=1)),
        make_card("m new", topic="math"),
    ]
    return geo, math


def raw_rows(table: str) -> list[tuple]:
    """Every row of a table exactly as the database returns it."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)} ORDER BY id")
        return cursor.fetchall()


def test_it_crams_every_card_of_a_deck_in_random_order(decks, study_ns, user):
    geo, _math = decks

    session = cram_start(namespace=study_ns, user=user, deck="geo", seed=7, now=NOW)
    again = cram_start(namespace=study_ns, user=user, deck="geo", seed=7, now=NOW)
    other = cram_start(namespace=study_ns, user=user, deck="geo", seed=8, now=NOW)

    shown = list(session.items.order_by("position").values_list("card_id", flat=True))
    assert session.mode == "cram"
    assert session.deck == "geo"
    assert sorted(shown) == sorted(c.pk for c in geo)
    assert shown == list(again.items.order_by("position").values_list("card_id", flat=True))
    # Another seed, another order (these two seeds differ; the order is random, not by id).
    assert shown != list(other.items.order_by("position").values_list("card_id", flat=True))


def test_it_crams_all_decks_or_a_chosen_subset(decks, study_ns):
    geo, math = decks

    everything = cram_start(namespace=study_ns, now=NOW)
    chosen = cram_start(namespace=study_ns, card_ids=[geo[1].pk, math[1].pk], now=NOW)

    assert everything.items.count() == 6
    assert set(chosen.items.values_list("card_id", flat=True)) == {geo[1].pk, math[1].pk}
    assert chosen.deck is None


def test_it_refuses_cards_of_another_namespace_or_an_empty_deck(decks, study_ns, other_user):
    other = memory_services.namespace_create(owner=other_user, name="Other")
    theirs = memory_services.memory_create(namespace=other, content="theirs")
    their_card = Card.objects.get(memory=theirs)  # made with the memory (personal)

    with pytest.raises(InvalidRequest) as error:
        cram_start(namespace=study_ns, card_ids=[decks[0][0].pk, their_card.pk], now=NOW)
    with pytest.raises(InvalidRequest):
        cram_start(namespace=study_ns, deck="history", now=NOW)

    assert error.value.field == "cards"
    assert str(their_card.pk) in error.value.message


def test_it_never_changes_scheduling_state(decks, study_ns, user):
    geo, _math = decks
    card_grade(card=geo[0], grade=4, source="human", now=NOW - timedelta(days=1))
    cards_before = raw_rows(Card._meta.db_table)
    memories_before = raw_rows(Memory._meta.db_table)
    logs_before = raw_rows(ReviewLog._meta.db_table)
    events_before = MemoryEvent.objects.count()

    session = cram_start(namespace=study_ns, user=user, seed=3, now=NOW)
    for position, item in enumerate(session.items.order_by("position")):
        cram_answer(session=session, card=item.card_id, correct=position % 3 != 0, now=NOW)
    cram_finish(session=session, ceiling=None, now=NOW)

    assert raw_rows(Card._meta.db_table) == cards_before
    assert raw_rows(Memory._meta.db_table) == memories_before
    assert raw_rows(ReviewLog._meta.db_table) == logs_before
    assert MemoryEvent.objects.count() == events_before


def test_it_scores_correct_out_of_answered_per_deck(decks, study_ns):
    geo, math = decks
    session = cram_start(namespace=study_ns, seed=1, now=NOW)
    answers = {geo[0].pk: True, geo[1].pk: False, geo[2].pk: True, math[0].pk: False}
    for card_id, correct in answers.items():
        cram_answer(session=session, card=card_id, correct=correct, now=NOW)

    score = cram_finish(session=session, ceiling=None, now=NOW + timedelta(minutes=3))

    assert (score.overall.correct, score.overall.answered, score.overall.total) == (2, 4, 6)
    assert str(score.overall) == "2/4"
    assert (score.decks["geo"].correct, score.decks["geo"].answered) == (2, 3)
    assert score.decks["geo"].total == 4
    assert (score.decks["math"].correct, score.decks["math"].answered) == (0, 1)
    assert score.decks["math"].total == 2
    session.refresh_from_db()
    assert session.status == "finished"
    assert session.finished_at == NOW + timedelta(minutes=3)
    item = session.items.get(card=geo[1])
    assert (item.correct, item.done, item.answered_at) == (False, True, NOW)
    # Finishing again only repeats the score.
    assert cram_finish(session=session, ceiling=None, now=NOW + timedelta(hours=1)) == score
    assert cram_score(session=session, ceiling=None) == score


def test_it_records_each_answer_once_and_only_while_the_session_runs(decks, study_ns):
    geo, math = decks
    session = cram_start(namespace=study_ns, deck="math", now=NOW)
    cram_answer(session=session, card=math[0], correct=True, now=NOW)

    with pytest.raises(AlreadyAnswered):
        cram_answer(session=session, card=math[0], correct=False, now=NOW)
    with pytest.raises(CardNotInSession):
        cram_answer(session=session, card=geo[0], correct=True, now=NOW)
    cram_finish(session=session, ceiling=None, now=NOW)
    with pytest.raises(SessionFinished):
        cram_answer(session=session, card=math[1], correct=True, now=NOW)

    assert session.items.get(card=math[0]).correct is True


def test_it_keeps_cram_and_study_sessions_apart(decks, study_ns):
    study = study_session_start(namespace=study_ns, tz=TZ, now=NOW)

    with pytest.raises(InvalidRequest):
        cram_answer(session=study, card=decks[0][0], correct=True, now=NOW)
    with pytest.raises(InvalidRequest):
        cram_finish(session=study, ceiling=None, now=NOW)


def test_it_samples_at_most_the_limit(decks, study_ns):
    session = cram_start(namespace=study_ns, limit=3, seed=5, now=NOW)

    assert session.items.count() == 3


def test_it_scores_only_the_cards_within_the_callers_ceiling(decks, study_ns):
    geo, math = decks
    session = cram_start(namespace=study_ns, now=NOW)
    for card in (*geo, *math):
        cram_answer(session=session, card=card, correct=True, now=NOW)
    Memory.objects.filter(pk__in=[c.memory_id for c in math]).update(
        classification=Classification.RESTRICTED
    )

    low = cram_finish(session=session, ceiling=Classification.INTERNAL, now=NOW)
    full = cram_score(session=session, ceiling=None)

    assert (low.overall.correct, low.overall.answered, low.overall.total) == (4, 4, 4)
    assert list(low.decks) == ["geo"]
    assert (full.overall.total, list(full.decks)) == (6, ["geo", "math"])
