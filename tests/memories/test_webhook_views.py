"""The dashboard's webhooks: add (secret once), enable and disable, the log, redelivery."""

from __future__ import annotations

import pytest

from memories import services
from memories.models import WebhookDelivery, WebhookSubscription
from memories.services import webhooks as hooks

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(client, user):
    client.force_login(user)
    return client


def test_adding_a_webhook_shows_its_secret_once(ada, namespace, receiver):
    response = ada.post(
        "/namespaces/work/webhooks/new",
        {"url": receiver.url, "events": ["memory.created"], "ceiling": "1"},
    )
    assert response.status_code == 200
    subscription = WebhookSubscription.objects.get()
    assert subscription.secret in response.content.decode()
    page = ada.get("/namespaces/work/").content.decode()
    assert subscription.secret not in page and receiver.url in page


def test_a_refused_url_is_shown_on_the_form(ada, namespace, settings):
    settings.WEBHOOK_ALLOW_LOOPBACK = False
    response = ada.post(
        "/namespaces/work/webhooks/new",
        {"url": "http://127.0.0.1/x", "events": ["memory.created"], "ceiling": "1"},
    )
    assert "loopback" in response.content.decode()
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:9/a\nb", "Enter a valid URL."),
        ("http://127.0.0.1:0/x", "port 0"),
    ],
)
def test_a_url_nothing_could_reach_is_refused_by_the_form_and_the_admin(
    ada, user, namespace, url, message
):
    response = ada.post(
        "/namespaces/work/webhooks/new",
        {"url": url, "events": ["memory.created"], "ceiling": "1"},
    )
    assert message in response.content.decode()
    user.is_staff = user.is_superuser = True
    user.save()
    response = ada.post(
        "/admin/memories/webhooksubscription/add/",
        {"namespace": namespace.pk, "url": url, "events": '["memory.created"]', "ceiling": "1"},
    )
    assert response.status_code == 200 and message in response.content.decode()
    assert not WebhookSubscription.objects.exists()


def test_disable_enable_log_and_redeliver(ada, namespace, receiver):
    subscription = hooks.webhook_subscription_create(namespace=namespace, url=receiver.url)
    WebhookSubscription.objects.filter(pk=subscription.pk).update(
        disabled_reason="Disabled after 10 failed deliveries in a row (last: HTTP 500)."
    )
    assert "Disabled after 10" in ada.get("/namespaces/work/").content.decode()
    ada.post(f"/namespaces/work/webhooks/{subscription.pk}/toggle")
    subscription.refresh_from_db()
    assert not subscription.enabled
    ada.post(f"/namespaces/work/webhooks/{subscription.pk}/toggle")
    subscription.refresh_from_db()
    assert subscription.enabled and not subscription.disabled_reason
    services.memory_create(namespace=namespace, content="Logged on the page.")
    delivery = WebhookDelivery.objects.get()
    log = ada.get(f"/namespaces/work/webhooks/{subscription.pk}/").content.decode()
    assert delivery.webhook_id in log and "Logged on the page." in log
    response = ada.post(f"/namespaces/work/webhooks/deliveries/{delivery.pk}/redeliver")
    assert response.status_code == 303
    delivery.refresh_from_db()
    assert delivery.last_error == "Redelivery requested."


def test_another_users_webhook_answers_404(client, other_user, namespace, receiver):
    subscription = hooks.webhook_subscription_create(namespace=namespace, url=receiver.url)
    client.force_login(other_user)
    assert client.get(f"/namespaces/work/webhooks/{subscription.pk}/").status_code == 404
    assert client.post(f"/namespaces/work/webhooks/{subscription.pk}/toggle").status_code == 404
