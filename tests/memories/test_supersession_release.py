"""A memory superseded by one that is later removed (memories.services.supersession_release):
a successor a person or an agent forgets or purges reinstates what it alone replaced, and
restoring it replaces them again; one that decays (the sweep) leaves them replaced, and the
memory page says its successor is gone and offers Reinstate. Before, the replaced fact
stayed hidden whatever happened to its successor."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.models import Memory, MemoryEvent
from memories.sweep import SweepConfig, sweep_run

pytestmark = pytest.mark.django_db

ACTIONS = "/api/v1/memories/actions"


@pytest.fixture
def pair(make_memory, namespace):
    """(old, new): new says the old fact changed."""
    old = make_memory("The office is on the third floor.")
    new = services.memory_create(
        namespace=namespace, content="The office moved to the fifth floor.", supersedes=[old]
    )
    old.refresh_from_db()
    assert old.valid_until == new.valid_from
    return old, new


def _valid_until(memory):
    memory.refresh_from_db()
    return memory.valid_until


def test_forgetting_the_successor_by_hand_reinstates_and_restoring_it_replaces_again(pair, writer):
    old, new = pair
    forgot = writer.post(f"/api/v1/memories/{new.pk}/forget", {"reason": "wrong"}, format="json")
    assert forgot.status_code == 200
    assert _valid_until(old) is None
    event = MemoryEvent.objects.filter(memory=old, kind="updated").get()
    assert event.after == {"valid_until": None, "successor_gone": new.pk}
    assert event.source == "api" and event.actor is not None
    listed = writer.get(f"/api/v1/memories?namespace={old.namespace.slug}").json()["results"]
    assert [m["id"] for m in listed] == [old.pk]

    assert writer.post(f"/api/v1/memories/{new.pk}/restore", {}, format="json").status_code == 200
    new.refresh_from_db()
    assert _valid_until(old) == new.valid_from
    assert MemoryEvent.objects.filter(memory=old, kind="superseded").count() == 2


def test_bulk_forget_and_restore_do_the_same(pair, writer):
    old, new = pair
    body = {"action": "forget", "ids": [new.pk], "reason": "wrong"}
    assert writer.post(ACTIONS, body, format="json").status_code == 200
    assert _valid_until(old) is None
    assert writer.post(ACTIONS, {"action": "restore", "ids": [new.pk]}, format="json").status_code
    assert _valid_until(old) is not None


def test_purging_a_live_successor_reinstates(pair, writer):
    old, new = pair
    assert writer.delete(f"/api/v1/memories/{new.pk}").status_code == 204
    assert _valid_until(old) is None


def test_a_successor_that_decays_leaves_it_superseded_and_the_page_offers_reinstate(
    pair, client, user
):
    old, new = pair
    long_ago = timezone.now() - timedelta(days=60)
    Memory.objects.filter(pk=new.pk).update(last_used_at=long_ago, created_at=long_ago)
    assert sweep_run(namespace=new.namespace, config=SweepConfig.from_settings()).forgotten == 1
    ends = _valid_until(old)
    assert ends is not None
    # Purging the decayed successor (by hand or by the sweep) brings nothing back either.
    services.memory_purge(memory=Memory.objects.get(pk=new.pk))
    assert _valid_until(old) == ends

    client.force_login(user)
    page = client.get(reverse("memory-detail", args=[old.pk])).content.decode()
    assert f"Memory #{new.pk}, which replaced it, was purged" in page
    assert reverse("memory-reinstate", args=[old.pk]) in page
    response = client.post(reverse("memory-reinstate", args=[old.pk]))
    assert response.status_code == 303
    assert _valid_until(old) is None
    assert MemoryEvent.objects.filter(memory=old, kind="updated", source="dashboard").exists()


def test_another_live_successor_keeps_it_superseded(pair, namespace):
    old, new = pair
    services.memory_create(
        namespace=namespace, content="The whole team sits on floor five.", supersedes=[old]
    )
    services.memory_forget(memory=new, reason="duplicate correction")
    assert _valid_until(old) is not None


def test_forgetting_a_merged_memory_brings_no_near_duplicate_back(namespace, committed):
    with committed():
        kept = services.memory_create(namespace=namespace, content="User lives in Paris.")
        twin = services.memory_create(namespace=namespace, content="The user lives in Paris.")
    assert [m.pk for m in services.near_duplicates_merge(keep=kept)] == [twin.pk]
    services.memory_forget(memory=kept, reason="not true")
    assert _valid_until(twin) is not None
