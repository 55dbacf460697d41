"""Deck options: a deck (a topic of a namespace) may set its own new cards per day; without
one it inherits the namespace's (review.selectors.queue.new_card_limits reads them)."""

from __future__ import annotations

from django.db import transaction

from memories.models import Namespace
from review.models import DeckOptions
from review.services.errors import InvalidRequest

MAX_NEW_CARDS_PER_DAY = 1000
MAX_DECK_LENGTH = DeckOptions._meta.get_field("topic").max_length


@transaction.atomic
def deck_options_set(*, namespace: Namespace, deck: str, new_cards_per_day: int | None) -> None:
    """Set a deck's new cards per day, or with None go back to the namespace's. Every
    writer (API, dashboard) comes through here, so the bounds are checked once."""
    if not isinstance(deck, str) or len(deck) > MAX_DECK_LENGTH or "\x00" in deck:
        raise InvalidRequest(
            f"A deck is a topic of at most {MAX_DECK_LENGTH} characters, without NUL.",
            field="deck",
        )
    if new_cards_per_day is None:
        DeckOptions.objects.filter(namespace=namespace, topic=deck).delete()
        return
    if (
        isinstance(new_cards_per_day, bool)
        or not isinstance(new_cards_per_day, int)
        or not 0 <= new_cards_per_day <= MAX_NEW_CARDS_PER_DAY
    ):
        raise InvalidRequest(
            f"New cards per day is a whole number from 0 to {MAX_NEW_CARDS_PER_DAY}, "
            "or empty to use the namespace's.",
            field="new_cards_per_day",
        )
    DeckOptions.objects.update_or_create(
        namespace=namespace, topic=deck, defaults={"new_cards_per_day": new_cards_per_day}
    )
