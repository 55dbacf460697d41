"""A use (touch, the dashboard's Boost, bulk Keep, a duplicate written again, a person's
passing grade) in each lifecycle state: only a live memory can be used, and a use brings a
cold memory back to hot storage, where recall's fast stages find it again. Before, the
single touch counted uses of forgotten and archived memories (bulk Keep left them alone),
and a cold memory stayed cold however often it was used: no sweep rule warms it, and
recall's direct stages skip cold memories, so only an association could bring it back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.models import Memory, MemoryEvent, MemoryUse
from memories.sweep import SweepConfig, sweep_run
from review.models import Card
from review.services import card_grade, cards_create_for_namespace

pytestmark = pytest.mark.django_db(transaction=False)

ACTIONS = "/api/v1/memories/actions"


def _cold(make_memory, content="The staging database lives on host db-7.", **fields):
    """A promoted long-term memory the sweep moved to cold storage (at its floor, unused)."""
    memory = make_memory(content, **fields)
    long_ago = timezone.now() - timedelta(days=60)
    Memory.objects.filter(pk=memory.pk).update(
        tier=Memory.Tier.LONG_TERM,
        status=Memory.Status.PROMOTED,
        last_used_at=long_ago,
        created_at=long_ago,
    )
    report = sweep_run(namespace=memory.namespace, config=SweepConfig.from_settings())
    assert report.cold == 1
    memory.refresh_from_db()
    assert memory.storage == Memory.Storage.COLD
    return memory


def _state(memory):
    memory.refresh_from_db()
    return (
        memory.use_count,
        memory.last_used_at,
        memory.strength,
        memory.status,
        memory.storage,
        MemoryEvent.objects.filter(memory_ref=memory.pk).count(),
        MemoryUse.objects.filter(memory_ref=memory.pk).count(),
    )


def _forgotten(make_memory):
    memory = make_memory("Ada's old phone number ended in 42.")
    return services.memory_forget(memory=memory, reason="obsolete")


def _archived(make_memory):
    memory = make_memory("The 2019 offsite was in Lisbon.")
    Memory.objects.filter(pk=memory.pk).update(
        tier=Memory.Tier.LONG_TERM, status=Memory.Status.ARCHIVED, storage=Memory.Storage.COLD
    )
    memory.refresh_from_db()
    return memory


@pytest.mark.parametrize("make_state", [_forgotten, _archived], ids=["forgotten", "archived"])
def test_a_memory_that_is_not_live_cannot_be_used(make_memory, make_state):
    memory = make_state(make_memory)
    before = _state(memory)

    with pytest.raises(services.MemoryNotLive, match=r"restore it before using it"):
        services.memory_touch(memory=memory, boost_strength=True)

    assert _state(memory) == before


@pytest.mark.parametrize("make_state", [_forgotten, _archived], ids=["forgotten", "archived"])
def test_the_api_answers_409_not_live_and_writes_nothing(
    writer, make_memory, make_state, nothing_written
):
    memory = make_state(make_memory)

    with nothing_written():
        response = writer.post(
            f"/api/v1/memories/{memory.pk}/touch", {"boost_strength": True}, format="json"
        )

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "not_live"
    assert "restore it" in error["message"]


def test_the_dashboard_boost_of_a_forgotten_memory_says_so_and_writes_nothing(
    client, user, make_memory, nothing_written
):
    memory = _forgotten(make_memory)
    client.force_login(user)

    with nothing_written(ignore={"django_session": set()}):
        response = client.post(reverse("memory-boost", args=[memory.pk]), follow=True)

    assert response.status_code == 200
    assert "is forgotten: restore it before using it" in response.content.decode()


def test_a_touch_brings_a_cold_memory_back_hot_and_recall_finds_it(writer, make_memory):
    memory = _cold(make_memory)
    query = {"query": "staging database host", "track": False}

    def found():
        results = writer.post("/api/v1/recall", query, format="json").json()["results"]
        return [result["memory_id"] for result in results]

    assert memory.pk not in found()

    response = writer.post(f"/api/v1/memories/{memory.pk}/touch", {}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert (body["storage"], body["status"], body["use_count"]) == ("hot", "promoted", 1)
    kinds = list(
        MemoryEvent.objects.filter(memory_ref=memory.pk)
        .order_by("-pk")
        .values_list("kind", flat=True)
    )
    assert kinds[:3] == ["touched", "reactivated", "cold"]
    reactivated = MemoryEvent.objects.get(memory_ref=memory.pk, kind="reactivated")
    assert reactivated.before == {"storage": "cold"}
    assert reactivated.after == {"storage": "hot", "via": "use"}
    assert reactivated.source == "api"
    assert memory.pk in found()


def test_a_sweep_right_after_the_use_leaves_it_hot(make_memory):
    memory = _cold(make_memory)
    services.memory_touch(memory=memory)

    report = sweep_run(namespace=memory.namespace, config=SweepConfig.from_settings())

    memory.refresh_from_db()
    assert (report.cold, report.archived, memory.storage) == (0, 0, Memory.Storage.HOT)


def test_bulk_keep_brings_cold_memories_back_hot(writer, make_memory):
    cold = _cold(make_memory)
    hot = make_memory("The release train leaves every other Thursday.")

    response = writer.post(ACTIONS, {"action": "keep", "ids": [cold.pk, hot.pk]}, format="json")

    assert response.status_code == 200 and response.json()["changed"] == 2
    cold.refresh_from_db()
    hot.refresh_from_db()
    assert (cold.storage, cold.use_count, hot.storage) == ("hot", 1, "hot")
    assert MemoryEvent.objects.filter(kind="reactivated").count() == 1


def test_writing_a_cold_memory_again_is_a_use_that_brings_it_back(writer, make_memory):
    cold = _cold(make_memory)

    response = writer.post(
        "/api/v1/memories",
        {"namespace": cold.namespace.slug, "content": cold.content},
        format="json",
    )

    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["id"], body["deduplicated"], body["storage"]) == (cold.pk, True, "hot")
    cold.refresh_from_db()
    assert (cold.storage, cold.use_count) == ("hot", 1)


def test_a_persons_passing_grade_brings_a_cold_memory_back(make_memory, settings, user):
    settings.AUTO_REINFORCE = True
    cold = _cold(make_memory)
    cards_create_for_namespace(namespace=cold.namespace)
    card = Card.objects.get(memory=cold)

    card_grade(card=card, grade=4, source="human", user=user)

    cold.refresh_from_db()
    assert (cold.storage, cold.use_count) == ("hot", 1)


def test_a_simulated_grade_is_no_use_and_leaves_it_cold(make_memory, settings):
    settings.AUTO_REINFORCE = True
    cold = _cold(make_memory)
    cards_create_for_namespace(namespace=cold.namespace)

    card_grade(card=Card.objects.get(memory=cold), grade=5, source="simulated")

    cold.refresh_from_db()
    assert (cold.storage, cold.use_count) == ("cold", 0)


def test_restoring_an_archived_memory_brings_it_back_hot_where_recall_finds_it(writer, make_memory):
    archived = _archived(make_memory)
    query = {"query": "offsite Lisbon", "track": False}

    response = writer.post(f"/api/v1/memories/{archived.pk}/restore", format="json")

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["storage"]) == ("promoted", "hot")
    event = MemoryEvent.objects.get(memory_ref=archived.pk, kind="restored")
    assert event.before["storage"] == "cold" and event.after == {
        "status": "promoted",
        "storage": "hot",
    }
    results = writer.post("/api/v1/recall", query, format="json").json()["results"]
    assert archived.pk in [result["memory_id"] for result in results]
    # The fresh decay clock keeps the next sweep from archiving or freezing it again.
    report = sweep_run(namespace=archived.namespace, config=SweepConfig.from_settings())
    archived.refresh_from_db()
    assert (report.cold, report.archived, archived.storage) == (0, 0, "hot")


def test_bulk_restore_brings_archived_memories_back_hot(writer, make_memory):
    archived = _archived(make_memory)
    forgotten = _forgotten(make_memory)

    response = writer.post(
        ACTIONS, {"action": "restore", "ids": [archived.pk, forgotten.pk]}, format="json"
    )

    assert response.status_code == 200 and response.json()["changed"] == 2
    rows = dict(
        Memory.objects.filter(pk__in=[archived.pk, forgotten.pk]).values_list("pk", "storage")
    )
    assert rows == {archived.pk: "hot", forgotten.pk: "hot"}
