"""What a session shows a caller: progress, first grades and resumable sessions, counted over
the cards within the caller's ceiling and of live memories."""

from __future__ import annotations

from memories import services as memory_services
from memories.models import Classification, Memory
from review.selectors import (
    study_session_active,
    study_session_first_grades,
    study_session_progress,
    study_sessions_visible,
)
from review.services import study_session_grade, study_session_start
from tests.review.conftest import NOW, TZ


def test_it_counts_and_shows_only_the_cards_within_the_callers_ceiling(three_due, study_ns, user):
    a, b, c, new = three_due
    session = study_session_start(namespace=study_ns, tz=TZ, user=user, now=NOW)
    # Reclassified after the session started: a caller at internal may no longer see it.
    Memory.objects.filter(pk=a.memory_id).update(classification=Classification.RESTRICTED)

    low = study_session_progress(session=session, ceiling=Classification.INTERNAL)
    full = study_session_progress(session=session, ceiling=None)

    assert (low.total, low.remaining, low.next_item.card_id) == (3, 3, b.pk)
    assert (full.total, full.remaining, full.next_item.card_id) == (4, 4, a.pk)
    for card in (b, c, new):
        study_session_grade(session=session, card=card, grade=5, user=user, now=NOW)
    low = study_session_progress(session=session, ceiling=Classification.INTERNAL)
    assert (low.finished, low.done, low.remaining) == (True, 3, 0)
    assert study_session_first_grades(session=session, ceiling=Classification.INTERNAL) == {5: 3}
    # Over for the lower caller, still open for one who may see the last card.
    assert (
        study_session_active(namespace=study_ns, user=user, ceiling=Classification.INTERNAL) is None
    )
    assert study_session_active(namespace=study_ns, user=user, ceiling=None).pk == session.pk
    session.refresh_from_db()
    assert session.is_active


def test_it_skips_cards_of_memories_forgotten_mid_session_unless_asked_to_show_them(
    three_due, study_ns, user
):
    a, b, *_ = three_due
    session = study_session_start(namespace=study_ns, tz=TZ, user=user, now=NOW)
    memory_services.memory_forget(memory=Memory.objects.get(pk=a.memory_id), reason="wrong")

    live = study_session_progress(session=session, ceiling=None)
    every = study_session_progress(session=session, ceiling=None, live_only=False)

    assert (live.total, live.next_item.card_id) == (3, b.pk)
    assert (every.total, every.next_item.card_id) == (4, a.pk)


def test_it_hides_a_session_made_only_of_cards_above_the_ceiling(make_card, study_ns, user):
    secret = make_card("secret", topic="vault")
    Memory.objects.filter(pk=secret.memory_id).update(classification=Classification.RESTRICTED)
    hidden = study_session_start(namespace=study_ns, tz=TZ, user=user, deck="vault", now=NOW)
    assert hidden.items.count() == 1
    empty = study_session_start(namespace=study_ns, tz=TZ, user=user, deck="none", now=NOW)

    visible = study_sessions_visible(ceiling=Classification.CONFIDENTIAL)

    assert set(visible.values_list("pk", flat=True)) == {empty.pk}
    assert study_sessions_visible(ceiling=Classification.RESTRICTED).count() == 2
