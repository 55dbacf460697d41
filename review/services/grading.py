"""Grades: card_grade, its undo, implicit grades from agents' recalls, and their settings.

Every grade, whoever gives it (a person, the simulated recall worker, an agent's recall),
goes through card_grade, so there is one schedule per card. Concurrent grades are
serialised by the card's version: a grade computed from a stale read is refused with
GradeConflict, never applied on top of another.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from memories.bulk import update_rows
from memories.models import Memory, MemoryEvent
from memories.services import memory_event_record, memory_events_save, memory_touch
from review.models import (
    CARD_STATE_FIELDS,
    MAX_DURATION_MS,
    Card,
    ReviewLog,
    StudySession,
    StudySessionItem,
    reviewable_q,
)
from review.selectors import card_state, scheduler_for
from review.services.errors import GradeConflict, InvalidGrade, InvalidRequest, NothingToUndo
from review.simulation import adjust_utility
from review.sm2 import PASSING_QUALITY, Button, validate_quality

Grade = int | Button | str

_DATETIME_FIELDS = frozenset(
    {"next_review", "last_reviewed_at", "first_reviewed_at", "suspended_at"}
)


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


def answer_duration(duration_ms: Any) -> int | None:
    """A grade's answer time in ms: None when unknown, else an int from 0 to a day."""
    if duration_ms is None:
        return None
    if isinstance(duration_ms, bool) or not isinstance(duration_ms, int) or duration_ms < 0:
        raise InvalidRequest(
            f"duration_ms must be a whole number of milliseconds, not {duration_ms!r}.",
            field="duration_ms",
        )
    # A card left open overnight says nothing about how long recalling it took.
    return min(duration_ms, MAX_DURATION_MS)


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
    duration_ms: int | None = None,
) -> ReviewLog:
    """Apply one grade: schedule, counters, memory utility, a ReviewLog and a history event.

    A person's failing grade of a card they had learned is a lapse; at the namespace's
    leech_threshold lapses the card is tagged leech and suspended (Anki's rule). Grades of
    agents and of the simulated worker never make a leech. `duration_ms`: how long the
    person took to answer, kept on the log (at most MAX_DURATION_MS).

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
    duration_ms = answer_duration(duration_ms)
    expected = card.version if expected_version is None else expected_version
    with transaction.atomic():
        current = Card.objects.select_related("namespace").get(pk=card.pk)
        if current.version != expected:
            raise _conflict(current.pk)
        before = _snapshot(current)
        changes = _graded(current, quality, source, now)
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

        log = _review_log(
            current,
            quality,
            source,
            before,
            after,
            now,
            classification=memory.classification,
            user=user,
        )
        log.session, log.duration_ms = session, duration_ms
        log.save(force_insert=True)
        memory_event_record(
            memory=memory,
            kind=MemoryEvent.Kind.GRADED,
            before={"utility": utility_before, "next_review": before["next_review"]},
            after=_graded_event_after(log, after),
            actor=user,
            source=source,
            now=now,
        )
        # An implicit grade comes from a recall, which already counts as a use.
        # Only a person's review is a use (seed 003's touch): an agent's recall already
        # counted as one, and the simulated worker must not keep memories from decaying.
        if settings.AUTO_REINFORCE and _passed(quality) and source == ReviewLog.Source.HUMAN:
            memory_touch(memory=memory, actor=user, source=source, now=now)
    _assign(card, {name: getattr(current, name) for name in CARD_STATE_FIELDS})
    return log


def card_version_check(*, card: Card, expected_version: int | None = None) -> None:
    """Refuse an answer read from a stale card as card_grade does (GradeConflict naming
    `version`), for an answer that does not grade it (a practice repeat in a session):
    the same 409 whether or not the answer counts."""
    expected = card.version if expected_version is None else expected_version
    current = Card.objects.filter(pk=card.pk).values_list("version", flat=True).first()
    if current != expected:
        raise _conflict(card.pk)


def _passed(quality: int) -> bool:
    return quality >= PASSING_QUALITY


def _graded(current: Card, quality: int, source: str, now: datetime) -> dict[str, Any]:
    """The card's new values after one grade (the namespace's scheduler, counters, version;
    a person's lapse and leech), not yet written: one rule for card_grade and the implicit
    grades of a recall."""
    state = scheduler_for(current.namespace).grade(card_state(current), quality, now=now)
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
        "correct_reviews": current.correct_reviews + int(_passed(quality)),
        "first_reviewed_at": current.first_reviewed_at or now,
        "version": current.version + 1,
    }
    if source == ReviewLog.Source.HUMAN and not _passed(quality) and current.repetitions > 0:
        changes["lapses"] = current.lapses + 1
        if changes["lapses"] >= current.namespace.leech_threshold and not current.leech:
            changes["leech"] = True
            changes["suspended_at"] = current.suspended_at or now
    return changes


def _review_log(
    card: Card,
    quality: int,
    source: str,
    before: dict[str, Any],
    after: dict[str, Any],
    now: datetime,
    *,
    classification: int,
    user: Any = None,
) -> ReviewLog:
    return ReviewLog(
        card=card,
        classification=classification,
        namespace_id=card.namespace_id,
        grade=quality,
        source=source,
        mode=ReviewLog.Mode.NORMAL,
        state_before=before,
        state_after=after,
        user=user,
        reviewed_at=now,
    )


def _graded_event_after(log: ReviewLog, after: dict[str, Any]) -> dict[str, Any]:
    return {
        "utility": after["utility"],
        "next_review": after["next_review"],
        "grade": log.grade,
        "review_log": log.pk,
    }


def _conflict(card_id: int) -> GradeConflict:
    # The version is read again here: when the guarded UPDATE matched nothing, the row read
    # before it is stale, and the caller needs the version it must reload to.
    version = Card.objects.filter(pk=card_id).values_list("version", flat=True).first()
    return GradeConflict(
        f"Card #{card_id} was changed by another review since you loaded it "
        f"(it is now at version {version}); reload it and grade again.",
        field="version",
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
    memory_event_record(
        memory=memory,
        kind=MemoryEvent.Kind.GRADED,
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
        .filter(session=session, card_id=log.card_id)
        .first()
    )
    if item is None:
        return
    first = session.items.filter(done=False).aggregate(first=Min("position"))["first"]
    item.position = item.position if first is None else min(item.position, first - 1)
    if item.review_log_id == log.pk:
        item.first_grade = item.last_grade = item.review_log = item.answered_at = None
        item.attempts = 0
        item.due_at = None
    else:
        # A later counted grade (after a learning step): the card is due again, at once.
        item.attempts = max(0, item.attempts - 1)
        item.due_at = log.reviewed_at
    item.done = False
    item.save()
    if not session.is_active:
        session.status = StudySession.Status.ACTIVE
        session.finished_at = None
        session.save(update_fields=["status", "finished_at"])


def card_grade_implicit(*, memory: Memory, now: datetime | None = None) -> ReviewLog | None:
    """Count an agent's successful recall of a due memory as a review (source implicit).

    Returns None, changing nothing, when implicit reviews are off, the memory has no card,
    is not live or superseded, its card is suspended, buried or not due, or a concurrent
    grade holds the card.
    """
    logs = cards_grade_implicit(memory_ids=[memory.pk], now=now)
    return logs[0] if logs else None


def cards_grade_implicit(*, memory_ids: list[int], now: datetime | None = None) -> list[ReviewLog]:
    """card_grade_implicit for every due card of memory_ids, set-based (a tracked recall
    grades up to its limit of cards): one locking read of the due cards of live memories,
    then one write each for the cards, the memories' utility, the review logs and the
    history events, whatever the number of cards. The same rule as card_grade (_graded).

    Only cards review may show (review.models.reviewable_q): a suspended or buried card, or
    a superseded memory's, is not rescheduled behind the person's back.

    A card another grade holds at that moment (PostgreSQL's row lock) is skipped: that
    grade makes it not due, as card_grade_implicit's GradeConflict used to.
    """
    options = implicit_review_settings()
    if not options.enabled or not memory_ids:
        return []
    now = now or timezone.now()
    quality = options.quality
    source = ReviewLog.Source.IMPLICIT
    with transaction.atomic():
        due = (
            Card.objects.select_related("namespace")
            .filter(
                reviewable_q(now=now),
                memory_id__in=memory_ids,
                next_review__isnull=False,
                next_review__lte=now,
            )
            # Locks taken in id order, so two recalls of overlapping cards cannot deadlock.
            .order_by("pk")
            .select_for_update(of=("self",), skip_locked=True)
        )
        cards = list(due)
        if not cards:
            return []
        # Locked as card_grade locks its memory (a tracked recall already holds them).
        memories = {
            memory.pk: memory
            for memory in Memory.objects.filter(pk__in=[card.memory_id for card in cards])
            .only("utility", "classification", "namespace_id")
            .order_by("pk")
            .select_for_update()
        }
        befores, afters = [], []
        for card in cards:
            before = _snapshot(card)
            _assign(card, _graded(card, quality, source, now))
            after = _snapshot(card)
            memory = memories[card.memory_id]
            before["utility"] = memory.utility
            memory.utility = after["utility"] = adjust_utility(memory.utility, quality)
            befores.append(before)
            afters.append(after)
        update_rows(Card, _GRADED_FIELDS, cards)
        update_rows(Memory, ["utility"], list(memories.values()))
        logs = ReviewLog.objects.bulk_create(
            [
                _review_log(
                    card,
                    quality,
                    source,
                    before,
                    after,
                    now,
                    classification=memories[card.memory_id].classification,
                )
                for card, before, after in zip(cards, befores, afters, strict=True)
            ]
        )
        memory_events_save(
            [
                MemoryEvent(
                    namespace_id=card.namespace_id,
                    memory_id=card.memory_id,
                    memory_ref=card.memory_id,
                    kind=MemoryEvent.Kind.GRADED,
                    before={"utility": before["utility"], "next_review": before["next_review"]},
                    after=_graded_event_after(log, after),
                    source=source,
                    classification=memories[card.memory_id].classification,
                    created_at=now,
                )
                for card, before, after, log in zip(cards, befores, afters, logs, strict=True)
            ]
        )
    return logs


# What _graded may change on a card that is not a person's: its state but the lapse and
# leech fields only a person's failing grade writes.
_GRADED_FIELDS = [
    name for name in CARD_STATE_FIELDS if name not in {"lapses", "leech", "suspended_at"}
]
