"""One home for the 'reactivated' event (memories.services.uses.uses_reactivate): a touch,
recall tracking's associative hits, Keep, a duplicate written again and a person's passing
grade each bring a cold memory back hot through it, with the same event and the same row
changes. Recall tracking used to write its own events and set storage in its boost UPDATE,
leaving updated_at as it was."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories import services
from memories.models import Association, Memory, MemoryEvent
from memories.services import uses
from review.models import Card
from review.services import card_grade, cards_create_for_namespace
from tests.memories.test_use_states import _cold

pytestmark = pytest.mark.django_db


def _touch(writer, memory, user):
    assert writer.post(f"/api/v1/memories/{memory.pk}/touch", {}, format="json").status_code == 200


def _recall(writer, memory, user):
    hot = services.memory_create(
        namespace=memory.namespace, content="Which host runs the staging database?"
    )
    Association.objects.create(namespace=memory.namespace, source=hot, target=memory, weight=1.0)
    body = {"query": "which host runs staging", "namespaces": [memory.namespace.slug]}
    response = writer.post("/api/v1/recall", body, format="json")
    assert response.status_code == 200
    assert memory.pk in [r["memory_id"] for r in response.json()["results"]]


def _keep(writer, memory, user):
    body = {"action": "keep", "ids": [memory.pk]}
    assert writer.post("/api/v1/memories/actions", body, format="json").status_code == 200


def _write_again(writer, memory, user):
    body = {"namespace": memory.namespace.slug, "content": memory.content}
    assert writer.post("/api/v1/memories", body, format="json").json()["deduplicated"]


def _grade(writer, memory, user):
    cards_create_for_namespace(namespace=memory.namespace)
    card_grade(card=Card.objects.get(memory=memory), grade=4, source="human", user=user)


PATHS = [
    (_touch, "use", "api"),
    (_recall, "association", "recall"),
    (_keep, "use", "api"),
    (_write_again, "use", "api"),
    (_grade, "use", "human"),
]


@pytest.mark.parametrize(("act", "via", "source"), PATHS, ids=[p[0].__name__ for p in PATHS])
def test_every_path_reactivates_through_the_one_writer_alike(
    act, via, source, writer, make_memory, user, settings, monkeypatch
):
    settings.AUTO_REINFORCE = True
    cold = _cold(make_memory)
    Memory.objects.filter(pk=cold.pk).update(updated_at=timezone.now() - timedelta(days=1))
    cold.refresh_from_db()
    calls = []
    reactivate = uses._reactivate
    monkeypatch.setattr(
        uses, "_reactivate", lambda *a, **kw: calls.append(kw) or reactivate(*a, **kw)
    )

    act(writer, cold, user)

    assert len(calls) == 1
    event = MemoryEvent.objects.get(memory_ref=cold.pk, kind=MemoryEvent.Kind.REACTIVATED)
    assert (event.before, event.after) == ({"storage": "cold"}, {"storage": "hot", "via": via})
    assert event.source == source
    assert (event.namespace_id, event.classification) == (cold.namespace_id, cold.classification)
    updated_before = cold.updated_at
    cold.refresh_from_db()
    assert cold.storage == Memory.Storage.HOT
    assert cold.updated_at > updated_before
    assert event.created_at == cold.updated_at
