"""The daily review queue: due cards by priority, then the new cards the daily limit allows.

"Today" is always the user's local date: selectors take the user's `tz` and `now`, and a
card is due today when its next review falls before the start of tomorrow in `tz`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import Count, F
from django.db.models.expressions import Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from memories.models import Namespace
from review.models import Card, CardQuerySet, DeckOptions
from review.schedulers import CardState
from review.selectors.cards import scheduler_for

# The due queue orders by priority only the oldest `limit * QUEUE_WINDOW_FACTOR` due
# cards (by next_review), so it stays one index range scan whatever the backlog.
QUEUE_WINDOW_FACTOR = 2
DEFAULT_QUEUE_LIMIT = 50


def local_day_bounds(
    tz: ZoneInfo, now: datetime, offset_days: int = 0
) -> tuple[datetime, datetime]:
    """Start of the local day `offset_days` after today and the start of the day after it."""
    day = timezone.localtime(now, tz).date() + timedelta(days=offset_days)
    return day_start(day, tz), day_start(day + timedelta(days=1), tz)


def day_start(day: date, tz: ZoneInfo) -> datetime:
    # Midnight in tz; zoneinfo resolves DST gaps by fold=0, good enough for a day boundary.
    return datetime.combine(day, time.min, tzinfo=tz)


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


@dataclass(frozen=True)
class NewCardLimits:
    """New cards per day for each deck of a namespace: a deck's own option where it has
    one (DeckOptions), else the namespace's."""

    default: int
    decks: dict[str, int]

    def of(self, deck: str) -> int:
        return self.decks.get(deck, self.default)

    @property
    def most(self) -> int:
        return max([self.default, *self.decks.values()])


def new_card_limits(namespace: Namespace) -> NewCardLimits:
    """The namespace's new-cards-per-day limits, deck options applied (one query)."""
    overrides = DeckOptions.objects.filter(
        namespace=namespace, new_cards_per_day__isnull=False
    ).values_list("topic", "new_cards_per_day")
    return NewCardLimits(default=namespace.new_cards_per_day, decks=dict(overrides))


def new_cards_for_today(
    *,
    namespace: Namespace,
    tz: ZoneInfo,
    now: datetime | None = None,
    deck: str | None = None,
    limit: int = DEFAULT_QUEUE_LIMIT,
    ceiling: int | None = None,
) -> list[QueueItem]:
    """New cards still allowed today: per deck, its new cards per day (the deck's option,
    else the namespace's) minus those already introduced today, oldest first (the order
    they were added, as Anki does)."""
    now = now or timezone.now()
    limits = new_card_limits(namespace)
    per_deck = limits.most
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
        row
        for row in ranked
        if row["rank"] <= limits.of(row["memory__topic"]) - introduced.get(row["memory__topic"], 0)
    ]
    allowed.sort(key=lambda row: (row["created_at"], row["id"]))
    return [_queue_item(row, 0.0, is_new=True) for row in allowed[:limit]]
