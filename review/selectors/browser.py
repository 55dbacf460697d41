"""The card browser (issue 17, item 6): a person's cards with their state, filtered by
namespace, deck and state and sorted by due date, ease, lapses or decay score, a page at a
time without a query per card.

A card's state, in this order: suspended, buried (until later today or tomorrow), new (never
scheduled), learning (its last grade brought it back within the learning horizon, the
learning steps of review.services.sessions), review. A leech is tagged apart (it is
suspended too, until a person unsuspends it). Only cards the review queue could show are
listed: memories not forgotten or archived, not superseded, within the caller's ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Case, F, FloatField, OrderBy, Q, QuerySet, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from memories.auth import Scope
from memories.models import LIVE_STATUSES, Namespace
from memories.score_sql import params_cte, scored_memories_sql
from memories.sweep import SweepConfig
from review.models import Card

NEW, LEARNING, REVIEW, SUSPENDED, BURIED, LEECH = (
    "new",
    "learning",
    "review",
    "suspended",
    "buried",
    "leech",
)
CARD_STATES = (
    (NEW, "New"),
    (LEARNING, "Learning"),
    (REVIEW, "Review"),
    (SUSPENDED, "Suspended"),
    (BURIED, "Buried"),
    (LEECH, "Leech"),
)
# Sorts: due first (new cards last), hardest first (SM-2's lowest easiness, FSRS's highest
# difficulty; the two scales differ, so FSRS cards come before SM-2 cards), most lapses
# first, weakest decay score first.
CARD_SORTS = (
    ("due", "Due date"),
    ("ease", "Ease (hardest first)"),
    ("lapses", "Lapses (most first)"),
    ("score", "Decay score (weakest first)"),
)
FSRS = Namespace.SchedulerKind.FSRS


def card_state_expression(now: datetime, learning_horizon: timedelta) -> Case:
    """A card's state (the module's order) as SQL, for filtering and showing."""
    return Case(
        When(suspended_at__isnull=False, then=Value(SUSPENDED)),
        When(buried_until__gt=now, then=Value(BURIED)),
        When(next_review__isnull=True, then=Value(NEW)),
        When(
            last_reviewed_at__isnull=False,
            next_review__lt=F("last_reviewed_at") + learning_horizon,
            then=Value(LEARNING),
        ),
        default=Value(REVIEW),
    )


def _difficulty() -> Cast:
    return Cast(KT("fsrs_state__difficulty"), FloatField())


def card_ease_expression() -> Case:
    """What the browser shows as ease: SM-2's easiness factor, FSRS's difficulty (1-10)."""
    return Case(
        When(scheduler=FSRS, then=_difficulty()),
        default=F("easiness"),
        output_field=FloatField(),
    )


_ORDERINGS: dict[str, tuple[Any, ...]] = {
    "due": (F("next_review").asc(nulls_last=True), "id"),
    "ease": (
        OrderBy(
            Case(
                When(scheduler=FSRS, then=-_difficulty()),
                default=F("easiness"),
                output_field=FloatField(),
            ),
            nulls_last=True,
        ),
        F("next_review").asc(nulls_last=True),
        "id",
    ),
    "lapses": ("-lapses", F("next_review").asc(nulls_last=True), "id"),
}


def browser_cards(
    *,
    scope: Scope,
    now: datetime,
    learning_horizon: timedelta,
    namespace: Namespace | None = None,
    deck: str | None = None,
    state: str | None = None,
) -> QuerySet[Card]:
    """The cards the browser may list, filtered, each with `state` and `ease` and its
    memory and namespace loaded (one query for a page of them)."""
    cards = (
        Card.objects.filter(memory__in=scope.memories())
        .filter(memory__status__in=LIVE_STATUSES)
        .filter(Q(memory__valid_until__isnull=True) | Q(memory__valid_until__gt=now))
        .select_related("memory", "memory__namespace")
        .annotate(state=card_state_expression(now, learning_horizon), ease=card_ease_expression())
    )
    if namespace is not None:
        cards = cards.filter(namespace=namespace)
    if deck is not None:
        cards = cards.filter(memory__topic=deck)
    if state == LEECH:
        cards = cards.filter(leech=True)
    elif state:
        cards = cards.filter(state=state)
    return cards


# The "(no topic)" deck's value in the card browser's query string and deck filter: there
# "" (the select's "All decks") means every deck, as an absent deck does in the API. A topic
# may be any text, "(no topic)" too: a topic that would read as another value (that one, or
# one starting with the escape) is sent with a backslash in front, so no two decks share one.
NO_TOPIC_DECK = "(no topic)"
_ESCAPE = "\\"


def browser_deck_param(deck: str) -> str:
    """The browser's `deck` value that names this deck (a topic; "" the no-topic deck)."""
    if not deck:
        return NO_TOPIC_DECK
    if deck == NO_TOPIC_DECK or deck.startswith(_ESCAPE):
        return _ESCAPE + deck
    return deck


def browser_deck(param: str) -> str:
    """The deck a browser `deck` value names (browser_deck_param's inverse): a topic, or
    "" for the no-topic deck."""
    if param == NO_TOPIC_DECK:
        return ""
    return param.removeprefix(_ESCAPE)


def browser_decks(cards: QuerySet[Card]) -> list[str]:
    """The decks (topics) of these cards, in order, in one query."""
    return list(cards.order_by("memory__topic").values_list("memory__topic", flat=True).distinct())


@dataclass
class ScoreOrdered:
    """Cards in decay-score order (weakest first) for a Paginator: the score is the
    sweep's own SQL (memories.score_sql), so the order is the one the sweep acts on. A page
    is two queries whatever its size: the ordered ids, then the cards."""

    cards: QuerySet[Card]
    now: datetime
    ordered = True  # for the Paginator

    def count(self) -> int:
        return self.cards.count()

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, window: slice) -> list[Card]:
        start, stop = window.start or 0, window.stop
        sub_sql, sub_params = self.cards.order_by().values("memory_id").query.sql_with_params()
        p_sql, p_params = params_cte(SweepConfig.from_settings(), self.now)
        scored = scored_memories_sql(where=f"m.id IN ({sub_sql})")
        sql = f"WITH {p_sql}, {scored} SELECT id FROM scored ORDER BY score, id LIMIT %s OFFSET %s"
        with connection.cursor() as cursor:
            cursor.execute(sql, [*p_params, *sub_params, stop - start, start])
            order = [row[0] for row in cursor.fetchall()]
        found = {card.memory_id: card for card in self.cards.filter(memory_id__in=order)}
        return [found[pk] for pk in order if pk in found]


def browser_page_source(cards: QuerySet[Card], *, sort: str, now: datetime) -> Any:
    """What a Paginator pages through for `sort` (a key of CARD_SORTS)."""
    if sort == "score":
        return ScoreOrdered(cards, now)
    return cards.order_by(*_ORDERINGS[sort])
