"""Cram sessions: every card of a deck in random order, answered right or wrong, without
touching the cards' schedules (seed 004, option B)."""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from memories.models import Namespace
from review.models import Card, StudySession, StudySessionItem
from review.selectors import CramScore, cram_score
from review.services.errors import AlreadyAnswered, InvalidRequest
from review.services.sessions import copy_session, finish_session, locked_item, locked_session

CRAM_MAX_CARDS = 500


@transaction.atomic
def cram_start(
    *,
    namespace: Namespace,
    user: Any = None,
    deck: str | None = None,
    card_ids: Iterable[int] | None = None,
    seed: int | None = None,
    limit: int = CRAM_MAX_CARDS,
    now: datetime | None = None,
    ceiling: int | None = None,
) -> StudySession:
    """Cram every card of a deck (or all decks, or the chosen cards) in random order.

    Reads cards, never writes them: cram answers live in the session only (seed 004,
    option B). Up to `limit` cards, sampled at random when there are more.
    """
    now = now or timezone.now()
    cards = Card.objects.in_namespace(namespace).reviewable(ceiling).in_deck(deck)
    if card_ids is not None:
        wanted = set(card_ids)
        cards = cards.filter(pk__in=wanted)
    rows = list(cards.order_by("id").values_list("id", "memory__topic"))
    if card_ids is not None:
        missing = wanted - {card_id for card_id, _ in rows}
        if missing:
            raise InvalidRequest(
                f"Cards {sorted(missing)} are not reviewable cards of this namespace"
                + ("" if deck is None else f" and deck {deck!r}")
                + ".",
                field="cards",
            )
    if not rows:
        raise InvalidRequest(
            "There are no cards to cram here.", field="namespace" if deck is None else "deck"
        )
    rng = random.Random(seed)
    rows = rng.sample(rows, min(limit, len(rows)))
    session = StudySession.objects.create(
        namespace=namespace,
        user=user,
        mode=StudySession.Mode.CRAM,
        deck=deck,
        started_at=now,
        updated_at=now,
    )
    StudySessionItem.objects.bulk_create(
        StudySessionItem(session=session, card_id=card_id, position=position, deck=topic)
        for position, (card_id, topic) in enumerate(rows)
    )
    return session


def cram_answer(
    *,
    session: StudySession,
    card: Card | int,
    correct: bool,
    now: datetime | None = None,
) -> StudySessionItem:
    """Record correct/incorrect for one card of a cram session; scheduling is untouched."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = locked_session(session, StudySession.Mode.CRAM)
        item = locked_item(locked, card)
        if item.correct is not None:
            raise AlreadyAnswered(
                f"Card #{item.card_id} is already answered in session #{locked.pk}.",
                field="card",
            )
        item.correct = bool(correct)
        item.done = True
        item.attempts = 1
        item.answered_at = now
        item.save(update_fields=["correct", "done", "attempts", "answered_at"])
        locked.updated_at = now
        locked.save(update_fields=["updated_at"])
    copy_session(session, locked)
    return item


def cram_finish(
    *, session: StudySession, ceiling: int | None, now: datetime | None = None
) -> CramScore:
    """End a cram session and give its score (X/Y, overall and per deck) over the cards
    within the caller's `ceiling` (None: every card)."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = StudySession.objects.select_for_update().get(pk=session.pk)
        if locked.mode != StudySession.Mode.CRAM:
            raise InvalidRequest(f"Session #{locked.pk} is not a cram session.")
        if locked.is_active:
            finish_session(locked, now)
            locked.updated_at = now
            locked.save(update_fields=["status", "updated_at", "finished_at"])
    copy_session(session, locked)
    return cram_score(session=locked, ceiling=ceiling)
