"""Data and helpers for the dashboard's tests (tests/config/test_pages.py and each app's
test_views.py); the `personal` and `theirs` fixtures are in tests/conftest.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories import services
from memories.models import BackgroundRun, Memory, MemoryEvent, Namespace
from recall.models import RecallEvent
from review import services as review_services
from review.models import Card

HX = {"HTTP_HX_REQUEST": "true"}


def add_memories(namespace: Namespace, user, count: int, start: int = 0) -> list[Memory]:
    """Memories in two decks of a personal namespace (so each has a card): a third due,
    a third graded once, a third new; plus what the background leaves behind."""
    now = timezone.now()
    created = []
    for i in range(start, start + count):
        memory = services.memory_create(
            namespace=namespace,
            content=f"Fact {i}: the capital of country {i} is city {i}.\nMore about {i}.",
            topic=("geo", "history")[i % 2],
        )
        card = Card.objects.get(memory=memory)
        if i % 3 == 0:
            Card.objects.filter(pk=card.pk).update(
                next_review=now - timedelta(days=1), interval_days=1, repetitions=1
            )
        elif i % 3 == 1:
            review_services.card_grade(card=card, grade=4, source="human", user=user)
        created.append(memory)
    MemoryEvent.objects.create(
        namespace=namespace,
        memory=created[0],
        memory_ref=created[0].pk,
        kind=MemoryEvent.Kind.PROMOTED,
        source="sweep",
    )
    BackgroundRun.objects.create(
        kind=BackgroundRun.Kind.SWEEP,
        namespace=namespace,
        status=BackgroundRun.Status.OK,
        finished_at=now,
        counts={"promoted": 1, "forgotten": 0, "examined": count},
    )
    return created


@pytest.fixture
def personal(user) -> Namespace:
    return services.namespace_create(owner=user, name="Personal", mode=Namespace.Mode.PERSONAL)


@pytest.fixture
def theirs(other_user) -> dict:
    """Bob's namespace, memory, token and sessions: all invisible to Ada."""
    namespace = services.namespace_create(owner=other_user, name="Bob's", mode="personal")
    memory = services.memory_create(namespace=namespace, content="Bob's secret.", topic="b")
    card = Card.objects.get(memory=memory)
    token, _ = services.token_create(owner=other_user, name="bob", namespaces=[namespace])
    study = review_services.study_session_start(
        namespace=namespace, tz=timezone.get_current_timezone(), user=other_user
    )
    cram = review_services.cram_start(namespace=namespace, user=other_user)
    return {
        "namespace": namespace,
        "memory": memory,
        "card": card,
        "token": token,
        "study": study,
        "cram": cram,
    }


def namespace_form_data(**fields: str) -> dict[str, str]:
    """What the dashboard's new-namespace form posts with its defaults chosen, and `fields`."""
    return {
        "mode": "personal",
        "scheduler": "sm2",
        "desired_retention": "0.9",
        "new_cards_per_day": "5",
        "dedupe": "exact",
        "decay_fit": "off",
        "card_front": "cloze",
        "leech_threshold": "8",
        **fields,
    }


def queries(client, url: str, **extra) -> int:
    with CaptureQueriesContext(connection) as context:
        response = client.get(url, **extra)
    assert response.status_code == 200, (url, response.status_code)
    return len(context.captured_queries)


@pytest.fixture
def ada_client(client, user):
    client.force_login(user)
    return client


def memory_with_history(
    namespace: Namespace, user, others: list[Memory], rounds: int, tag: str = "a"
):
    memory = others[0]
    now = timezone.now()
    for i in range(rounds):
        services.memory_update(memory=memory, changes={"utility": 0.1 + i / 100}, actor=user)
        services.association_create(source=memory, target=others[i + 1], weight=0.5)
        services.association_create(source=others[-(i + 1)], target=memory, weight=0.4)
        services.relation_create(
            namespace=namespace,
            subject=f"{tag}{i}",
            predicate="knows",
            object=f"b{i}",
            memory=memory,
        )
        stamp = now - timedelta(minutes=i + 1)
        RecallEvent.objects.create(
            namespace=namespace, user=user, query=f"query {i}", created_at=stamp
        )
        memory.recall_timestamps = [*memory.recall_timestamps, stamp.isoformat()]
    Memory.objects.filter(pk=memory.pk).update(recall_timestamps=memory.recall_timestamps)
    card = Card.objects.get(memory=memory)
    for grade in (4, 3):
        card.refresh_from_db()
        review_services.card_grade(card=card, grade=grade, source="human", user=user)
    return memory
