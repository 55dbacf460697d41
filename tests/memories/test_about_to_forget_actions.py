"""Acting on the about-to-forget digest: Keep (a use), Review now (a card due now) and Let
go (forget with a reason), per memory and for all, from the dashboard without JavaScript and
through the API (GET /memories/forgetting, POST /memories/actions); never on another
person's memories or above the caller's ceiling, and a refusal writes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.models import Classification, Memory, MemoryEvent, MemoryUse, Namespace
from memories.views import LET_GO_REASON
from review.models import Card

pytestmark = pytest.mark.django_db

PAGE = "/memories/forgetting/"
ACTIONS = "/api/v1/memories/actions"


def _aged(memory: Memory, days: float) -> Memory:
    """Last used `days` ago: with the defaults, forgotten 12.97 days after the last use."""
    Memory.objects.filter(pk=memory.pk).update(last_used_at=timezone.now() - timedelta(days=days))
    memory.refresh_from_db()
    return memory


@pytest.fixture
def fading(make_memory) -> list[Memory]:
    """Three memories of ada's personal namespace (with cards) due to be forgotten."""
    return [_aged(make_memory(f"Fading fact number {i}."), 10 + i) for i in range(3)]


@pytest.fixture
def bobs(other_user) -> Memory:
    theirs = services.namespace_create(owner=other_user, name="Bob's", mode="personal")
    return _aged(services.memory_create(namespace=theirs, content="Bob's fading fact."), 11)


def _follow(client, response) -> str:
    assert response.status_code == 303, response.status_code
    assert response["Location"] == PAGE
    return client.get(PAGE).content.decode()


def _bulk(client, action: str, ids, **data):
    return client.post(reverse("memory-bulk"), {"action": action, "ids": ids, "next": PAGE, **data})


# --- The dashboard -----------------------------------------------------------------------


def test_the_digest_offers_each_action_per_memory_and_for_all(ada_client, fading):
    body = ada_client.get(PAGE).content.decode()
    for memory in fading:
        assert f'aria-label="Keep memory #{memory.pk}"' in body
        assert f'aria-label="Review memory #{memory.pk} now"' in body
        assert f'aria-label="Let go of memory #{memory.pk}"' in body
        assert f'<input type="hidden" name="ids" value="{memory.pk}">' in body
    assert ">Keep these 3</button>" in body
    assert ">Review these 3 now</button>" in body
    assert ">Let go of these 3…</button>" in body
    assert 'name="action" value="review_now"' in body and 'name="action" value="keep"' in body


def test_keep_all_counts_a_use_of_each_and_returns_to_the_digest(ada_client, user, fading):
    body = _follow(ada_client, _bulk(ada_client, "keep", [m.pk for m in fading], confirmed="1"))
    assert "Kept 3 memories: one more use each" in body
    assert "Nothing will be forgotten by" in body
    for memory in fading:
        memory.refresh_from_db()
        assert (memory.use_count, memory.strength) == (1, pytest.approx(1.1))
        assert timezone.now() - memory.last_used_at < timedelta(minutes=1)
        event = MemoryEvent.objects.get(memory_ref=memory.pk, kind="touched")
        assert (event.actor, event.source) == (user, "dashboard")
    assert MemoryUse.objects.filter(memory_ref__in=[m.pk for m in fading]).count() == 3


def test_keep_writes_what_a_single_touch_writes_in_one_update(make_memory, user):
    one = _aged(make_memory("Touched alone."), 11)
    many = [_aged(make_memory(f"Kept together {i}."), 11) for i in range(5)]
    services.memory_touch(memory=one, boost_strength=True, actor=user, source="dashboard")
    table = Memory._meta.db_table
    with CaptureQueriesContext(connection) as context:
        kept = services.memories_keep(
            memories=Memory.objects.filter(pk__in=[m.pk for m in many]),
            actor=user,
            source="dashboard",
        )
    assert kept == 5
    updates = [
        q for q in context.captured_queries if q["sql"].lstrip().upper().startswith("UPDATE")
    ]
    assert len(updates) == 1 and table in updates[0]["sql"]
    single = MemoryEvent.objects.get(memory_ref=one.pk, kind="touched")
    for memory in many:
        event = MemoryEvent.objects.get(memory_ref=memory.pk, kind="touched")
        assert (event.before, event.after) == (single.before, single.after)
        assert (event.classification, event.source) == (single.classification, single.source)
    uses = MemoryUse.objects.filter(memory_ref__in=[m.pk for m in many])
    assert sorted(uses.values_list("use_count", flat=True)) == [1] * 5


def test_keep_leaves_forgotten_memories_alone(make_memory):
    gone = make_memory("Gone already.")
    services.memory_forget(memory=gone, reason="done")
    assert services.memories_keep(memories=Memory.objects.filter(pk=gone.pk)) == 0
    gone.refresh_from_db()
    assert gone.use_count == 0


def test_review_now_per_memory_and_for_all(ada_client, user, fading):
    cards = Card.objects.filter(memory__in=fading)
    cards.update(next_review=timezone.now() + timedelta(days=30))
    body = _follow(ada_client, _bulk(ada_client, "review_now", [fading[0].pk], confirmed="1"))
    assert "1 card due now." in body
    assert cards.filter(next_review__lte=timezone.now()).count() == 1
    body = _follow(
        ada_client, _bulk(ada_client, "review_now", [m.pk for m in fading], confirmed="1")
    )
    assert "3 cards due now." in body
    assert cards.filter(next_review__lte=timezone.now()).count() == 3
    # Still about to be forgotten: reviewing it is what may keep it.
    assert "3 memories will be forgotten by" in body


def test_review_now_gives_an_agents_memory_a_card(ada_client, user):
    agent = services.namespace_create(owner=user, name="Agent", mode=Namespace.Mode.AGENT_MEMORY)
    memory = _aged(services.memory_create(namespace=agent, content="An agent's fact."), 11)
    assert not Card.objects.filter(memory=memory).exists()
    _follow(ada_client, _bulk(ada_client, "review_now", [memory.pk], confirmed="1"))
    assert Card.objects.get(memory=memory).next_review <= timezone.now()


def test_let_go_of_all_asks_first_then_forgets_with_the_reason(ada_client, fading):
    ids = [m.pk for m in fading]
    asked = _bulk(ada_client, "forget", ids, reason=LET_GO_REASON)
    assert "Forget 3 memories?" in asked.content.decode()
    assert not Memory.objects.filter(status="forgotten").exists()
    body = _follow(
        ada_client, _bulk(ada_client, "forget", ids, reason=LET_GO_REASON, confirmed="1")
    )
    assert "Forgot 3 memories." in body
    assert set(Memory.objects.filter(pk__in=ids).values_list("forgotten_reason", flat=True)) == {
        LET_GO_REASON
    }


def test_another_persons_memories_are_never_acted_on(ada_client, fading, bobs, nothing_written):
    with nothing_written():
        for action, extra in (("keep", {}), ("review_now", {}), ("forget", {"reason": "x"})):
            response = _bulk(ada_client, action, [bobs.pk], confirmed="1", **extra)
            assert response.status_code == 400
        assert ada_client.post(reverse("memory-boost", args=[bobs.pk])).status_code == 404
        response = ada_client.post(reverse("memory-forget", args=[bobs.pk]), {"reason": "x"})
        assert response.status_code == 404
    # Mixed with hers: only hers are kept.
    _bulk(ada_client, "keep", [fading[0].pk, bobs.pk], confirmed="1")
    bobs.refresh_from_db()
    assert bobs.use_count == 0
    assert Memory.objects.get(pk=fading[0].pk).use_count == 1


# --- The API -----------------------------------------------------------------------------


def test_the_digest_through_the_api(user, other_user, namespace, fading, make_token, api):
    secret_memory = _aged(
        services.memory_create(
            namespace=namespace, content="Confidential, fading.", classification=2
        ),
        11.5,
    )
    _, full = make_token(user, ceiling=Classification.RESTRICTED)
    body = api(full).get("/api/v1/memories/forgetting").json()
    assert body["count"] == 4 and body["days"] == 3
    assert [item["memory"]["id"] for item in body["memories"]] == [
        fading[2].pk,
        secret_memory.pk,
        fading[1].pk,
        fading[0].pk,
    ]
    assert all(item["forget_at"] and item["score"] < 0.1 for item in body["memories"])
    _, internal = make_token(user, ceiling=Classification.INTERNAL)
    low = api(internal).get("/api/v1/memories/forgetting", {"limit": 0}).json()
    assert (low["count"], low["memories"]) == (3, [])
    _, stranger = make_token(other_user)
    assert api(stranger).get("/api/v1/memories/forgetting").json()["count"] == 0
    refused = api(stranger).get("/api/v1/memories/forgetting", {"namespace": namespace.slug})
    assert refused.status_code == 400 and "namespace" in refused.json()["error"]["fields"]


def test_keep_review_now_and_let_go_through_the_api(user, fading, make_token, api):
    _, secret = make_token(user)
    client = api(secret)
    keep = client.post(ACTIONS, {"action": "keep", "ids": [fading[0].pk]}, format="json")
    assert keep.status_code == 200, keep.json()
    assert keep.json() == {
        "action": "keep",
        "selected": 1,
        "changed": 1,
        "message": "Kept 1 memory: one more use each, strength x1.1 and the decay clock restarted.",
    }
    event = MemoryEvent.objects.get(memory_ref=fading[0].pk, kind="touched")
    assert event.source == "api"
    review = client.post(
        ACTIONS, {"action": "review_now", "ids": [m.pk for m in fading]}, format="json"
    )
    assert review.json()["changed"] == 3
    assert Card.objects.filter(memory__in=fading, next_review__lte=timezone.now()).count() == 3
    let_go = client.post(
        ACTIONS,
        {"action": "forget", "ids": [fading[1].pk, fading[2].pk], "reason": LET_GO_REASON},
        format="json",
    )
    assert let_go.json()["changed"] == 2
    assert Memory.objects.filter(status="forgotten").count() == 2
    digest = client.get("/api/v1/memories/forgetting").json()
    assert digest["count"] == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "forget"}, "reason"),
        ({"action": "explode"}, "action"),
        ({"action": "keep", "ids": []}, "ids"),
        ({"action": "keep", "ids": ["1"]}, "ids"),
        ({"action": "classify", "classification": "restricted"}, "classification"),
        ({"action": "keep", "colour": "red"}, "colour"),
    ],
)
def test_a_bad_action_is_refused_by_field_and_writes_nothing(
    user, fading, make_token, api, nothing_written, body, field
):
    _, secret = make_token(user, ceiling=Classification.INTERNAL)
    body = {"ids": [fading[0].pk], **body}
    with nothing_written():
        response = api(secret).post(ACTIONS, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_ids_outside_the_callers_reach_are_refused_whole(
    user, namespace, fading, bobs, make_token, api, nothing_written
):
    secret_memory = _aged(
        services.memory_create(
            namespace=namespace, content="Restricted, fading.", classification=3
        ),
        11,
    )
    _, internal = make_token(user, ceiling=Classification.INTERNAL)
    _, read_only = make_token(user, access="read")
    with nothing_written():
        for ids in ([fading[0].pk, bobs.pk], [secret_memory.pk], [fading[0].pk, 10**9]):
            response = api(internal).post(ACTIONS, {"action": "keep", "ids": ids}, format="json")
            assert response.status_code == 400
            assert response.json()["error"]["fields"] == {"ids": ["No such memory."]}
        response = api(read_only).post(
            ACTIONS, {"action": "keep", "ids": [fading[0].pk]}, format="json"
        )
        assert response.status_code == 403
