"""GET /memories/reinforce (and MCP's reinforce_due): the memories decay is about to
forget, soonest first, then seed 003's review candidates, the memories whose decay score is
in the danger zone, most urgent first, within the caller's reach only."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from memories import services
from memories.models import Classification, Memory

pytestmark = pytest.mark.django_db


def aged(namespace, content: str, days: float, **fields) -> Memory:
    """A memory last used `days` ago: score 0.5 ** (days / 3) with the seed's defaults,
    forgotten when that falls under 0.05, 12.97 days after the last use."""
    memory = services.memory_create(namespace=namespace, content=content, **fields)
    Memory.objects.filter(pk=memory.pk).update(last_used_at=timezone.now() - timedelta(days=days))
    return memory


def test_it_lists_what_is_about_to_be_forgotten_then_the_danger_zone(
    user, namespace, make_token, api
):
    centre = aged(namespace, "Six days old.", 6)  # 0.25, the centre
    edge = aged(namespace, "Five days old.", 5)  # 0.31
    low = aged(namespace, "Eight days old.", 8)  # 0.157: forgotten in 4.97 days
    aged(namespace, "Fresh.", 1)  # 0.79: not fading yet
    gone = aged(namespace, "Long gone.", 14)  # 0.04: under the threshold, the next sweep's
    soon = aged(namespace, "Eleven days old.", 11)  # 0.079: forgotten in 1.97 days
    _, secret = make_token(user)
    response = api(secret).get("/api/v1/memories/reinforce")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [item["memory"]["id"] for item in body] == [gone.pk, soon.pk, centre.pk, edge.pk, low.pk]
    assert body[2]["score"] == pytest.approx(0.25, abs=0.01)
    # forget_at only for the two decay forgets within FORGET_DIGEST_DAYS (3).
    assert [item["forget_at"] is not None for item in body] == [True, True, False, False, False]
    left = datetime.fromisoformat(body[1]["forget_at"]) - timezone.now()
    assert abs(left - timedelta(days=1.97)) < timedelta(hours=1)
    assert [
        i["memory"]["id"]
        for i in api(secret).get("/api/v1/memories/reinforce", {"limit": 3}).json()
    ] == [gone.pk, soon.pk, centre.pk]


def test_it_shows_nothing_above_the_ceiling_or_of_another_user(
    user, other_user, namespace, make_token, api
):
    aged(namespace, "Secret plan.", 6, classification=Classification.RESTRICTED)
    aged(namespace, "Secret, fading.", 11, classification=Classification.RESTRICTED)
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
