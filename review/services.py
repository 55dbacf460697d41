"""Writes to review state: cards, grades and their undo, study sessions, cram sessions.

Every grade, whoever gives it (a person, the simulated recall worker, an agent's recall),
goes through card_grade, so there is one schedule per card. Concurrent grades are
serialised by the card's version: a grade computed from a stale read is refused with
GradeConflict, never applied on top of another.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.db.models import F, Max, Min, QuerySet
from django.utils import timezone

from memories.bulk import insert_rows
from memories.models import LIVE_STATUSES, Memory, MemoryEvent, Namespace
from memories.services import memory_touch
from review.models import CARD_STATE_FIELDS, Card, ReviewLog, StudySession, StudySessionItem
from review.selectors import (
    CramScore,
    card_state,
    cram_score,
    review_queue,
    scheduler_for,
)
from review.simulation import adjust_utility
from review.sm2 import PASSING_QUALITY, Button, validate_quality

# Seed 004: within a session a card comes back until it is graded 4 or more.
SESSION_PASS_QUALITY = 4
DEFAULT_SESSION_LIMIT = 100
CRAM_MAX_CARDS = 500

Grade = int | Button | str

_DATETIME_FIELDS = frozenset({"next_review", "last_reviewed_at", "first_reviewed_at"})


# --- Domain errors ---------------------------------------------------------------------


class ReviewError(Exception):
    """A review rule said no; `code` and `field` let the API map it to a 4xx answer.

    `field` is the name of the request field at fault, as clients send it (`cards`, not
    the keyword `card_ids`), or None when the fault is the object in the URL (the session,
    the card to undo) or something no request sets.
    """

    code = "review_error"
    api_status = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidGrade(ReviewError):
    """The grade is not 0-5 nor one of Again/Hard/Good/Easy."""

    code = "invalid_grade"


class InvalidRequest(ReviewError):
    """Some other input is wrong: unknown source, cards from another namespace, wrong mode."""

    code = "invalid"


class GradeConflict(ReviewError):
    """The card changed since the caller read it; reload it and grade again."""

    code = "grade_conflict"
    api_status = 409


class NothingToUndo(ReviewError):
    """The card has no grade that is still its latest change."""

    code = "nothing_to_undo"
    api_status = 409


class SessionFinished(ReviewError):
    """The session is over; start a new one."""

    code = "session_finished"
    api_status = 409


class CardNotInSession(ReviewError):
    """The card is not part of that session."""

    code = "card_not_in_session"


class AlreadyAnswered(ReviewError):
    """The card is already done in that session."""

    code = "already_answered"
    api_status = 409


# --- Settings --------------------------------------------------------------------------


@dataclass(frozen=True)
class ImplicitReviewSettings:
    """Whether an agent's successful recall of a due memory counts as a review, and its grade."""

    enabled: bool
    quality: int


def implicit_review_settings() -> ImplicitReviewSettings:
    """IMPLICIT_REVIEW_ENABLED (default True) and IMPLICIT_REVIEW_QUALITY (default 4)."""
    enabled = settings.IMPLICIT_REVIEW_ENABLED
    quality = settings.IMPLICIT_REVIEW_QUALITY
    if not isinstance(enabled, bool):
        raise ImproperlyConfigured(f"IMPLICIT_REVIEW_ENABLED must be a bool, got {enabled!r}.")
    try:
        quality = validate_quality(quality)
    except ValueError as error:
        raise ImproperlyConfigured(f"IMPLICIT_REVIEW_QUALITY: {error}.") from None
    return ImplicitReviewSettings(enabled=enabled, quality=quality)


# --- Cards -----------------------------------------------------------------------------


def card_ensure(*, memory: Memory) -> Card:
    """The memory's card, created as a new card with the namespace's scheduler if missing."""
    card, _ = Card.objects.get_or_create(
        memory=memory,
        defaults={"namespace_id": memory.namespace_id, "scheduler": memory.namespace.scheduler},
    )
    return card


def card_create_for_new_memory(*, memory: Memory) -> Card | None:
    """A personal namespace reviews every memory, so its new memories get a card at once;
    agent namespaces get theirs from the recall worker, any memory on request."""
    if not _reviews_every_memory(memory.namespace):
        return None
    return card_ensure(memory=memory)


def _reviews_every_memory(namespace: Namespace) -> bool:
    return namespace.mode == Namespace.Mode.PERSONAL


def cards_create_for_new_memories(*, memories: list[Memory]) -> int:
    """Cards for the new memories of personal namespaces, in one bulk insert."""
    rows = [
        (memory.pk, memory.namespace_id, memory.namespace.scheduler)
        for memory in memories
        if _reviews_every_memory(memory.namespace)
    ]
    insert_rows(Card, ("memory_id", "namespace_id", "scheduler"), rows)
    return len(rows)


@transaction.atomic
def cards_create_for_namespace(*, namespace: Namespace, now: datetime | None = None) -> int:
    """Give every live memory of the namespace a new card, in one INSERT ... SELECT.

    Returns how many cards were created; memories that already have one are skipped, so
    it is safe to run twice or concurrently.
    """
    now = now or timezone.now()
    qn = connection.ops.quote_name
    card_table, memory_table = qn(Card._meta.db_table), qn(Memory._meta.db_table)
    columns: list[str] = []
    values: list[str] = []
    params: list[Any] = []
    # Every other column takes its model default, so a field added later is covered.
    for model_field in Card._meta.concrete_fields:
        if model_field.primary_key:
            continue
        columns.append(qn(model_field.column))
        if model_field.name == "memory":
            values.append("m.id")
            continue
        if model_field.name == "namespace":
            values.append("m.namespace_id")
            continue
        if getattr(model_field, "auto_now", False) or getattr(model_field, "auto_now_add", False):
            value = now
        else:
            value = {"scheduler": namespace.scheduler, "created_at": now}.get(
                model_field.name, model_field.get_default()
            )
        values.append("%s")
        params.append(model_field.get_db_prep_save(value, connection))
    statuses = ", ".join(["%s"] * len(LIVE_STATUSES))
    sql = (
        f"INSERT INTO {card_table} ({', '.join(columns)}) "
        f"SELECT {', '.join(values)} FROM {memory_table} m "
        f"WHERE m.namespace_id = %s AND m.status IN ({statuses}) "
        f"AND NOT EXISTS (SELECT 1 FROM {card_table} c WHERE c.memory_id = m.id) "
        "ON CONFLICT DO NOTHING"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, namespace.pk, *[str(s) for s in LIVE_STATUSES]])
        return max(cursor.rowcount, 0)


@transaction.atomic
def card_reschedule_now(*, memories: QuerySet[Memory], now: datetime | None = None) -> int:
    """Make the memories' cards due now, creating missing cards in one bulk insert."""
    now = now or timezone.now()
    rows = list(memories.values_list("pk", "namespace_id", "namespace__scheduler"))
    existing = set(
        Card.objects.filter(memory_id__in=[pk for pk, _, _ in rows]).values_list(
            "memory_id", flat=True
        )
    )
    Card.objects.bulk_create(
        [
            Card(memory_id=pk, namespace_id=ns, scheduler=scheduler, created_at=now)
            for pk, ns, scheduler in rows
            if pk not in existing
        ]
    )
    # A version bump: a grade computed before this change must not overwrite it.
    return Card.objects.filter(memory_id__in=[pk for pk, _, _ in rows]).update(
        next_review=now, version=F("version") + 1
    )


# --- Grading ---------------------------------------------------------------------------


def grade_quality(grade: Grade) -> int:
    """SM-2 quality 0-5 from an int, a Button, or a button name ("good") or digit string."""
    if isinstance(grade, Button):
        return int(grade)
    if isinstance(grade, str):
        name = grade.strip().upper()
        if name in Button.__members__:
            return int(Button[name])
        if not name.isdigit():
            raise InvalidGrade(
                f"Unknown grade {grade!r}: use 0-5 or Again, Hard, Good, Easy.", field="grade"
            )
        grade = int(name)
    try:
        return validate_quality(grade)
    except ValueError:
        raise InvalidGrade(
            f"Grade must be 0-5 or Again, Hard, Good, Easy, not {grade!r}.", field="grade"
        ) from None


def _snapshot(card: Card) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name in CARD_STATE_FIELDS:
        value = getattr(card, name)
        data[name] = value.isoformat() if isinstance(value, datetime) else value
    return data


def _restorable(snapshot: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in CARD_STATE_FIELDS:
        value = snapshot.get(name)
        if name in _DATETIME_FIELDS and value is not None:
            value = datetime.fromisoformat(value)
        values[name] = value
    return values


def _assign(instance: Any, values: dict[str, Any]) -> None:
    for name, value in values.items():
        setattr(instance, name, value)


def card_grade(
    *,
    card: Card,
    grade: Grade,
    source: str,
    user: Any = None,
    now: datetime | None = None,
    session: StudySession | None = None,
    expected_version: int | None = None,
) -> ReviewLog:
    """Apply one grade: schedule, counters, memory utility, a ReviewLog and a history event.

    `expected_version` is the card version the grader saw (the passed instance's version
    when omitted); if the card has moved on, GradeConflict is raised and nothing changes.
    The passed card instance is updated to the new state.
    """
    quality = grade_quality(grade)
    if source not in ReviewLog.Source.values:
        # No `field`: a source is chosen by the calling code, never sent in a request.
        raise InvalidRequest(
            f"Unknown grade source {source!r}; use one of {', '.join(ReviewLog.Source.values)}."
        )
    now = now or timezone.now()
    expected = card.version if expected_version is None else expected_version
    with transaction.atomic():
        current = Card.objects.select_related("namespace").get(pk=card.pk)
        if current.version != expected:
            raise _conflict(current.pk)
        before = _snapshot(current)
        state = scheduler_for(current.namespace).grade(card_state(current), quality, now=now)
        passed = quality >= PASSING_QUALITY
        changes = {
            "scheduler": current.namespace.scheduler,
            "easiness": state.easiness,
            "interval_days": state.interval_days,
            "repetitions": state.repetitions,
            "next_review": state.next_review,
            "last_quality": quality,
            "last_reviewed_at": now,
            "fsrs_state": state.fsrs,
            "total_reviews": current.total_reviews + 1,
            "correct_reviews": current.correct_reviews + int(passed),
            "first_reviewed_at": current.first_reviewed_at or now,
            "version": expected + 1,
        }
        # The version in the WHERE clause is the guard: of two grades that read the same
        # version, the second one's UPDATE matches no row (on PostgreSQL it waits for the
        # first to commit, then re-checks the row and finds the new version).
        if not Card.objects.filter(pk=current.pk, version=expected).update(**changes):
            raise _conflict(current.pk)
        _assign(current, changes)
        after = _snapshot(current)

        memory = Memory.objects.select_for_update().get(pk=current.memory_id)
        utility_before = memory.utility
        memory.utility = adjust_utility(utility_before, quality)
        Memory.objects.filter(pk=memory.pk).update(utility=memory.utility)
        before["utility"], after["utility"] = utility_before, memory.utility

        log = ReviewLog.objects.create(
            card=current,
            namespace_id=current.namespace_id,
            grade=quality,
            source=source,
            mode=ReviewLog.Mode.NORMAL,
            state_before=before,
            state_after=after,
            user=user,
            session=session,
            reviewed_at=now,
        )
        _record_graded(
            memory=memory,
            before={"utility": utility_before, "next_review": before["next_review"]},
            after={
                "utility": memory.utility,
                "next_review": after["next_review"],
                "grade": quality,
                "review_log": log.pk,
            },
            actor=user,
            source=source,
            now=now,
        )
        # An implicit grade comes from a recall, which already counts as a use.
        # Only a person's review is a use (seed 003's touch): an agent's recall already
        # counted as one, and the simulated worker must not keep memories from decaying.
        if settings.AUTO_REINFORCE and passed and source == ReviewLog.Source.HUMAN:
            memory_touch(memory=memory, actor=user, source=source, now=now)
    _assign(card, {name: getattr(current, name) for name in CARD_STATE_FIELDS})
    return log


def _conflict(card_id: int) -> GradeConflict:
    # The version is read again here: when the guarded UPDATE matched nothing, the row read
    # before it is stale, and the caller needs the version it must reload to.
    version = Card.objects.filter(pk=card_id).values_list("version", flat=True).first()
    return GradeConflict(
        f"Card #{card_id} was changed by another review since you loaded it "
        f"(it is now at version {version}); reload it and grade again.",
        field="version",
    )


def _record_graded(
    *,
    memory: Memory,
    before: dict[str, Any],
    after: dict[str, Any],
    actor: Any,
    source: str,
    now: datetime,
) -> MemoryEvent:
    # Mirrors memories.services._record: review cannot add to that module.
    return MemoryEvent.objects.create(
        namespace_id=memory.namespace_id,
        memory=memory,
        memory_ref=memory.pk,
        kind=MemoryEvent.Kind.GRADED,
        before=before,
        after=after,
        actor=actor,
        source=source,
        classification=memory.classification,
        created_at=now,
    )


@transaction.atomic
def card_undo(*, card: Card, user: Any = None, now: datetime | None = None) -> ReviewLog:
    """Undo the card's last grade if it is still the card's latest change.

    Restores the scheduling state and counters from the log's state_before (the version
    moves forward, so a grade computed before the undo is refused), gives back the
    memory's utility unless something else changed it since, and marks the log undone.
    One level deep: the grade before it is no longer the card's latest change.
    """
    now = now or timezone.now()
    undoable = ReviewLog.objects.filter(
        card_id=card.pk, undone_at__isnull=True, mode=ReviewLog.Mode.NORMAL
    ).order_by("-id")
    # Lock order everywhere: session, then card, then memory (study_session_grade takes
    # the session first too), so an undo racing a grade of the same card cannot deadlock.
    session_id = undoable.values_list("session_id", flat=True).first()
    if session_id is not None:
        StudySession.objects.select_for_update().filter(pk=session_id).first()
    locked = Card.objects.select_for_update().get(pk=card.pk)
    log = undoable.first()
    if log is None:
        raise NothingToUndo(f"Card #{locked.pk} has no grade to undo.")
    if log.state_after.get("version") != locked.version:
        raise NothingToUndo(
            f"Card #{locked.pk} changed after its last grade; only its latest change can be undone."
        )
    if user is not None and log.user_id != user.pk:
        raise NothingToUndo(f"The last grade of card #{locked.pk} was not given by you.")
    restored = _restorable(log.state_before)
    restored["version"] = locked.version + 1
    Card.objects.filter(pk=locked.pk).update(**restored)
    _assign(locked, restored)

    memory = Memory.objects.select_for_update().get(pk=locked.memory_id)
    utility_now = memory.utility
    if "utility" in log.state_before and utility_now == log.state_after.get("utility"):
        memory.utility = log.state_before["utility"]
        Memory.objects.filter(pk=memory.pk).update(utility=memory.utility)

    log.undone_at = now
    log.save(update_fields=["undone_at"])
    if log.session_id is not None:
        _session_item_reopen(log=log)
    _record_graded(
        memory=memory,
        before={"utility": utility_now, "next_review": log.state_after.get("next_review")},
        after={
            "utility": memory.utility,
            "next_review": log.state_before.get("next_review"),
            "undone_review_log": log.pk,
        },
        actor=user,
        source=log.source,
        now=now,
    )
    _assign(card, {name: getattr(locked, name) for name in CARD_STATE_FIELDS})
    return log


def _session_item_reopen(*, log: ReviewLog) -> None:
    """An undone first grade puts its card back in front of the session, ungraded."""
    session = StudySession.objects.select_for_update().get(pk=log.session_id)
    item = (
        StudySessionItem.objects.select_for_update()
        .filter(session=session, card_id=log.card_id, review_log=log)
        .first()
    )
    if item is None:
        return
    first = session.items.filter(done=False).aggregate(first=Min("position"))["first"]
    item.position = item.position if first is None else min(item.position, first - 1)
    item.first_grade = item.last_grade = item.review_log = item.answered_at = None
    item.attempts = 0
    item.done = False
    item.save()
    if not session.is_active:
        session.status = StudySession.Status.ACTIVE
        session.finished_at = None
        session.save(update_fields=["status", "finished_at"])


def card_grade_implicit(*, memory: Memory, now: datetime | None = None) -> ReviewLog | None:
    """Count an agent's successful recall of a due memory as a review (source implicit).

    Returns None, changing nothing, when implicit reviews are off, the memory has no card,
    is not live, is not due, or a concurrent grade got there first.
    """
    options = implicit_review_settings()
    if not options.enabled:
        return None
    now = now or timezone.now()
    card = Card.objects.filter(memory_id=memory.pk, memory__status__in=LIVE_STATUSES).first()
    if card is None or not card.is_due(now):
        return None
    try:
        return card_grade(
            card=card, grade=options.quality, source=ReviewLog.Source.IMPLICIT, now=now
        )
    except GradeConflict:
        # Someone graded it a moment ago: it is no longer due, so there is nothing to add.
        return None


# --- Study sessions --------------------------------------------------------------------


def _locked_session(session: StudySession, mode: str) -> StudySession:
    locked = StudySession.objects.select_for_update().get(pk=session.pk)
    if locked.mode != mode:
        raise InvalidRequest(
            f"Session #{locked.pk} is a {locked.get_mode_display().lower()} session."
        )
    if not locked.is_active:
        raise SessionFinished(f"Session #{locked.pk} is finished.")
    return locked


def _locked_item(session: StudySession, card: Card | int) -> StudySessionItem:
    card_id = card if isinstance(card, int) else card.pk
    item = session.items.select_for_update().filter(card_id=card_id).first()
    if item is None:
        raise CardNotInSession(
            f"Card #{card_id} is not part of session #{session.pk}.", field="card"
        )
    return item


def _finish(session: StudySession, now: datetime) -> None:
    session.status = StudySession.Status.FINISHED
    session.finished_at = now


def _copy_session(target: StudySession, source: StudySession) -> None:
    for name in ("status", "updated_at", "finished_at"):
        setattr(target, name, getattr(source, name))


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
        _finish(session, now)
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
) -> StudySessionItem:
    """Grade a card in a session: its first grade here sets its schedule; until a grade of
    4 or more it goes back behind the last card and later grades only count as practice."""
    quality = grade_quality(grade)
    now = now or timezone.now()
    with transaction.atomic():
        locked = _locked_session(session, StudySession.Mode.STUDY)
        item = _locked_item(locked, card)
        if item.done:
            raise AlreadyAnswered(
                f"Card #{item.card_id} is already done in session #{locked.pk}.", field="card"
            )
        if item.first_grade is None:
            log = card_grade(
                card=card,
                grade=quality,
                source=ReviewLog.Source.HUMAN,
                user=user,
                now=now,
                session=locked,
                expected_version=expected_version,
            )
            item.first_grade, item.review_log = quality, log
        item.last_grade = quality
        item.attempts += 1
        item.answered_at = now
        if quality >= SESSION_PASS_QUALITY:
            item.done = True
        else:
            last = locked.items.aggregate(last=Max("position"))["last"]
            item.position = last + 1
        item.save()
        locked.updated_at = now
        if not locked.items.filter(done=False).exists():
            _finish(locked, now)
        locked.save(update_fields=["status", "updated_at", "finished_at"])
    _copy_session(session, locked)
    return item


@transaction.atomic
def study_session_finish(*, session: StudySession, now: datetime | None = None) -> StudySession:
    """End a session early (or again: finishing twice is harmless); grades given stay."""
    now = now or timezone.now()
    locked = StudySession.objects.select_for_update().get(pk=session.pk)
    if locked.is_active:
        _finish(locked, now)
        locked.updated_at = now
        locked.save(update_fields=["status", "updated_at", "finished_at"])
    _copy_session(session, locked)
    return session


# --- Cram ------------------------------------------------------------------------------


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
        locked = _locked_session(session, StudySession.Mode.CRAM)
        item = _locked_item(locked, card)
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
    _copy_session(session, locked)
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
            _finish(locked, now)
            locked.updated_at = now
            locked.save(update_fields=["status", "updated_at", "finished_at"])
    _copy_session(session, locked)
    return cram_score(session=locked, ceiling=ceiling)
