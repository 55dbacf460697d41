"""Review's actions on the memories a person selects on the memory list (issue 17, items 5
and 6): suspend, unsuspend, bury until tomorrow, unbury and review now, each one set-based
card service over the selection. review.receivers registers them in memories.hooks, so
memories offers them without importing review."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from config.web import user_tz
from memories.hooks import BulkAction
from memories.models import Memory
from review import selectors
from review.services import (
    card_reschedule_now,
    cards_bury,
    cards_suspend,
    cards_unbury,
    cards_unsuspend,
)


def suspend(*, memories: QuerySet[Memory], now: datetime, **_: Any) -> int:
    return cards_suspend(memories=memories, now=now)


def unsuspend(*, memories: QuerySet[Memory], **_: Any) -> int:
    return cards_unsuspend(memories=memories)


def bury(*, memories: QuerySet[Memory], now: datetime, **_: Any) -> int:
    """Until the start of the person's tomorrow, as burying a card while studying does."""
    _, tomorrow = selectors.local_day_bounds(user_tz(), now)
    return cards_bury(memories=memories, until=tomorrow)


def unbury(*, memories: QuerySet[Memory], **_: Any) -> int:
    return cards_unbury(memories=memories)


def review_now(*, memories: QuerySet[Memory], now: datetime, **_: Any) -> int:
    """Due now; a memory without a card (an agent namespace's) gets one."""
    return card_reschedule_now(memories=memories, now=now)


REVIEW_BULK_ACTIONS = (
    BulkAction(
        name="suspend",
        label="Suspend cards",
        run=suspend,
        question="Suspend the cards of {count} {memories}?",
        done="Suspended {count} card{s}.",
    ),
    BulkAction(
        name="unsuspend",
        label="Unsuspend cards",
        run=unsuspend,
        question="Unsuspend the cards of {count} {memories}?",
        done="Unsuspended {count} card{s}.",
    ),
    BulkAction(
        name="bury",
        label="Bury cards until tomorrow",
        run=bury,
        question="Bury the cards of {count} {memories} until tomorrow?",
        done="Buried {count} card{s} until tomorrow.",
    ),
    BulkAction(
        name="unbury",
        label="Unbury cards",
        run=unbury,
        question="Unbury the cards of {count} {memories}?",
        done="Unburied {count} card{s}.",
    ),
    BulkAction(
        name="review_now",
        label="Schedule for review now",
        run=review_now,
        question="Schedule {count} {memories} for review now?",
        done="{count} card{s} due now.",
    ),
)
