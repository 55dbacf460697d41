"""memories.hooks: the one way review and recall react to memories' writes.

The receivers are pinned by name, so one cannot vanish (or a new one appear) unnoticed, and
each reaction is checked through the real service that triggers it.
"""

from __future__ import annotations

import pytest
from django.db import transaction

from memories import hooks, services
from memories.models import Memory, Namespace
from memories.tracking import memories_track_recall
from review.models import Card


def receivers(signal) -> set[str]:
    return {f"{r.__module__}.{r.__qualname__}" for r in signal._live_receivers(Memory)[0]}


def test_it_connects_exactly_the_documented_receivers():
    assert receivers(hooks.memories_created) == {"review.receivers.cards_for_created_memories"}
    assert receivers(hooks.memories_imported) == {"recall.receivers.codes_for_imported_memories"}
    assert receivers(hooks.memories_recalled) == {"review.receivers.implicit_reviews_for_recalled"}
    parts = {type(part).__qualname__: part.record_types for part in hooks.transfer_parts()}
    assert parts == {"CardsTransferPart": ("card", "review_log")}


def test_it_refuses_a_record_type_registered_twice():
    class Again:
        record_types = ("card",)

    with pytest.raises(ValueError, match="card"):
        hooks.transfer_part_register(Again())
    assert len(hooks.transfer_parts()) == 1


def test_a_personal_memory_gets_its_card_in_the_creating_transaction(namespace):
    assert namespace.mode == Namespace.Mode.PERSONAL
    memory = services.memory_create(namespace=namespace, content="Cards come with memories")
    assert Card.objects.filter(memory=memory).count() == 1
    made = services.memory_bulk_create(
        items=[{"namespace": namespace, "content": f"Bulk fact {i}"} for i in range(3)]
    )
    assert Card.objects.filter(memory__in=made).count() == 3


def test_an_agent_namespace_memory_gets_no_card(user):
    agent = services.namespace_create(owner=user, name="Bot", mode=Namespace.Mode.AGENT_MEMORY)
    memory = services.memory_create(namespace=agent, content="Agents keep their own")
    assert not Card.objects.filter(memory=memory).exists()


def test_a_failing_receiver_rolls_the_memory_back(namespace):
    def broken(**kwargs):
        raise RuntimeError("receiver failed")

    hooks.memories_created.connect(broken, sender=Memory, dispatch_uid="test.broken")
    try:
        with pytest.raises(RuntimeError), transaction.atomic():
            services.memory_create(namespace=namespace, content="Never stored")
    finally:
        hooks.memories_created.disconnect(sender=Memory, dispatch_uid="test.broken")
    assert not Memory.objects.filter(content="Never stored").exists()


def test_tracking_announces_the_direct_hits_only(make_memory):
    direct, associative = make_memory("Direct hit"), make_memory("Associated")
    seen = []

    def listen(**kwargs):
        seen.append((kwargs["memory_ids"], kwargs["token"]))

    hooks.memories_recalled.connect(listen, sender=Memory, dispatch_uid="test.listen")
    try:
        memories_track_recall(
            direct_ids=[direct.pk],
            associative_ids=[associative.pk],
            now=direct.created_at,
        )
    finally:
        hooks.memories_recalled.disconnect(sender=Memory, dispatch_uid="test.listen")
    assert seen == [([direct.pk], None)]
    direct.refresh_from_db()
    associative.refresh_from_db()
    assert (direct.recall_count, direct.use_count) == (1, 1)
    assert (associative.recall_count, associative.use_count) == (1, 0)
