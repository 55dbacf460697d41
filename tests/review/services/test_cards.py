from __future__ import annotations

from datetime import timedelta

import pytest

from memories import services as memory_services
from memories.models import Memory, Namespace
from review.models import Card
from review.services import (
    card_create_for_new_memory,
    card_ensure,
    card_reschedule_now,
    cards_create_for_namespace,
)
from tests.review.conftest import NOW


def test_it_creates_a_new_card_with_the_namespace_scheduler(study_ns, scheduler_name):
    memory = memory_services.memory_create(namespace=study_ns, content="A fact", topic="facts")

    card = card_ensure(memory=memory)

    stored = Card.objects.get(memory=memory)
    assert stored.pk == card.pk
    assert stored.namespace_id == study_ns.pk
    assert stored.scheduler == scheduler_name
    assert stored.next_review is None
    assert (stored.easiness, stored.repetitions, stored.version) == (2.5, 0, 0)
    assert card_ensure(memory=memory).pk == card.pk
    assert Card.objects.count() == 1


def test_it_gives_every_new_memory_of_a_personal_namespace_a_card(study_ns):
    memory = memory_services.memory_create(namespace=study_ns, content="Personal fact")

    card = card_create_for_new_memory(memory=memory)

    assert card is not None
    assert Card.objects.filter(memory=memory).exists()


def test_it_leaves_agent_namespaces_to_the_worker(user):
    agent = memory_services.namespace_create(
        owner=user, name="Agent", mode=Namespace.Mode.AGENT_MEMORY
    )
    memory = memory_services.memory_create(namespace=agent, content="Agent fact")

    assert card_create_for_new_memory(memory=memory) is None
    assert not Card.objects.exists()
    # ...but any memory gets a card on request.
    assert card_ensure(memory=memory).namespace_id == agent.pk


def test_it_creates_missing_cards_for_a_namespace_in_one_statement(
    study_ns, scheduler_name, other_user, django_assert_max_num_queries
):
    carded = memory_services.memory_create(namespace=study_ns, content="Has a card")
    existing = card_ensure(memory=carded)
    Card.objects.filter(pk=existing.pk).update(repetitions=3, next_review=NOW)
    plain = [
        memory_services.memory_create(namespace=study_ns, content=f"Fact {i}", topic="t")
        for i in range(3)
    ]
    forgotten = memory_services.memory_create(namespace=study_ns, content="Gone")
    memory_services.memory_forget(memory=forgotten, reason="wrong")
    # Personal memories get a card when created; these stand for memories from before.
    Card.objects.filter(memory__in=[*plain, forgotten]).delete()
    elsewhere_ns = memory_services.namespace_create(
        owner=other_user, name="Elsewhere", mode=Namespace.Mode.AGENT_MEMORY
    )
    memory_services.memory_create(namespace=elsewhere_ns, content="Not mine")

    with django_assert_max_num_queries(3):
        created = cards_create_for_namespace(namespace=study_ns, now=NOW)

    assert created == 3
    cards = Card.objects.filter(memory__in=plain)
    assert cards.count() == 3
    for card in cards:
        assert card.namespace_id == study_ns.pk
        assert card.scheduler == scheduler_name
        assert card.next_review is None
        assert (card.easiness, card.interval_days, card.repetitions) == (2.5, 0, 0)
        assert (card.total_reviews, card.correct_reviews, card.version) == (0, 0, 0)
        assert card.created_at == NOW
    existing.refresh_from_db()
    assert existing.repetitions == 3
    assert not Card.objects.filter(memory=forgotten).exists()
    assert not Card.objects.filter(namespace=elsewhere_ns).exists()
    assert cards_create_for_namespace(namespace=study_ns, now=NOW) == 0
    assert Card.objects.count() == 4


def test_it_reschedules_cards_now_and_moves_their_version(make_card):
    card = make_card(next_review=NOW + timedelta(days=9), version=4)
    later = NOW + timedelta(hours=1)

    count = card_reschedule_now(memories=Memory.objects.filter(pk=card.memory_id), now=later)

    card.refresh_from_db()
    assert count == 1
    assert card.next_review == later
    assert card.version == 5


@pytest.mark.parametrize("scheduler_name", ["sm2"])
def test_it_creates_cards_on_request_when_rescheduling(study_ns):
    memory = memory_services.memory_create(namespace=study_ns, content="No card yet")

    card_reschedule_now(memories=Memory.objects.filter(pk=memory.pk), now=NOW)

    assert Card.objects.get(memory=memory).next_review == NOW
