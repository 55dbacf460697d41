"""The webhook API: subscriptions per namespace, the delivery log, redelivery."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories import services
from memories.models import Classification, WebhookDelivery, WebhookSubscription
from memories.services import webhooks as hooks

pytestmark = pytest.mark.django_db
URL = "http://127.0.0.1:9/hook"


@pytest.fixture
def writer(user, namespace, make_token, api):
    _, secret = make_token(user, namespaces=[namespace], ceiling=Classification.CONFIDENTIAL)
    return api(secret)


def test_a_write_token_creates_a_subscription_and_sees_its_secret_once(writer, namespace):
    response = writer.post(
        "/api/v1/namespaces/work/webhooks",
        {"url": URL, "events": ["memory.forgotten", "memory.created"]},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["secret"].startswith("whsec_")
    assert body["events"] == ["memory.created", "memory.forgotten"]
    assert body["ceiling"] == "internal"
    again = writer.get(f"/api/v1/webhooks/{body['id']}").json()
    assert "secret" not in again
    listed = writer.get("/api/v1/namespaces/work/webhooks").json()
    assert [s["id"] for s in listed] == [body["id"]] and "secret" not in listed[0]


def test_every_event_is_the_default(writer):
    body = writer.post("/api/v1/namespaces/work/webhooks", {"url": URL}, format="json").json()
    assert "review.due" in body["events"] and len(body["events"]) == 9


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "http://10.0.0.1/hook"}, "url"),
        ({"url": "ftp://example.com/x"}, "url"),
        # urlsplit drops tabs and line breaks; no HTTP client sends them, nor to port 0.
        ({"url": "http://127.0.0.1:9/a\nb"}, "url"),
        ({"url": "http://127.0.0.1:9/a\tb"}, "url"),
        ({"url": "http://127.0.0.1:9/a b"}, "url"),
        ({"url": "http://127.0.0.1:0/hook"}, "url"),
        ({"url": URL, "events": ["memory.eaten"]}, "events"),
        ({"url": URL, "events": []}, "events"),
        ({"url": URL, "ceiling": "restricted"}, "ceiling"),
        ({"url": URL, "enabled": "yes"}, "enabled"),
        ({"url": URL, "secret": "mine"}, "secret"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(writer, body, field, nothing_written):
    with nothing_written():
        response = writer.post("/api/v1/namespaces/work/webhooks", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/a\nb", "http://127.0.0.1:0/hook"])
def test_a_patch_to_an_unreachable_url_is_a_400_naming_it(writer, namespace, url):
    subscription = hooks.webhook_subscription_create(namespace=namespace, url=URL)
    response = writer.patch(f"/api/v1/webhooks/{subscription.pk}", {"url": url}, format="json")
    assert response.status_code == 400, response.content
    assert "url" in response.json()["error"]["fields"]
    subscription.refresh_from_db()
    assert subscription.url == URL


def test_a_read_only_token_cannot_create_or_change(user, namespace, make_token, api):
    subscription = hooks.webhook_subscription_create(namespace=namespace, url=URL)
    _, secret = make_token(user, namespaces=[namespace], access="read")
    reader = api(secret)
    assert reader.get("/api/v1/namespaces/work/webhooks").status_code == 200
    created = reader.post("/api/v1/namespaces/work/webhooks", {"url": URL}, format="json")
    assert created.status_code == 403
    patched = reader.patch(f"/api/v1/webhooks/{subscription.pk}", {"enabled": False}, format="json")
    assert patched.status_code == 403


def test_a_subscription_above_the_callers_ceiling_answers_404(user, namespace, make_token, api):
    subscription = hooks.webhook_subscription_create(
        namespace=namespace, url=URL, ceiling=Classification.RESTRICTED
    )
    _, secret = make_token(user, namespaces=[namespace], ceiling=Classification.INTERNAL)
    client = api(secret)
    assert client.get(f"/api/v1/webhooks/{subscription.pk}").status_code == 404
    assert client.get(f"/api/v1/webhooks/{subscription.pk}/deliveries").status_code == 404
    assert client.get("/api/v1/namespaces/work/webhooks").json() == []


def test_patch_disables_and_enables_and_delete_removes(writer, namespace):
    subscription = hooks.webhook_subscription_create(namespace=namespace, url=URL)
    WebhookSubscription.objects.filter(pk=subscription.pk).update(
        consecutive_failures=10, disabled_reason="Disabled after 10 failed deliveries."
    )
    off = writer.patch(f"/api/v1/webhooks/{subscription.pk}", {"enabled": False}, format="json")
    assert off.json()["enabled"] is False
    on = writer.patch(f"/api/v1/webhooks/{subscription.pk}", {"enabled": True}, format="json")
    assert on.json()["consecutive_failures"] == 0 and on.json()["disabled_reason"] == ""
    assert writer.delete(f"/api/v1/webhooks/{subscription.pk}").status_code == 204
    assert not WebhookSubscription.objects.exists()


def test_the_delivery_log_and_redelivery(writer, namespace, django_capture_on_commit_callbacks):
    subscription = hooks.webhook_subscription_create(namespace=namespace, url=URL)
    for n in range(3):
        services.memory_create(namespace=namespace, content=f"Logged fact {n}.")
    writer.get("/api/v1/namespaces")  # the token's first use and the throttle's first window
    with CaptureQueriesContext(connection) as queries:
        page = writer.get(f"/api/v1/webhooks/{subscription.pk}/deliveries").json()
    # The token, the throttle (4), the scope, the subscription and one page: no N+1.
    assert len(queries) <= 8
    assert [d["event_type"] for d in page["results"]] == ["memory.created"] * 3
    assert "payload" not in page["results"][0]
    delivery = WebhookDelivery.objects.order_by("id").first()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="failed", attempts=5)
    response = writer.post(f"/api/v1/webhooks/deliveries/{delivery.pk}/redeliver")
    assert response.status_code == 200
    assert response.json()["status"] == "pending"
    assert response.json()["webhook_id"] == delivery.webhook_id


def test_another_users_namespace_answers_404(other_user, make_token, api, namespace):
    _, secret = make_token(other_user)
    client = api(secret)
    assert client.get("/api/v1/namespaces/work/webhooks").status_code == 404
    assert (
        client.post("/api/v1/namespaces/work/webhooks", {"url": URL}, format="json").status_code
        == 404
    )
