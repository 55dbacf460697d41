"""GET /memories/reinforce (and MCP's reinforce_due): seed 003's review candidates, the
memories whose decay score is in the danger zone, most urgent first, within the caller's
reach only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories import services
from memories.models import Classification, Memory

pytestmark = pytest.mark.django_db


def aged(namespace, content: str, days: float, **fields) -> Memory:
    """A memory last used `days` ago: score 0.5 ** (days / 3) with the seed's defaults."""
    memory = services.memory_create(namespace=namespace, content=content, **fields)
    Memory.objects.filter(pk=memory.pk).update(last_used_at=timezone.now() - timedelta(days=days))
    return memory


def test_it_lists_the_danger_zone_nearest_its_centre_first(user, namespace, make_token, api):
    centre = aged(namespace, "Six days old.", 6)  # 0.25, the centre
    edge = aged(namespace, "Five days old.", 5)  # 0.31
    low = aged(namespace, "Eight days old.", 8)  # 0.157
    aged(namespace, "Fresh.", 1)  # 0.79: not fading yet
    aged(namespace, "Long gone.", 14)  # 0.04: below the zone, the sweep's to forget
    _, secret = make_token(user)
    response = api(secret).get("/api/v1/memories/reinforce")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [item["memory"]["id"] for item in body] == [centre.pk, edge.pk, low.pk]
    assert body[0]["score"] == pytest.approx(0.25, abs=0.01)
    assert [
        i["memory"]["id"]
        for i in api(secret).get("/api/v1/memories/reinforce", {"limit": 1}).json()
    ] == [centre.pk]


def test_it_shows_nothing_above_the_ceiling_or_of_another_user(
    user, other_user, namespace, make_token, api
):
    aged(namespace, "Secret plan.", 6, classification=Classification.RESTRICTED)
    shown = aged(namespace, "Open plan.", 6, classification=Classification.PUBLIC)
    _, low = make_token(user, ceiling=Classification.PUBLIC)
    assert [i["memory"]["id"] for i in api(low).get("/api/v1/memories/reinforce").json()] == [
        shown.pk
    ]
    _, stranger = make_token(other_user)
    assert api(stranger).get("/api/v1/memories/reinforce").json() == []
    response = api(stranger).get("/api/v1/memories/reinforce", {"namespace": namespace.slug})
    assert response.status_code == 400
    assert "namespace" in response.json()["error"]["fields"]


def test_superseded_and_forgotten_memories_are_not_candidates(user, namespace, make_token, api):
    old = aged(namespace, "Lives in Paris.", 6)
    services.memory_create(namespace=namespace, content="Lives in Berlin.", supersedes=[old])
    gone = aged(namespace, "Wrong fact.", 6)
    services.memory_forget(memory=gone, reason="wrong")
    _, secret = make_token(user)
    assert api(secret).get("/api/v1/memories/reinforce").json() == []


@pytest.mark.parametrize("limit", ["0", "101", "ten"])
def test_a_bad_limit_is_a_400_naming_it(user, make_token, api, limit):
    _, secret = make_token(user)
    response = api(secret).get("/api/v1/memories/reinforce", {"limit": limit})
    assert response.status_code == 400
    assert "limit" in response.json()["error"]["fields"]
