"""Isolation matrix, generated from the API's URL configuration.

For every route with an id and every method its view implements, another user's
credentials with the first user's ids get 404 and change nothing; a token whose ceiling is
below a memory's classification gets 404 for that memory on every memory route. A new
route must be added to OBJECT_FOR_ROUTE, or the test fails.
"""

from __future__ import annotations

import json
import zoneinfo

import pytest
from rest_framework.test import APIClient

from memories import services
from memories.models import BackgroundRun, Classification, Consolidation, WebhookDelivery
from memories.services.webhooks import webhook_subscription_create
from memories.transfer import namespace_export
from tests.conftest import database_rows
from tests.support.routes import api_routes

pytestmark = pytest.mark.django_db

METHODS = ("get", "post", "patch", "put", "delete")
# Which of the owner's objects fills each route's id, and a body that would succeed.
OBJECT_FOR_ROUTE = {
    "api-namespace": ("namespace", {"name": "hacked"}),
    "api-export": ("namespace", None),
    "api-import": ("namespace", "import"),
    "api-import-job": ("import-job", None),
    "api-memory": ("memory", {"content": "hacked"}),
    "api-memory-forget": ("memory", {"reason": "hacked"}),
    "api-memory-restore": ("memory", {}),
    "api-memory-touch": ("memory", {"boost_strength": True}),
    "api-memory-history": ("memory", None),
    "api-association": ("association", None),
    "api-relation": ("relation", None),
    "api-token-revoke": ("token", {}),
    "api-card-grade": ("card", {"grade": 4}),
    "api-card-undo": ("card", {}),
    "api-card-suspend": ("card", {}),
    "api-card-bury": ("card", {}),
    "api-session": ("session", None),
    "api-session-grade": ("session", "session-grade"),
    "api-session-finish": ("session", {}),
    "api-cram-session": ("cram", None),
    "api-cram-answer": ("cram", "cram-answer"),
    "api-cram-finish": ("cram", {}),
    "api-namespace-webhooks": ("namespace", {"url": "http://127.0.0.1:9/hook"}),
    "api-namespace-decay-fits": ("namespace", {}),
    "api-webhook": ("webhook", {"enabled": False}),
    "api-webhook-deliveries": ("webhook", None),
    "api-webhook-redeliver": ("webhook-delivery", {}),
}
SESSION_ONLY = {"api-token-revoke"}


ROUTES_WITH_IDS = [r for r in api_routes() if "<" in r[1]]


def test_every_route_with_an_id_is_in_the_matrix():
    assert {name for name, _, _ in ROUTES_WITH_IDS} <= set(OBJECT_FOR_ROUTE), (
        "add the new route to OBJECT_FOR_ROUTE"
    )


@pytest.fixture
def world(user, other_user, make_token):
    ns = services.namespace_create(owner=user, name="Private")
    a = services.memory_create(
        namespace=ns, content="Alice's secret plan", classification=Classification.PUBLIC
    )
    b = services.memory_create(namespace=ns, content="Bob's note")
    link = services.association_create(source=a, target=b)
    relation = services.relation_create(
        namespace=ns, subject="alice", predicate="knows", object="bob", memory=a
    )
    Consolidation.objects.create(
        namespace=ns, period="daily", period_start="2026-11-20", text="digest", memory_ids=[a.pk]
    )
    from review import services as review

    card = review.card_ensure(memory=a)
    review.card_grade(card=card, grade=4, source="human")  # something to undo
    card.refresh_from_db()
    session = review.study_session_start(namespace=ns, tz=zoneinfo.ZoneInfo("UTC"), limit=10)
    cram = review.cram_start(namespace=ns)
    owner_token, _ = make_token(user)
    import_job = BackgroundRun.objects.create(kind=BackgroundRun.Kind.IMPORT, namespace=ns)
    webhook = webhook_subscription_create(namespace=ns, url="http://127.0.0.1:9/hook")
    webhook_delivery = WebhookDelivery.objects.create(
        subscription=webhook,
        namespace=ns,
        event_type="memory.created",
        webhook_id="msg_1",
        payload={},
        status="failed",
    )
    services.namespace_create(owner=other_user, name="Private")  # same slug, other owner
    _, intruder_secret = make_token(other_user)
    return {
        "namespace": ns,
        "memory": a,
        "association": link,
        "relation": relation,
        "token": owner_token,
        "intruder_secret": intruder_secret,
        "card": card,
        "session": session,
        "cram": cram,
        "import-job": import_job,
        "webhook": webhook,
        "webhook-delivery": webhook_delivery,
        "session-grade": {"card": card.pk, "grade": 4},
        "cram-answer": {"card": card.pk, "correct": True},
        "import": "".join(namespace_export(namespace=ns, ceiling=3)),
    }


def fingerprint() -> str:
    """Every row of every table (tests/conftest.py's database_rows: all but a token's last
    use and the session), as one comparable string."""
    return json.dumps(database_rows(), default=str)


def _call(client: APIClient, method: str, url: str, body, world=None):
    if isinstance(body, str) and body != "import" and world is not None:
        body = world[body]
    if body == "import":
        return client.generic("POST", url, "", content_type="application/x-ndjson")
    if body is None or method in ("get", "delete"):
        return getattr(client, method)(url)
    return getattr(client, method)(url, body, format="json")


def _url(route: str, value) -> str:
    if isinstance(value, tuple):  # (slug, id) of an import job
        slug, value = value
        route = route.replace("<slug:slug>", slug).replace("<int:job>", str(value))
    path = route.replace("<int:pk>", str(value)).replace("<slug:slug>", str(value))
    return "/" + path


@pytest.mark.parametrize(
    ("name", "route", "view"), ROUTES_WITH_IDS, ids=[r[0] for r in ROUTES_WITH_IDS]
)
def test_another_users_ids_answer_404_and_change_nothing(world, other_user, name, route, view):
    kind, body = OBJECT_FOR_ROUTE[name]
    target = world[kind]
    value = target.slug if kind == "namespace" else target.pk
    if kind == "import-job":  # the owner's job under the slug the intruder also owns
        value = (target.namespace.slug, target.pk)
    if kind == "namespace":
        # The intruder owns a namespace with the same slug; use one only the owner has.
        target.slug = "owners-only"
        target.save(update_fields=["slug"])
        value = target.slug
    client = APIClient()
    if name in SESSION_ONLY:
        client.force_login(other_user)
    else:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {world['intruder_secret']}")
    before = fingerprint()
    for method in METHODS:
        if not hasattr(view, method):
            continue
        response = _call(
            client,
            method,
            _url(route, value),
            world[body] if isinstance(body, str) and body != "import" else body,
        )
        assert response.status_code == 404, (method, route, response.content[:300])
        assert response["Content-Type"].startswith("application/json")
    assert fingerprint() == before


def test_lists_show_nothing_of_another_user(world, api):
    intruder = api(world["intruder_secret"])
    owned = {
        "memories": {world["memory"].pk},
        "associations": {world["association"].pk},
        "relations": {world["relation"].pk},
    }
    for path, ids in owned.items():
        body = intruder.get(f"/api/v1/{path}").json()
        assert not ids & {item["id"] for item in body["results"]}, path
    assert intruder.get("/api/v1/entities").json()["results"] == []
    assert intruder.get("/api/v1/consolidations").json()["results"] == []
    namespaces = intruder.get("/api/v1/namespaces").json()
    assert [ns["memory_count"] for ns in namespaces] == [0]


def test_bodies_naming_another_users_objects_change_nothing(world, api):
    intruder = api(world["intruder_secret"])
    a, b = world["memory"], world["association"].target
    attempts = [
        ("/api/v1/associations", {"source": a.pk, "target": b.pk}),
        (
            "/api/v1/relations",
            {
                "namespace": "private",
                "subject": "x",
                "predicate": "y",
                "object": "z",
                "memory": a.pk,
            },
        ),
        ("/api/v1/memories", {"namespace": "owners-only", "content": "x"}),
        ("/api/v1/memories/bulk", {"namespace": "owners-only", "memories": [{"content": "x"}]}),
        ("/api/v1/memories/actions", {"action": "forget", "ids": [a.pk], "reason": "x"}),
        ("/api/v1/memories/actions", {"action": "keep", "ids": [a.pk, b.pk]}),
        ("/api/v1/review/sessions", {"namespace": "owners-only"}),
        ("/api/v1/review/cram", {"namespace": "owners-only"}),
    ]
    world["namespace"].slug = "owners-only"
    world["namespace"].save(update_fields=["slug"])
    before = fingerprint()
    for url, body in attempts:
        response = intruder.post(url, body, format="json")
        assert response.status_code == 400, (url, response.json())
        assert "No such" in json.dumps(response.json())
    for url in ("/api/v1/review/queue", "/api/v1/review/stats", "/api/v1/memories/forgetting"):
        response = intruder.get(url, {"namespace": "owners-only"})
        assert response.status_code == 400 and "No such" in json.dumps(response.json())
    assert fingerprint() == before


CEILING_ROUTES = [r for r in ROUTES_WITH_IDS if OBJECT_FOR_ROUTE[r[0]][0] in ("memory", "card")]


@pytest.mark.parametrize(
    ("name", "route", "view"), CEILING_ROUTES, ids=[r[0] for r in CEILING_ROUTES]
)
def test_a_memory_above_the_ceiling_answers_404_everywhere(
    user, namespace, make_token, name, route, view
):
    from review.services import card_ensure

    secret_memory = services.memory_create(
        namespace=namespace, content="salary: 1M", classification=Classification.RESTRICTED
    )
    card = card_ensure(memory=secret_memory)
    kind, body = OBJECT_FOR_ROUTE[name]
    target = card.pk if kind == "card" else secret_memory.pk
    _, secret = make_token(user, ceiling=Classification.CONFIDENTIAL)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    before = fingerprint()
    for method in METHODS:
        if hasattr(view, method):
            response = _call(client, method, _url(route, target), body)
            assert response.status_code == 404, (method, route)
    assert fingerprint() == before


def test_a_low_ceiling_never_receives_a_higher_memory(user, namespace, make_token, api):
    low = services.memory_create(
        namespace=namespace, content="public fact", classification=Classification.PUBLIC
    )
    high = services.memory_create(
        namespace=namespace, content="restricted fact", classification=Classification.RESTRICTED
    )
    services.association_create(source=low, target=high)
    services.relation_create(
        namespace=namespace, subject="a", predicate="b", object="c", memory=high
    )
    Consolidation.objects.create(
        namespace=namespace,
        period="weekly",
        period_start="2026-11-16",
        text="mentions restricted",
        memory_ids=[low.pk, high.pk],
    )
    _, secret = make_token(user, ceiling=Classification.PUBLIC)
    client = api(secret)

    def everything() -> str:
        parts = [
            client.get("/api/v1/memories", {"limit": 500}).content,
            client.get("/api/v1/memories", {"status": "active"}).content,
            client.get("/api/v1/associations").content,
            client.get("/api/v1/relations").content,
            client.get("/api/v1/consolidations").content,
            client.get(f"/api/v1/memories/{low.pk}/history").content,
            client.post("/api/v1/recall", {"query": "fact"}, format="json").content,
            b"".join(client.get(f"/api/v1/namespaces/{namespace.slug}/export").streaming_content),
        ]
        return b"\n".join(parts).decode()

    from review.services import cards_create_for_namespace

    cards_create_for_namespace(namespace=namespace)
    queue = client.get("/api/v1/review/queue", {"namespace": namespace.slug}).json()
    assert [c["memory"] for c in queue["due"] + queue["new"]] == [low.pk]
    stats = client.get("/api/v1/review/stats", {"namespace": namespace.slug}).json()
    assert stats["total"] == 1 and stats["new"] == 1

    seen = everything()
    assert "public fact" in seen
    assert "restricted fact" not in seen and f'"id":{high.pk},' not in seen.replace(" ", "")
    assert client.get("/api/v1/namespaces").json()[0]["memory_count"] == 1

    # History of a memory that was once above the ceiling is redacted.
    services.memory_update(memory=high, changes={"classification": Classification.PUBLIC})
    history = client.get(f"/api/v1/memories/{high.pk}/history").json()["results"]
    assert all("redacted" in event["before"] for event in history)
    assert "restricted fact" not in json.dumps(history)
