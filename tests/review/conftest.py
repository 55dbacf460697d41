from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from config.db import is_postgres
from memories import services as memory_services
from memories.models import Namespace
from review.models import Card
from review.services import card_ensure

# 11:00 in New York (EDT since 9 March 2025); the local day runs 04:00-04:00 UTC.
NOW = datetime(2025, 3, 10, 15, 0, tzinfo=UTC)
TZ = ZoneInfo("America/New_York")

requires_postgresql = pytest.mark.skipif(
    not is_postgres(),
    reason="needs real concurrent transactions and row locks: run with a PostgreSQL DATABASE_URL",
)


@pytest.fixture(params=["sm2", "fsrs"])
def scheduler_name(request) -> str:
    """Every rule is checked under both scheduling engines."""
    return request.param


@pytest.fixture
def study_ns(user, scheduler_name) -> Namespace:
    return memory_services.namespace_create(
        owner=user, name="Study", mode=Namespace.Mode.PERSONAL, scheduler=scheduler_name
    )


@pytest.fixture
def make_card(study_ns):
    """A memory with its card, its scheduling fields set directly."""

    def make(
        content: str = "Paris is the capital of France.",
        *,
        topic: str = "geo",
        namespace: Namespace | None = None,
        created_at: datetime | None = None,
        **card_fields,
    ) -> Card:
        memory = memory_services.memory_create(
            namespace=namespace or study_ns,
            content=content,
            topic=topic,
            created_at=created_at or NOW,
        )
        card = card_ensure(memory=memory)
        fields = {"created_at": created_at or NOW, **card_fields}
        Card.objects.filter(pk=card.pk).update(**fields)
        card.refresh_from_db()
        return card

    return make


@pytest.fixture
def three_due(make_card):
    """Three due cards in priority order a, b, c (most overdue first), and one new card."""
    a = make_card("a", next_review=NOW - timedelta(days=20), repetitions=2, interval_days=6)
    b = make_card("b", next_review=NOW - timedelta(days=10), repetitions=2, interval_days=6)
    c = make_card("c", topic="math", next_review=NOW - timedelta(days=5), repetitions=2)
    new = make_card("new", topic="math")
    return a, b, c, new


def card_row(card: Card) -> dict:
    """Every column of the card as stored."""
    return Card.objects.filter(pk=card.pk).values().get()
