"""The set-based bulk path (memories.bulk, memory_bulk_create) writes what the one-by-one
path writes: the same memory rows, events and cards, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import contextlib
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from memories import bulk, services
from memories.models import Classification, Memory, MemoryEvent, Namespace
from review.models import Card

# Fields the two paths fill differently by nature: the row's id and when it was written.
_PER_ROW = {"id", "updated_at", "created_at", "last_used_at"}


def _row(memory: Memory) -> dict:
    values = {}
    for field in Memory._meta.concrete_fields:
        if field.name in _PER_ROW:
            continue
        value = getattr(memory, field.attname)
        values[field.name] = bytes(value) if isinstance(value, memoryview) else value
    return values


def _items(namespace: Namespace, count: int) -> list[dict]:
    when = timezone.now() - timedelta(days=3)
    return [
        {
            "namespace": namespace,
            "content": f"Fact number {i}: café {i % 7} and tea {i % 3}",
            "keywords": [f"k{i}", " spaced "] if i % 2 else [],
            "topic": f"topic-{i % 4}",
            "strength": 1 if i % 5 == 0 else 0.25 + (i % 150) / 100,  # an int is stored as a float
            "utility": 0.5,
            "classification": Classification.CONFIDENTIAL if i % 3 else Classification.PUBLIC,
            "memory_type": Memory.MemoryType.SEMANTIC,
            "emotion_tags": ["calm"] if i % 4 == 0 else [],
            "expires_at": when + timedelta(days=30 + i) if i % 6 == 0 else None,
            "created_at": when + timedelta(seconds=i),
            "cue": "" if i % 2 else f"What is fact {i}?",
        }
        for i in range(count)
    ]


@pytest.mark.parametrize("count", [3, bulk.SMALL + 5, 260])
def test_bulk_create_writes_the_same_rows_as_one_by_one_creates(namespace, user, count):
    services.namespace_update(namespace=namespace, changes={"dedupe": "off"})  # twice the texts
    namespace.refresh_from_db()
    items = _items(namespace, count)
    created = services.memory_bulk_create(items=items, actor=user, source="api")
    singles = [services.memory_create(**item, actor=user, source="api") for item in items]

    assert len(created) == count
    assert len({memory.pk for memory in created}) == count
    for bulk_memory, single in zip(created, singles, strict=True):
        stored = Memory.objects.get(pk=bulk_memory.pk)
        assert _row(stored) == _row(Memory.objects.get(pk=single.pk))
        assert _row(stored) == _row(bulk_memory)  # the returned objects are what was stored
        assert stored.created_at == bulk_memory.created_at == stored.last_used_at
        assert bulk_memory.updated_at is not None
        assert not bulk_memory._state.adding


def test_bulk_create_records_the_same_created_events_as_one_by_one(namespace, user):
    services.namespace_update(namespace=namespace, changes={"dedupe": "off"})  # twice the texts
    namespace.refresh_from_db()
    items = _items(namespace, bulk.SMALL + 5)
    created = services.memory_bulk_create(items=items, actor=user, source="api")
    singles = [services.memory_create(**item, actor=user, source="api") for item in items]

    for bulk_memory, single in zip(created, singles, strict=True):
        event = MemoryEvent.objects.get(memory_id=bulk_memory.pk)
        reference = MemoryEvent.objects.get(memory_id=single.pk)
        assert event.kind == reference.kind == MemoryEvent.Kind.CREATED
        assert event.memory_ref == bulk_memory.pk
        assert event.namespace_id == namespace.pk
        assert event.actor_id == user.pk and event.source == "api"
        assert event.before == reference.before == {}
        assert event.after == reference.after
        assert event.created_at == bulk_memory.created_at


def test_bulk_create_gives_cards_to_personal_namespaces_only(namespace, user):
    agent = services.namespace_create(owner=user, name="bot", mode=Namespace.Mode.AGENT_MEMORY)
    fsrs = services.namespace_create(owner=user, name="Spanish", scheduler="fsrs")
    items = _items(namespace, 30) + _items(agent, 30) + _items(fsrs, 30)
    started = timezone.now()
    created = services.memory_bulk_create(items=items)
    single = services.memory_create(namespace=namespace, content="one by one")

    cards = {card.memory_id: card for card in Card.objects.all()}
    assert len(cards) == 61
    reference = cards[single.pk]
    for memory in created:
        if memory.namespace_id == agent.pk:
            assert memory.pk not in cards
            continue
        card = cards[memory.pk]
        assert card.namespace_id == memory.namespace_id
        assert card.scheduler == ("fsrs" if memory.namespace_id == fsrs.pk else "sm2")
        assert card.next_review is None and card.fsrs_state is None
        for name in ("easiness", "interval_days", "repetitions", "total_reviews", "version"):
            assert getattr(card, name) == getattr(reference, name)
        assert started <= card.created_at <= reference.created_at  # made now, as one by one


def test_a_bad_item_among_many_writes_nothing_and_names_every_bad_index(namespace):
    items = _items(namespace, 50)
    items[7]["strength"] = 9
    items[31]["content"] = "   "
    items[40]["language"] = "x" * 40
    with pytest.raises(ValidationError) as caught:
        services.memory_bulk_create(items=items)

    assert set(caught.value.message_dict) == {"7.strength", "31.content", "40.language"}
    assert not Memory.objects.exists()
    assert not MemoryEvent.objects.exists()
    assert not Card.objects.exists()


def test_bulk_created_memories_are_found_by_full_text_search(namespace):
    items = _items(namespace, 40)
    items[23]["content"] = "Zebras graze quietly near the riverbank"
    services.memory_bulk_create(items=items)

    assert Memory.objects.containing("riverbank").count() == 1
    assert Memory.objects.containing("zebras graze").get().content.startswith("Zebras")


@pytest.mark.parametrize("count", [1, bulk.SMALL - 1, bulk.SMALL, 700])
def test_insert_rows_fills_defaults_and_returns_ids_in_row_order(namespace, count):
    memories = services.memory_bulk_create(items=_items(namespace, count))
    before = timezone.now()
    ids = bulk.insert_rows(
        MemoryEvent,
        ("namespace_id", "memory_id", "memory_ref", "kind", "after"),
        [
            (namespace.pk, memory.pk, memory.pk, MemoryEvent.Kind.TOUCHED, {"n": i, "x": [1.5]})
            for i, memory in enumerate(memories)
        ],
        ids=True,
    )

    assert len(ids) == count == len(set(ids))
    for i, (pk, memory) in enumerate(zip(ids, memories, strict=True)):
        event = MemoryEvent.objects.get(pk=pk)
        assert event.memory_id == memory.pk
        assert event.after == {"n": i, "x": [1.5]}
        assert event.before == {}  # the field's default
        assert event.source == "system"
        assert event.actor_id is None
        assert event.created_at >= before


def test_insert_new_sets_ids_that_match_the_rows(namespace):
    memories = [
        services.memory_build(namespace=namespace, content=f"row {i}", topic=str(i))
        for i in range(75)
    ]
    bulk.insert_new(memories, ids=True)

    for memory in memories:
        assert Memory.objects.get(pk=memory.pk).content == f"row {memory.topic}"
    assert bulk.insert_rows(Memory, ("content",), []) == []
    bulk.insert_new([])


def test_a_bad_item_after_chunks_were_sent_still_writes_nothing(namespace):
    count = 2 * services.BULK_CHUNK + 50
    items = _items(namespace, count)
    items[services.BULK_CHUNK + 80]["utility"] = -1
    items[count - 1]["topic"] = "t" * 101
    with pytest.raises(ValidationError) as caught:
        services.memory_bulk_create(items=items)

    assert set(caught.value.message_dict) == {
        f"{services.BULK_CHUNK + 80}.utility",
        f"{count - 1}.topic",
    }
    assert not Memory.objects.exists()
    assert not MemoryEvent.objects.exists()
    assert not Card.objects.exists()
    # The aborted write left the connection usable.
    assert len(services.memory_bulk_create(items=_items(namespace, 30))) == 30
    assert Memory.objects.count() == 30


@pytest.mark.parametrize("logged", [False, True])
def test_a_row_the_database_refuses_raises_djangos_integrity_error(namespace, logged):
    from django.db import IntegrityError, connection, transaction
    from django.test.utils import CaptureQueriesContext

    memories = [services.memory_build(namespace=namespace, content=f"row {i}") for i in range(40)]
    memories[33].strength = 5.0  # outside memory_strength_range, which the database checks
    capture = CaptureQueriesContext(connection) if logged else contextlib.nullcontext()
    with capture, pytest.raises(IntegrityError), transaction.atomic():
        bulk.insert_new(memories, ids=True)
    assert not Memory.objects.exists()


def test_inserts_are_logged_like_other_queries_when_queries_are_captured(namespace):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        created = services.memory_bulk_create(items=_items(namespace, 30))
    assert len(created) == 30 == Memory.objects.count()
    statements = " ".join(query["sql"] for query in captured.captured_queries)
    if connection.vendor == "sqlite":
        assert statements.count('INSERT INTO "memories_memory"') == 1
        assert 'INSERT INTO "memories_memoryevent"' in statements


@pytest.mark.django_db(transaction=True)
def test_an_insert_without_a_callers_transaction_is_still_all_or_nothing(user):
    """A refused row in a later chunk undoes the earlier chunks, as bulk_create would."""
    from django.db import IntegrityError

    namespace = services.namespace_create(owner=user, name="Autocommit")
    memories = [services.memory_build(namespace=namespace, content=f"row {i}") for i in range(60)]
    memories[-1].strength = 5.0  # outside memory_strength_range, which the database checks
    with pytest.raises(IntegrityError), bulk.writer(Memory, ids=True, expected=60) as write:
        write(memories[:30])
        write(memories[30:])
    assert not Memory.objects.filter(namespace=namespace).exists()


def test_update_rows_writes_what_save_would_for_each_row(namespace):
    memories = [services.memory_create(namespace=namespace, content=f"row {n}") for n in range(3)]
    cards = list(Card.objects.filter(memory__in=memories).order_by("pk"))
    when = timezone.now() + timedelta(days=2)
    for n, card in enumerate(cards):
        card.fsrs_state = {"stability": 1.5 + n, "difficulty": 5.0} if n else None
        card.next_review = when + timedelta(hours=n)
        card.easiness, card.version = 2.5 - n / 10, 7 + n
    untouched = Card.objects.get(pk=cards[-1].pk)
    changed = cards[:-1]

    bulk.update_rows(Card, ["fsrs_state", "next_review", "easiness", "version"], changed)

    for card in changed:
        stored = Card.objects.get(pk=card.pk)
        assert (stored.fsrs_state, stored.next_review, stored.easiness, stored.version) == (
            card.fsrs_state,
            card.next_review,
            card.easiness,
            card.version,
        )
    assert Card.objects.get(pk=untouched.pk).version == untouched.version
