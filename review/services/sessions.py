"""Study sessions: today's queue studied card by card until each is graded 4 or more.

The row-locking helpers here serve cram sessions too (review.services.cram), which are
study sessions of another mode.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from config.db import lock_keys
from memories.models import Memory, Namespace
from review.models import Card, ReviewLog, StudySession, StudySessionItem
from review.selectors import local_day_bounds, review_queue
from review.services.cards import cards_bury, cards_suspend
from review.services.errors import (
    AlreadyAnswered,
    CardNotInSession,
    InvalidRequest,
    SessionFinished,
)
from review.services.grading import Grade, card_grade, card_version_check, grade_quality

# Seed 004: within a session a card comes back until it is graded 4 or more.
SESSION_PASS_QUALITY = 4
DEFAULT_SESSION_LIMIT = 100
# A grade scheduling the card again sooner than this is a learning step (FSRS's 1 and 10
# minutes): the card comes back in the same session when it is due, like Anki's.
LEARNING_HORIZON = timedelta(days=1)


def locked_session(session: StudySession, mode: str) -> StudySession:
    """The session's row locked for update; refused unless it is an active session of `mode`."""
    locked = StudySession.objects.select_for_update().get(pk=session.pk)
    if locked.mode != mode:
        raise InvalidRequest(
            f"Session #{locked.pk} is a {locked.get_mode_display().lower()} session."
        )
    if not locked.is_active:
        raise SessionFinished(f"Session #{locked.pk} is finished.")
    return locked


def locked_item(session: StudySession, card: Card | int) -> StudySessionItem:
    """The session's item for the card, locked for update; CardNotInSession when it has none."""
    card_id = card if isinstance(card, int) else card.pk
    item = session.items.select_for_update().filter(card_id=card_id).first()
    if item is None:
        raise CardNotInSession(
            f"Card #{card_id} is not part of session #{session.pk}.", field="card"
        )
    return item


def finish_session(session: StudySession, now: datetime) -> None:
    """Mark the session finished at `now`; the caller saves it."""
    session.status = StudySession.Status.FINISHED
    session.finished_at = now


def copy_session(target: StudySession, source: StudySession) -> None:
    """Give the caller's instance the status and times of the row it locked and saved."""
    for name in ("status", "updated_at", "finished_at"):
        setattr(target, name, getattr(source, name))


@transaction.atomic
def study_session_open(
    *, namespace: Namespace, user: Any, deck: str | None, tz: ZoneInfo, now: datetime
) -> StudySession | None:
    """The person's unfinished study session of this namespace and deck started today, if
    any: starting again picks it up (its queue is today's) rather than a second session
    queueing the same cards."""
    start_of_day, _ = local_day_bounds(tz, now)
    return (
        StudySession.objects.filter(
            namespace=namespace,
            user=user,
            mode=StudySession.Mode.STUDY,
            status=StudySession.Status.ACTIVE,
            deck=deck,
            started_at__gte=start_of_day,
        )
        .order_by("-started_at", "-id")
        .first()
    )


@transaction.atomic
def study_session_begin(
    *,
    namespace: Namespace,
    tz: ZoneInfo,
    user: Any = None,
    deck: str | None = None,
    limit: int = DEFAULT_SESSION_LIMIT,
    now: datetime | None = None,
    ceiling: int | None = None,
) -> tuple[StudySession, bool]:
    """Study a scope (namespace and deck, None: every deck): the person's open session of
    it started today when there is one (True: picked up), else a new one (False). The one
    rule for every path (dashboard, API): a second press never opens a second session
    queueing the same cards. Two starts at once take turns on a lock per person and scope
    (PostgreSQL advisory lock; SQLite writes one transaction at a time), so the second
    finds the session the first opened."""
    now = now or timezone.now()
    lock_keys([f"study-session:{namespace.pk}:{getattr(user, 'pk', None)}:{deck!r}"])
    session = study_session_open(namespace=namespace, user=user, deck=deck, tz=tz, now=now)
    if session is not None:
        return session, True
    session = study_session_start(
        namespace=namespace, tz=tz, user=user, deck=deck, limit=limit, now=now, ceiling=ceiling
    )
    return session, False


@transaction.atomic
def study_session_start(
    *,
    namespace: Namespace,
    tz: ZoneInfo,
    user: Any = None,
    deck: str | None = None,
    limit: int = DEFAULT_SESSION_LIMIT,
    now: datetime | None = None,
    ceiling: int | None = None,
) -> StudySession:
    """Start studying today's queue (all decks, or one): due cards first, then new ones."""
    now = now or timezone.now()
    queue = review_queue(
        namespace=namespace, tz=tz, now=now, deck=deck, limit=limit, ceiling=ceiling
    )
    session = StudySession.objects.create(
        namespace=namespace,
        user=user,
        mode=StudySession.Mode.STUDY,
        deck=deck,
        started_at=now,
        updated_at=now,
    )
    StudySessionItem.objects.bulk_create(
        StudySessionItem(
            session=session,
            card_id=item.card_id,
            position=position,
            deck=item.deck,
            is_new=item.is_new,
        )
        for position, item in enumerate(queue.items)
    )
    if not queue.items:
        finish_session(session, now)
        session.save(update_fields=["status", "finished_at"])
    return session


def study_session_grade(
    *,
    session: StudySession,
    card: Card,
    grade: Grade,
    user: Any = None,
    now: datetime | None = None,
    expected_version: int | None = None,
    duration_ms: int | None = None,
) -> StudySessionItem:
    """Grade a card in a session.

    A grade counts (schedules the card, through card_grade) when it is the card's first in
    the session or the card is back from a learning step (its due_at reached); other
    repeats are practice, a stale `expected_version` refused all the same. After a counted
    grade that schedules the card within LEARNING_HORIZON, the card waits in the session
    until then (item.due_at) and comes back; otherwise, until a grade of 4 or more it goes
    back behind the last card (seed 004), and then it is done. A grade of a card still
    waiting is practice and it keeps waiting: its grade when due is the one that counts
    (else grading at once again and again would skip the steps). A counted grade that made
    the card a leech (suspended) closes its item: the card leaves the session, and undoing
    that grade brings it back.
    """
    quality = grade_quality(grade)
    now = now or timezone.now()
    with transaction.atomic():
        locked = locked_session(session, StudySession.Mode.STUDY)
        item = locked_item(locked, card)
        if item.done:
            raise AlreadyAnswered(
                f"Card #{item.card_id} is already done in session #{locked.pk}.", field="card"
            )
        waiting = item.due_at is not None and item.due_at > now
        counted = item.first_grade is None or (item.due_at is not None and not waiting)
        if counted:
            log = card_grade(
                card=card,
                grade=quality,
                source=ReviewLog.Source.HUMAN,
                user=user,
                now=now,
                session=locked,
                expected_version=expected_version,
                duration_ms=duration_ms,
            )
            if item.first_grade is None:
                item.first_grade, item.review_log = quality, log
        else:
            card_version_check(card=card, expected_version=expected_version)
        item.last_grade = quality
        item.attempts += 1
        item.answered_at = now
        if not waiting:
            _item_move_on(locked, item, card, quality=quality, counted=counted, now=now)
        item.save()
        locked.updated_at = now
        if not locked.items.filter(done=False).exists():
            finish_session(locked, now)
        locked.save(update_fields=["status", "updated_at", "finished_at"])
    copy_session(session, locked)
    return item


def _item_move_on(
    session: StudySession,
    item: StudySessionItem,
    card: Card,
    *,
    quality: int,
    counted: bool,
    now: datetime,
) -> None:
    """Where the graded item goes: out of the session (a leech), a learning step, behind
    the last card, or done."""
    item.due_at = None
    if counted and card.suspended_at is not None:
        item.done = True
        return
    step = counted and card.next_review is not None and card.next_review - now < LEARNING_HORIZON
    if step:
        item.due_at = card.next_review
    if step or quality < SESSION_PASS_QUALITY:
        last = session.items.aggregate(last=Max("position"))["last"]
        item.position = last + 1
    else:
        item.done = True


@transaction.atomic
def study_session_finish(*, session: StudySession, now: datetime | None = None) -> StudySession:
    """End a session early (or again: finishing twice is harmless); grades given stay."""
    now = now or timezone.now()
    locked = StudySession.objects.select_for_update().get(pk=session.pk)
    if locked.is_active:
        finish_session(locked, now)
        locked.updated_at = now
        locked.save(update_fields=["status", "updated_at", "finished_at"])
    copy_session(session, locked)
    return session


def study_session_set_aside(
    *, session: StudySession, card: Card, suspend: bool, until: datetime | None = None
) -> None:
    """Bury the card until `until` (the start of the person's tomorrow) or suspend it, and
    take it out of the session: it is not a grade, so nothing is counted for it."""
    with transaction.atomic():
        locked = locked_session(session, StudySession.Mode.STUDY)
        item = locked_item(locked, card)
        memories = Memory.objects.filter(pk=card.memory_id)
        if suspend:
            cards_suspend(memories=memories)
        else:
            if until is None:
                raise InvalidRequest("A buried card needs a day to come back.", field="until")
            cards_bury(memories=memories, until=until)
        item.delete()
        if not locked.items.filter(done=False).exists():
            finish_session(locked, timezone.now())
            locked.save(update_fields=["status", "finished_at"])
    copy_session(session, locked)
