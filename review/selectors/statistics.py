"""Deck overviews and review statistics: counts, retention, streak, reviews per day and the
due forecast, each aggregated in SQL over the user's local days.

Statistics are the person's: reviews, retention, streak and reviews per day count only
grades whose source is the person (`PERSON_SOURCE`); the simulated worker's and agents'
implicit grades are counted apart, as `AgentReinforcement`. Answer times (ReviewLog.duration_ms)
are the person's too, and a grade without one is left out of the times, not counted as 0."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from memories.models import Namespace
from review.models import Card, CardQuerySet, ReviewLog
from review.selectors.queue import (
    day_start,
    local_day_bounds,
    new_card_limits,
    new_cards_introduced_today,
)
from review.sm2 import PASSING_QUALITY

LEARNED_REPETITIONS = 2
REVIEWS_PER_DAY_DAYS = 30
# The home page's heatmap: reviews per day over the last year, today included.
HEATMAP_DAYS = 365
FORECAST_DAYS = 14
RETENTION_RECENT_DAYS = 30
# The one rule for "the person's grades": a button pressed by a person (docs/review.md).
PERSON_SOURCE = ReviewLog.Source.HUMAN
AGENT_SOURCES = (ReviewLog.Source.SIMULATED, ReviewLog.Source.IMPLICIT)


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
    limits = new_card_limits(namespace)
    return [
        DeckStats(
            deck=row["memory__topic"],
            total=row["total"],
            due_today=row["due_today"],
            learned=row["learned"],
            new=row["new"],
            new_available_today=min(
                row["new"],
                max(
                    0,
                    limits.of(row["memory__topic"]) - introduced.get(row["memory__topic"], 0),
                ),
            ),
        )
        for row in rows
    ]


@dataclass(frozen=True)
class AgentReinforcement:
    """Counted grades that were not the person's: the simulated recall worker's and agents'
    implicit ones (all time, and today for both together)."""

    simulated: int = 0
    implicit: int = 0
    today: int = 0

    @property
    def total(self) -> int:
        return self.simulated + self.implicit


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
    agent_reinforcement: AgentReinforcement = field(default_factory=AgentReinforcement)
    # Answer times: the mean over the person's timed grades (None without one), how many
    # were timed, and each of the 30 days' total in ms (None for a day without one).
    average_answer_ms: float | None = None
    timed_reviews: int = 0
    time_per_day: list[tuple[date, int | None]] = field(default_factory=list)
    # Reviews per day over the last HEATMAP_DAYS days, oldest first (the heatmap).
    reviews_per_day_year: list[tuple[date, int]] = field(default_factory=list)

    @property
    def reviews_today(self) -> int:
        return self.reviews_per_day[-1][1] if self.reviews_per_day else 0

    @property
    def time_today_ms(self) -> int | None:
        return self.time_per_day[-1][1] if self.time_per_day else None


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def counted_logs(
    *,
    namespace: Namespace,
    deck: str | None = None,
    ceiling: int | None = None,
    person_only: bool = True,
) -> QuerySet[ReviewLog]:
    """Grades that count in statistics: the person's scheduling grades that were not undone
    (of memories within the caller's ceiling); every source's with person_only=False."""
    logs = ReviewLog.objects.filter(
        namespace=namespace, mode=ReviewLog.Mode.NORMAL, undone_at__isnull=True
    )
    if person_only:
        logs = logs.filter(source=PERSON_SOURCE)
    if ceiling is not None:
        # Of memories within the ceiling now, and given while they were (a declassified
        # memory's earlier grades keep its level then).
        logs = logs.filter(card__memory__classification__lte=ceiling, classification__lte=ceiling)
    return logs if deck is None else logs.filter(card__memory__topic=deck)


def review_statistics(
    *,
    namespace: Namespace,
    tz: ZoneInfo,
    now: datetime | None = None,
    deck: str | None = None,
    ceiling: int | None = None,
) -> ReviewStats:
    """Counts, retention, streak, answer times, reviews per day (30 days and the year) and the
    due forecast, all aggregated in SQL."""
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
    window_start = day_start(today - timedelta(days=REVIEWS_PER_DAY_DAYS - 1), tz)
    person = Q(source=PERSON_SOURCE)
    recent = Q(reviewed_at__gte=window_start, reviewed_at__lt=tomorrow)
    # One pass over every source's counted grades: the person's figures and, apart, the
    # agents' reinforcement.
    totals = counted_logs(
        namespace=namespace, deck=deck, ceiling=ceiling, person_only=False
    ).aggregate(
        reviews=Count("id", filter=person),
        passed=Count("id", filter=person & Q(grade__gte=PASSING_QUALITY)),
        recent=Count("id", filter=person & recent),
        recent_passed=Count("id", filter=person & recent & Q(grade__gte=PASSING_QUALITY)),
        timed=Count("duration_ms", filter=person),
        answer_ms=Sum("duration_ms", filter=person),
        simulated=Count("id", filter=Q(source=ReviewLog.Source.SIMULATED)),
        implicit=Count("id", filter=Q(source=ReviewLog.Source.IMPLICIT)),
        agent_today=Count(
            "id",
            filter=Q(
                source__in=AGENT_SOURCES,
                reviewed_at__gte=day_start(today, tz),
                reviewed_at__lt=tomorrow,
            ),
        ),
    )

    # One grouped query for the year (at most HEATMAP_DAYS rows): the heatmap, and the last
    # 30 days' reviews and answer time (Sum ignores untimed grades; None if all are).
    year_start = day_start(today - timedelta(days=HEATMAP_DAYS - 1), tz)
    per_day = {
        day: (n, ms)
        for day, n, ms in logs.filter(reviewed_at__gte=year_start, reviewed_at__lt=tomorrow)
        .annotate(day=TruncDate("reviewed_at", tzinfo=tz))
        .values("day")
        .annotate(n=Count("id"), ms=Sum("duration_ms"))
        .order_by()
        .values_list("day", "n", "ms")
    }
    year = [today - timedelta(days=back) for back in range(HEATMAP_DAYS - 1, -1, -1)]
    days = year[-REVIEWS_PER_DAY_DAYS:]
    reviews_per_day = [(day, per_day.get(day, (0, None))[0]) for day in days]

    return ReviewStats(
        cards=card_stats,
        reviews=totals["reviews"],
        retention=_ratio(totals["passed"], totals["reviews"]),
        reviews_last_30_days=totals["recent"],
        retention_last_30_days=_ratio(totals["recent_passed"], totals["recent"]),
        streak=_streak(logs=logs, tz=tz, today=today, tomorrow=tomorrow),
        reviews_per_day=reviews_per_day,
        forecast=_forecast(cards=cards, tz=tz, today=today, due_today=counts["due_today"]),
        agent_reinforcement=AgentReinforcement(
            simulated=totals["simulated"],
            implicit=totals["implicit"],
            today=totals["agent_today"],
        ),
        average_answer_ms=_ratio(totals["answer_ms"] or 0, totals["timed"]),
        timed_reviews=totals["timed"],
        time_per_day=[(day, per_day.get(day, (0, None))[1]) for day in days],
        reviews_per_day_year=[(day, per_day.get(day, (0, None))[0]) for day in year],
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
    first = day_start(today + timedelta(days=1), tz)
    end = day_start(today + timedelta(days=FORECAST_DAYS), tz)
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
