"""Reads for review: the daily queue, deck overviews, sessions and statistics.

"Today" is always the user's local date: selectors take the user's `tz` and `now`, and a
card is due today when its next review falls before the start of tomorrow in `tz`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Sum
from django.db.models.expressions import Window
from django.db.models.functions import Coalesce, RowNumber, TruncDate
from django.utils import timezone

from memories.models import LIVE_STATUSES, Memory, Namespace
from review.models import (
    Card,
    CardQuerySet,
    ReviewLog,
    StudySession,
    StudySessionItem,
)
from review.schedulers import CardState, Scheduler, get_scheduler
from review.sm2 import PASSING_QUALITY, SM2Config

# The due queue orders by priority only the oldest `limit * QUEUE_WINDOW_FACTOR` due
# cards (by next_review), so it stays one index range scan whatever the backlog.
QUEUE_WINDOW_FACTOR = 2
DEFAULT_QUEUE_LIMIT = 50
LEARNED_REPETITIONS = 2
REVIEWS_PER_DAY_DAYS = 30
FORECAST_DAYS = 14
RETENTION_RECENT_DAYS = 30


def sm2_config() -> SM2Config:
    """SM-2 bounds from settings, read here so the pure module never reads settings."""
    return SM2Config(
        ef_ceiling=settings.SM2_EF_CEILING,
        ef_on_failure=settings.SM2_EF_ON_FAILURE,
        max_interval_days=settings.SM2_MAX_INTERVAL_DAYS,
    )


def scheduler_for(namespace: Namespace) -> Scheduler:
    """The scheduler that grades this namespace's cards (SM-2 unless it chose FSRS)."""
    return get_scheduler(
        namespace.scheduler,
        sm2_config=sm2_config(),
        desired_retention=namespace.desired_retention,
    )


def local_day_bounds(
    tz: ZoneInfo, now: datetime, offset_days: int = 0
) -> tuple[datetime, datetime]:
    """Start of the local day `offset_days` after today and the start of the day after it."""
    day = timezone.localtime(now, tz).date() + timedelta(days=offset_days)
    return _day_start(day, tz), _day_start(day + timedelta(days=1), tz)


def _day_start(day: date, tz: ZoneInfo) -> datetime:
    # Midnight in tz; zoneinfo resolves DST gaps by fold=0, good enough for a day boundary.
    return datetime.combine(day, time.min, tzinfo=tz)


def card_cue(memory: Memory) -> str:
    """What a review card asks: the memory's own cue, else its topic and first line."""
    if memory.cue.strip():
        return memory.cue.strip()
    text = memory.content.strip()
    first_line = text.splitlines()[0][:120] if text else ""
    return f"{memory.topic}: {first_line}" if memory.topic else first_line


def card_state(card: Card) -> CardState:
    """The scheduler-facing state of a Card row."""
    return CardState(
        easiness=card.easiness,
        interval_days=card.interval_days,
        repetitions=card.repetitions,
        next_review=card.next_review,
        last_quality=card.last_quality,
        last_reviewed_at=card.last_reviewed_at,
        fsrs=card.fsrs_state,
    )


# --- Queue -----------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueItem:
    """One card to show, with what the review page needs and no ORM instance."""

    card_id: int
    memory_id: int
    deck: str
    content: str
    next_review: datetime | None
    easiness: float
    interval_days: int
    repetitions: int
    version: int
    priority: float
    is_new: bool


@dataclass(frozen=True)
class ReviewQueue:
    """Due cards by priority, then the new cards the daily limit still allows."""

    due: list[QueueItem]
    new: list[QueueItem]

    @property
    def items(self) -> list[QueueItem]:
        return [*self.due, *self.new]

    def by_deck(self) -> dict[str, list[QueueItem]]:
        """The same items grouped by deck, decks in order of their first item."""
        grouped: dict[str, list[QueueItem]] = {}
        for item in self.items:
            grouped.setdefault(item.deck, []).append(item)
        return grouped


# Only what priority and the review page need: every column read is paid per window row.
_QUEUE_FIELDS = (
    "id",
    "memory_id",
    "memory__topic",
    "memory__content",
    "next_review",
    "easiness",
    "interval_days",
    "repetitions",
    "fsrs_state",
    "version",
)


def _queue_item(row: dict[str, Any], priority: float, *, is_new: bool) -> QueueItem:
    return QueueItem(
        card_id=row["id"],
        memory_id=row["memory_id"],
        deck=row["memory__topic"],
        content=row["memory__content"],
        next_review=row["next_review"],
        easiness=row["easiness"],
        interval_days=row["interval_days"],
        repetitions=row["repetitions"],
        version=row["version"],
        priority=priority,
        is_new=is_new,
    )


def _row_state(row: dict[str, Any]) -> CardState:
    return CardState(
        easiness=row["easiness"],
        interval_days=row["interval_days"],
        repetitions=row["repetitions"],
        next_review=row["next_review"],
        fsrs=row["fsrs_state"],
    )


def due_cards(
    *,
    namespace: Namespace,
    tz: ZoneInfo,
    now: datetime | None = None,
    deck: str | None = None,
    ceiling: int | None = None,
) -> CardQuerySet:
    """Reviewable cards due today in tz (next review before the start of tomorrow)."""
    _, tomorrow = local_day_bounds(tz, now or timezone.now())
    return (
        Card.objects.in_namespace(namespace).reviewable(ceiling).in_deck(deck).due_before(tomorrow)
    )


def review_queue(
    *,
    namespace: Namespace,
    tz: ZoneInfo,
    now: datetime | None = None,
    deck: str | None = None,
    limit: int = DEFAULT_QUEUE_LIMIT,
    include_new: bool = True,
    ceiling: int | None = None,
) -> ReviewQueue:
    """Today's queue: due cards by PriorityScore, then new cards within the daily limit.

    Priority is exact within a window of the `limit * QUEUE_WINDOW_FACTOR` oldest due
    cards (by next_review), read with one index range scan on Card(namespace,
    next_review, id) and a LIMIT; a card outside the window is due later than all of
    them, so it can only outrank them by a lower EF or fewer repetitions (SM-2) or a lower
    stability (FSRS). docs/review.md explains the trade.
    """
    now = now or timezone.now()
    if limit <= 0:
        return ReviewQueue(due=[], new=[])
    scheduler = scheduler_for(namespace)
    window = list(
        due_cards(namespace=namespace, tz=tz, now=now, deck=deck, ceiling=ceiling)
        .order_by("next_review", "id")
        .values(*_QUEUE_FIELDS)[: limit * QUEUE_WINDOW_FACTOR]
    )
    scored = [(scheduler.priority(_row_state(row), now), row) for row in window]
    scored.sort(key=lambda pair: (-pair[0], pair[1]["next_review"], pair[1]["id"]))
    due = [_queue_item(row, priority, is_new=False) for priority, row in scored[:limit]]
    new: list[QueueItem] = []
    if include_new and len(due) < limit:
        new = new_cards_for_today(
            namespace=namespace,
            tz=tz,
            now=now,
            deck=deck,
            limit=limit - len(due),
            ceiling=ceiling,
        )
    return ReviewQueue(due=due, new=new)


def new_cards_introduced_today(
    *,
    namespace: Namespace,
    tz: ZoneInfo,
    now: datetime | None = None,
    ceiling: int | None = None,
) -> dict[str, int]:
    """Per deck, how many cards had their first review today (the daily new-card budget).

    Only cards within the caller's ceiling count: a budget used up by hidden cards would
    tell a lower caller that hidden cards of that deck exist and were studied today.
    """
    today, tomorrow = local_day_bounds(tz, now or timezone.now())
    cards = Card.objects.in_namespace(namespace)
    if ceiling is not None:
        cards = cards.filter(memory__classification__lte=ceiling)
    rows = (
        cards.filter(first_reviewed_at__gte=today, first_reviewed_at__lt=tomorrow)
        .values("memory__topic")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {row["memory__topic"]: row["n"] for row in rows}


def new_cards_for_today(
    *,
    namespace: Namespace,
    tz: ZoneInfo,
    now: datetime | None = None,
    deck: str | None = None,
    limit: int = DEFAULT_QUEUE_LIMIT,
    ceiling: int | None = None,
) -> list[QueueItem]:
    """New cards still allowed today: per deck, new_cards_per_day minus those already
    introduced today, oldest first (the order they were added, as Anki does)."""
    now = now or timezone.now()
    per_deck = namespace.new_cards_per_day
    if per_deck <= 0 or limit <= 0:
        return []
    introduced = new_cards_introduced_today(namespace=namespace, tz=tz, now=now, ceiling=ceiling)
    # Number each deck's new cards in the database, keep the first `per_deck` of each:
    # the result is at most per_deck rows per deck whatever the backlog of new cards.
    ranked = (
        Card.objects.in_namespace(namespace)
        .reviewable(ceiling)
        .in_deck(deck)
        .new()
        .annotate(
            rank=Window(
                RowNumber(),
                partition_by=[F("memory__topic")],
                order_by=[F("created_at").asc(), F("id").asc()],
            )
        )
        .filter(rank__lte=per_deck)
        .values(*_QUEUE_FIELDS, "created_at", "rank")
    )
    allowed = [
        row for row in ranked if row["rank"] <= per_deck - introduced.get(row["memory__topic"], 0)
    ]
    allowed.sort(key=lambda row: (row["created_at"], row["id"]))
    return [_queue_item(row, 0.0, is_new=True) for row in allowed[:limit]]


# --- Decks and statistics --------------------------------------------------------------


@dataclass(frozen=True)
class DeckStats:
    """Card counts of one deck (or of the whole namespace when deck is None)."""

    deck: str | None
    total: int
    due_today: int
    learned: int
    new: int
    new_available_today: int = 0


def _card_counts(tomorrow: datetime) -> dict[str, Any]:
    return {
        "total": Count("id"),
        "due_today": Count("id", filter=Q(next_review__lt=tomorrow)),
        "learned": Count("id", filter=Q(repetitions__gte=LEARNED_REPETITIONS)),
        "new": Count("id", filter=Q(next_review__isnull=True)),
    }


def deck_statistics(
    *, namespace: Namespace, tz: ZoneInfo, now: datetime | None = None, ceiling: int | None = None
) -> list[DeckStats]:
    """Every deck with its counts and today's remaining new cards, in one grouped query."""
    now = now or timezone.now()
    _, tomorrow = local_day_bounds(tz, now)
    cards = Card.objects.in_namespace(namespace).reviewable(ceiling)
    rows = (
        cards.values("memory__topic").annotate(**_card_counts(tomorrow)).order_by("memory__topic")
    )
    introduced = new_cards_introduced_today(namespace=namespace, tz=tz, now=now, ceiling=ceiling)
    per_deck = namespace.new_cards_per_day
    return [
        DeckStats(
            deck=row["memory__topic"],
            total=row["total"],
            due_today=row["due_today"],
            learned=row["learned"],
            new=row["new"],
            new_available_today=min(
                row["new"], max(0, per_deck - introduced.get(row["memory__topic"], 0))
            ),
        )
        for row in rows
    ]


@dataclass(frozen=True)
class ReviewStats:
    """Statistics of a namespace or one of its decks; see docs/review.md for definitions."""

    cards: DeckStats
    reviews: int
    retention: float | None
    reviews_last_30_days: int
    retention_last_30_days: float | None
    streak: int
    reviews_per_day: list[tuple[date, int]] = field(default_factory=list)
    forecast: list[tuple[date, int]] = field(default_factory=list)


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def counted_logs(
    *, namespace: Namespace, deck: str | None = None, ceiling: int | None = None
) -> QuerySet[ReviewLog]:
    """Grades that count in statistics: scheduling grades that were not undone (of memories
    within the caller's ceiling)."""
    logs = ReviewLog.objects.filter(
        namespace=namespace, mode=ReviewLog.Mode.NORMAL, undone_at__isnull=True
    )
    if ceiling is not None:
        logs = logs.filter(card__memory__classification__lte=ceiling)
    return logs if deck is None else logs.filter(card__memory__topic=deck)


def review_statistics(
    *,
    namespace: Namespace,
    tz: ZoneInfo,
    now: datetime | None = None,
    deck: str | None = None,
    ceiling: int | None = None,
) -> ReviewStats:
    """Counts, retention, streak, reviews per day and the due forecast, all aggregated in SQL."""
    now = now or timezone.now()
    _, tomorrow = local_day_bounds(tz, now)
    today = timezone.localtime(now, tz).date()

    cards = Card.objects.in_namespace(namespace).reviewable(ceiling).in_deck(deck)
    counts = cards.aggregate(**_card_counts(tomorrow))
    new_available = 0
    if counts["new"]:
        decks = deck_statistics(namespace=namespace, tz=tz, now=now, ceiling=ceiling)
        new_available = sum(s.new_available_today for s in decks if deck in (None, s.deck))
    card_stats = DeckStats(deck=deck, new_available_today=new_available, **counts)

    logs = counted_logs(namespace=namespace, deck=deck, ceiling=ceiling)
    window_start = _day_start(today - timedelta(days=REVIEWS_PER_DAY_DAYS - 1), tz)
    totals = logs.aggregate(
        reviews=Count("id"),
        passed=Count("id", filter=Q(grade__gte=PASSING_QUALITY)),
        recent=Count("id", filter=Q(reviewed_at__gte=window_start, reviewed_at__lt=tomorrow)),
        recent_passed=Count(
            "id",
            filter=Q(
                reviewed_at__gte=window_start,
                reviewed_at__lt=tomorrow,
                grade__gte=PASSING_QUALITY,
            ),
        ),
    )

    per_day = dict(
        logs.filter(reviewed_at__gte=window_start, reviewed_at__lt=tomorrow)
        .annotate(day=TruncDate("reviewed_at", tzinfo=tz))
        .values("day")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("day", "n")
    )
    days = [today - timedelta(days=back) for back in range(REVIEWS_PER_DAY_DAYS - 1, -1, -1)]
    reviews_per_day = [(day, per_day.get(day, 0)) for day in days]

    return ReviewStats(
        cards=card_stats,
        reviews=totals["reviews"],
        retention=_ratio(totals["passed"], totals["reviews"]),
        reviews_last_30_days=totals["recent"],
        retention_last_30_days=_ratio(totals["recent_passed"], totals["recent"]),
        streak=_streak(logs=logs, tz=tz, today=today, tomorrow=tomorrow),
        reviews_per_day=reviews_per_day,
        forecast=_forecast(cards=cards, tz=tz, today=today, due_today=counts["due_today"]),
    )


def _streak(*, logs: QuerySet[ReviewLog], tz: ZoneInfo, today: date, tomorrow: datetime) -> int:
    """Consecutive local days with a review, ending today, or yesterday while today has no
    review yet (a streak only breaks once a whole day passes without one)."""
    days = (
        logs.filter(reviewed_at__lt=tomorrow)
        .annotate(day=TruncDate("reviewed_at", tzinfo=tz))
        .values_list("day", flat=True)
        .distinct()
        .order_by("-day")
        .iterator(chunk_size=64)
    )
    # Distinct days newest first, stopping at the first gap: one row read per streak day.
    latest = next(days, None)
    if latest is None or latest < today - timedelta(days=1):
        return 0
    streak, expected = 1, latest - timedelta(days=1)
    for day in days:
        if day != expected:
            break
        streak += 1
        expected = day - timedelta(days=1)
    return streak


def _forecast(
    *, cards: CardQuerySet, tz: ZoneInfo, today: date, due_today: int
) -> list[tuple[date, int]]:
    """Cards due on each of the next FORECAST_DAYS local days; today's count includes the
    overdue ones, because that is what today's queue holds."""
    first = _day_start(today + timedelta(days=1), tz)
    end = _day_start(today + timedelta(days=FORECAST_DAYS), tz)
    per_day = dict(
        cards.filter(next_review__gte=first, next_review__lt=end)
        .annotate(day=TruncDate("next_review", tzinfo=tz))
        .values("day")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("day", "n")
    )
    per_day[today] = due_today
    return [
        (day, per_day.get(day, 0))
        for day in (today + timedelta(days=ahead) for ahead in range(FORECAST_DAYS))
    ]


# --- Sessions --------------------------------------------------------------------------
#
# A session is a snapshot of cards taken by whoever started it, and it can be read or
# carried on by another caller of the same person (a token with a lower ceiling), or its
# memories can be reclassified or forgotten meanwhile. Every count, score, deck name and
# next card of a session is therefore taken over the items the caller is shown, here.


def _shown_items(
    items: QuerySet[StudySessionItem], *, ceiling: int | None, live_only: bool
) -> QuerySet[StudySessionItem]:
    if ceiling is not None:
        items = items.filter(card__memory__classification__lte=ceiling)
    if live_only:
        items = items.filter(card__memory__status__in=LIVE_STATUSES)
    return items


def session_items(
    *, session: StudySession, ceiling: int | None, live_only: bool = True
) -> QuerySet[StudySessionItem]:
    """The session's items the caller is shown: cards within its ceiling (None: any) and,
    with live_only, of live memories (the API cannot grade the others, so they would
    never be done). Hidden items neither show nor count."""
    return _shown_items(session.items.all(), ceiling=ceiling, live_only=live_only)


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
    """Where a session stands for one caller; `next_item` is None once it is finished for
    that caller: ended, or every card it is shown is done."""

    total: int
    done: int
    graded: int
    attempts: int
    remaining: int
    next_item: StudySessionItem | None

    @property
    def finished(self) -> bool:
        return self.next_item is None


def study_session_progress(
    *, session: StudySession, ceiling: int | None, live_only: bool = True
) -> SessionProgress:
    """Counts and the next card of a study or cram session over the items the caller is
    shown (what a resumed page shows); hidden cards are skipped, never a dead end."""
    items = session_items(session=session, ceiling=ceiling, live_only=live_only)
    counts = items.aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(done=True)),
        graded=Count("id", filter=Q(first_grade__isnull=False) | Q(correct__isnull=False)),
        attempts=Coalesce(Sum("attempts"), 0),
    )
    next_item = None
    if session.is_active:
        next_item = (
            items.filter(done=False)
            .select_related("card__memory")
            .order_by("position", "id")
            .first()
        )
    return SessionProgress(
        total=counts["total"],
        done=counts["done"],
        graded=counts["graded"],
        attempts=counts["attempts"],
        remaining=counts["total"] - counts["done"],
        next_item=next_item,
    )


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
