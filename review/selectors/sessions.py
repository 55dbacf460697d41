"""Reads of study and cram sessions: progress, first grades, resumable sessions, cram scores.

A session is a snapshot of cards taken by whoever started it, and it can be read or
carried on by another caller of the same person (a token with a lower ceiling), or its
memories can be reclassified or forgotten meanwhile. Every count, score, deck name and
next card of a session is therefore taken over the items the caller is shown, here.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Exists, Min, OuterRef, Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from memories.models import Namespace
from review.models import StudySession, StudySessionItem, reviewable_q


def _shown_items(
    items: QuerySet[StudySessionItem],
    *,
    ceiling: int | None,
    live_only: bool,
    now: datetime | None = None,
) -> QuerySet[StudySessionItem]:
    rule = reviewable_q(
        now=now or timezone.now(), ceiling=ceiling, live_only=live_only, prefix="card__"
    )
    return items.filter(rule)


def session_items(
    *,
    session: StudySession,
    ceiling: int | None,
    live_only: bool = True,
    now: datetime | None = None,
) -> QuerySet[StudySessionItem]:
    """The session's items the caller is shown: cards that can be studied now by the rule
    of the queue and the card routes (review.models.reviewable_q: not suspended, buried
    or superseded, within its ceiling) and, with live_only, of live memories (the API
    cannot grade the others, so they would never be done). Hidden items neither show nor
    count; a card buried until tomorrow or unsuspended later shows again."""
    return _shown_items(session.items.all(), ceiling=ceiling, live_only=live_only, now=now)


def study_sessions_visible(*, ceiling: int | None) -> QuerySet[StudySession]:
    """Sessions a caller may open: empty ones and those holding a card within its ceiling.

    A session whose every card is above the ceiling is made only of memories the caller
    may not see (its deck is one of their topics), so it answers 404 like a missing one.
    """
    sessions = StudySession.objects.all()
    if ceiling is None:
        return sessions
    items = StudySessionItem.objects.filter(session=OuterRef("pk"))
    return sessions.filter(
        ~Exists(items) | Exists(items.filter(card__memory__classification__lte=ceiling))
    )


@dataclass(frozen=True)
class SessionProgress:
    """Where a session stands for one caller. `next_item` is the card to show now; None
    when the session is ended, every card it is shown is done, or the cards left are
    waiting for a learning step (`waiting_until`: when the first of them is due).

    new / learning / review count the cards left, as Anki does while studying: never
    graded and new, graded in this session and coming back (a learning step or a repeat
    after a failing grade), and due reviews not graded yet."""

    total: int
    done: int
    graded: int
    attempts: int
    remaining: int
    next_item: StudySessionItem | None
    new: int = 0
    learning: int = 0
    review: int = 0
    waiting_until: datetime | None = None

    @property
    def finished(self) -> bool:
        return self.next_item is None and self.waiting_until is None

    @property
    def next_kind(self) -> str | None:
        """Which count the card shown belongs to: new, learning or review."""
        item = self.next_item
        if item is None:
            return None
        if item.first_grade is not None:
            return "learning"
        return "new" if item.is_new else "review"


def study_session_progress(
    *,
    session: StudySession,
    ceiling: int | None,
    live_only: bool = True,
    now: datetime | None = None,
) -> SessionProgress:
    """Counts and the next card of a study or cram session over the items the caller is
    shown (what a resumed page shows); hidden cards are skipped, never a dead end. A card
    waiting for its learning step is shown once it is due."""
    now = now or timezone.now()
    items = session_items(session=session, ceiling=ceiling, live_only=live_only, now=now)
    left = Q(done=False)
    graded_here = Q(first_grade__isnull=False) | Q(correct__isnull=False)
    counts = items.aggregate(
        n_total=Count("id"),
        n_done=Count("id", filter=Q(done=True)),
        n_graded=Count("id", filter=graded_here),
        n_attempts=Coalesce(Sum("attempts"), 0),
        n_new=Count("id", filter=left & Q(is_new=True) & ~graded_here),
        n_learning=Count("id", filter=left & graded_here),
        n_review=Count("id", filter=left & Q(is_new=False) & ~graded_here),
        n_waiting=Min("due_at", filter=left & Q(due_at__gt=now)),
    )
    next_item = None
    waiting_until = None
    if session.is_active:
        next_item = (
            items.filter(left)
            .filter(Q(due_at__isnull=True) | Q(due_at__lte=now))
            .select_related("card__memory")
            .order_by("position", "id")
            .first()
        )
        if next_item is None:
            waiting_until = counts["n_waiting"]
    return SessionProgress(
        total=counts["n_total"],
        done=counts["n_done"],
        graded=counts["n_graded"],
        attempts=counts["n_attempts"],
        remaining=counts["n_total"] - counts["n_done"],
        next_item=next_item,
        new=counts["n_new"],
        learning=counts["n_learning"],
        review=counts["n_review"],
        waiting_until=waiting_until,
    )


@dataclass(frozen=True)
class AnswerTime:
    """The person's answer times in a session: total and mean per timed grade, in ms."""

    timed: int
    total_ms: int
    average_ms: float | None


def session_answer_time(*, session: StudySession, ceiling: int | None) -> AnswerTime:
    """Over the session's counted grades (not undone) of cards the caller is shown."""
    logs = session.review_logs.filter(undone_at__isnull=True, duration_ms__isnull=False)
    if ceiling is not None:
        logs = logs.filter(card__memory__classification__lte=ceiling)
    row = logs.aggregate(n=Count("id"), total=Coalesce(Sum("duration_ms"), 0))
    average = row["total"] / row["n"] if row["n"] else None
    return AnswerTime(timed=row["n"], total_ms=row["total"], average_ms=average)


def study_session_first_grades(
    *, session: StudySession, ceiling: int | None, live_only: bool = True
) -> dict[int, int]:
    """How many of the cards the caller is shown got each first grade in the session."""
    items = session_items(session=session, ceiling=ceiling, live_only=live_only)
    return dict(
        items.filter(first_grade__isnull=False)
        .values("first_grade")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("first_grade", "n")
    )


def study_sessions_resumable(
    *,
    namespace_ids: list[int],
    user: Any,
    mode: str,
    ceiling: int | None,
    live_only: bool = True,
) -> QuerySet[StudySession]:
    """The user's unfinished sessions of that mode with a card left that the caller is
    shown, newest first: one whose remaining cards are all hidden is over for it."""
    remaining = _shown_items(
        StudySessionItem.objects.filter(session=OuterRef("pk"), done=False),
        ceiling=ceiling,
        live_only=live_only,
    )
    return (
        StudySession.objects.filter(
            namespace_id__in=namespace_ids,
            user=user,
            mode=mode,
            status=StudySession.Status.ACTIVE,
        )
        .filter(Exists(remaining))
        .order_by("-started_at", "-id")
    )


def study_session_active(
    *,
    namespace: Namespace,
    user: Any,
    ceiling: int | None,
    mode: str = StudySession.Mode.STUDY,
    live_only: bool = True,
) -> StudySession | None:
    """The user's latest unfinished session of that mode in the namespace, to resume."""
    return study_sessions_resumable(
        namespace_ids=[namespace.pk], user=user, mode=mode, ceiling=ceiling, live_only=live_only
    ).first()


@dataclass(frozen=True)
class Score:
    """correct out of answered, and how many cards the session held."""

    correct: int
    answered: int
    total: int

    def __str__(self) -> str:
        return f"{self.correct}/{self.answered}"


@dataclass(frozen=True)
class CramScore:
    """A cram session's score overall and per deck."""

    overall: Score
    decks: dict[str, Score]


def cram_score(*, session: StudySession, ceiling: int | None, live_only: bool = True) -> CramScore:
    """X/Y correct overall and per deck, from the answers on the cards the caller is
    shown (one grouped query): hidden cards add neither a deck nor a count."""
    rows = (
        session_items(session=session, ceiling=ceiling, live_only=live_only)
        .values("deck")
        .annotate(
            total=Count("id"),
            answered=Count("id", filter=Q(correct__isnull=False)),
            correct=Count("id", filter=Q(correct=True)),
        )
        .order_by("deck")
    )
    decks: dict[str, Score] = {}
    sums: dict[str, int] = defaultdict(int)
    for row in rows:
        decks[row["deck"]] = Score(
            correct=row["correct"], answered=row["answered"], total=row["total"]
        )
        for key in ("correct", "answered", "total"):
            sums[key] += row[key]
    return CramScore(
        overall=Score(correct=sums["correct"], answered=sums["answered"], total=sums["total"]),
        decks=decks,
    )
