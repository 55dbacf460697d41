"""Webhooks: what each write sends, to whom, signed how, retried, refused and disabled."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from memories import services
from memories.models import Classification, Memory, WebhookDelivery, WebhookSubscription
from memories.services import webhooks as hooks
from memories.sweep import sweep_run
from memories.webhook_delivery import retry_delay, webhook_deliver_run, webhooks_retry_due
from memories.webhook_targets import target_refusal

pytestmark = pytest.mark.django_db


@pytest.fixture
def subscribe(namespace, receiver):
    def make(**fields) -> WebhookSubscription:
        fields.setdefault("url", receiver.url)
        fields.setdefault("namespace", namespace)
        return hooks.webhook_subscription_create(**fields)

    return make


def _verified(subscription: WebhookSubscription, request) -> dict:
    return Webhook(subscription.secret).verify(request.body, request.headers)


def test_a_created_memory_is_delivered_after_commit_signed_per_the_standard(
    subscribe, receiver, committed, namespace
):
    subscription = subscribe()
    with committed():
        memory = services.memory_create(namespace=namespace, content="Ada prefers tea.")
        assert receiver.requests == []  # nothing before the commit
    [request] = receiver.requests
    payload = _verified(subscription, request)
    assert payload["type"] == "memory.created"
    assert payload["data"]["namespace"] == {"id": namespace.pk, "slug": "work", "owner": "ada"}
    assert payload["data"]["memory"]["id"] == memory.pk
    assert payload["data"]["memory"]["content"] == "Ada prefers tea."
    assert payload["data"]["memory"]["classification"] == "internal"
    delivery = WebhookDelivery.objects.get()
    assert request.webhook_id == delivery.webhook_id
    assert (delivery.status, delivery.attempts, delivery.last_response_code) == (
        "delivered",
        1,
        200,
    )
    assert delivery.last_duration_ms is not None


def test_a_wrong_secret_does_not_verify(subscribe, receiver, committed, namespace):
    subscribe()
    with committed():
        services.memory_create(namespace=namespace, content="Signed text.")
    other = Webhook(hooks.webhook_secret_new())
    with pytest.raises(Exception, match="signature"):
        other.verify(receiver.requests[0].body, receiver.requests[0].headers)


def test_nothing_is_sent_for_a_rolled_back_write(subscribe, receiver, committed, namespace):
    subscribe()
    with committed(), pytest.raises(RuntimeError), transaction.atomic():
        services.memory_create(namespace=namespace, content="Never stored.")
        raise RuntimeError("the write fails after its event")
    assert WebhookDelivery.objects.count() == 0
    assert receiver.requests == []


def test_a_memory_above_the_ceiling_is_not_sent(subscribe, receiver, committed, namespace):
    subscribe(ceiling=Classification.INTERNAL)
    with committed():
        services.memory_create(
            namespace=namespace, content="Secret.", classification=Classification.CONFIDENTIAL
        )
        services.memory_create(namespace=namespace, content="Plain.")
    assert [r.payload["data"]["memory"]["content"] for r in receiver.requests] == ["Plain."]


def test_a_change_of_level_is_sent_at_the_higher_level(subscribe, receiver, committed, make_memory):
    memory = make_memory(content="Soon secret.")
    subscribe(ceiling=Classification.INTERNAL, events=["memory.updated"])
    with committed():
        services.memory_update(memory=memory, changes={"classification": Classification.RESTRICTED})
    assert receiver.requests == []


def test_a_subscription_gets_only_the_events_it_asked_for(
    subscribe, receiver, committed, make_memory
):
    memory = make_memory()
    subscribe(events=["memory.forgotten"])
    with committed():
        services.memory_update(memory=memory, changes={"topic": "db"})
        services.memory_forget(memory=memory, reason="stale")
    assert [r.payload["type"] for r in receiver.requests] == ["memory.forgotten"]
    assert receiver.requests[0].payload["data"]["changes"]["after"]["reason"] == "stale"


def test_one_memorys_events_arrive_in_order(subscribe, receiver, committed, namespace):
    subscribe()
    with committed():
        memory = services.memory_create(namespace=namespace, content="A changing fact.")
        services.memory_update(memory=memory, changes={"topic": "facts"})
        services.memory_forget(memory=memory, reason="wrong")
        services.memory_restore(memory=memory)
        services.memory_purge(memory=Memory.objects.get(pk=memory.pk))
    assert [r.payload["type"] for r in receiver.requests] == [
        "memory.created",
        "memory.updated",
        "memory.forgotten",
        "memory.restored",
        "memory.purged",
    ]


def test_supersede_and_promotion_are_announced(subscribe, receiver, committed, namespace):
    old = services.memory_create(namespace=namespace, content="The office is in Leeds.")
    subscribe(events=["memory.superseded", "memory.promoted"])
    with committed():
        services.memory_create(
            namespace=namespace, content="The office is in York.", supersedes=[old]
        )
        services.memory_promote(memory=Memory.objects.get(pk=old.pk))
    types = [r.payload["type"] for r in receiver.requests]
    assert types[0] == "memory.superseded"
    assert receiver.requests[0].payload["data"]["memory"]["id"] == old.pk


def test_the_sweeps_forgetting_and_purge_are_announced(subscribe, receiver, committed, namespace):
    now = timezone.now()
    stale = services.memory_create(namespace=namespace, content="Long unused.")
    gone = services.memory_create(namespace=namespace, content="Forgotten long ago.")
    Memory.objects.filter(pk=stale.pk).update(last_used_at=now - timedelta(days=60))
    Memory.objects.filter(pk=gone.pk).update(
        status="forgotten", forgotten_at=now - timedelta(days=60)
    )
    subscribe(events=["memory.forgotten", "memory.purged"])
    with committed():
        sweep_run(now=now)
    got = {(r.payload["type"], r.payload["data"]["memory"]["id"]) for r in receiver.requests}
    assert got == {("memory.forgotten", stale.pk), ("memory.purged", gone.pk)}


def test_a_bulk_create_of_1000_is_addressed_set_based(subscribe, namespace, committed):
    items = [{"namespace": namespace, "content": f"Bulk fact {n}."} for n in range(1000)]
    with CaptureQueriesContext(connection) as without:
        services.memory_bulk_create(items=items[:500])
    subscribe(url="http://127.0.0.1:9/unused")
    WebhookSubscription.objects.update(enabled=True)
    with CaptureQueriesContext(connection) as with_hooks:
        services.memory_bulk_create(items=items[500:])
    # The subscription, the namespaces, and the inserts of 500 rows: batches of 500 on
    # PostgreSQL, of SQLite's variable limit / 18 columns there; never one per memory.
    assert len(with_hooks) - len(without) <= 2 + 500 // 50
    assert WebhookDelivery.objects.count() == 500
    ids = list(WebhookDelivery.objects.order_by("id").values_list("memory_ref", flat=True))
    assert ids == sorted(ids)


def test_without_subscriptions_a_write_costs_one_query_more(namespace):
    with CaptureQueriesContext(connection) as queries:
        services.memory_create(namespace=namespace, content="Nobody listens.")
    assert sum("memories_webhooksubscription" in q["sql"] for q in queries) == 1


# --- Retries, giving up, disabling, redelivery --------------------------------------------


def test_a_500_is_retried_with_backoff_and_later_deliveries_wait(
    subscribe, receiver, committed, namespace, settings
):
    settings.WEBHOOK_BACKOFF_SECONDS = 60
    receiver.codes = [500]
    subscription = subscribe()
    with committed():
        services.memory_create(namespace=namespace, content="First.")
        services.memory_create(namespace=namespace, content="Second.")
    first, second = WebhookDelivery.objects.order_by("id")
    first.refresh_from_db()
    assert (first.status, first.attempts, first.last_response_code) == ("pending", 1, 500)
    assert first.next_attempt_at > timezone.now() + timedelta(seconds=50)
    assert second.status == "pending" and len(receiver.requests) == 1  # held back
    WebhookDelivery.objects.filter(pk=first.pk).update(next_attempt_at=timezone.now())
    with committed():
        assert webhooks_retry_due() == {"subscriptions": 1, "pruned": 0}
    assert [r.payload["data"]["memory"]["content"] for r in receiver.requests] == [
        "First.",
        "First.",
        "Second.",
    ]
    assert receiver.requests[0].webhook_id == receiver.requests[1].webhook_id
    first.refresh_from_db()
    assert (first.status, first.attempts, first.last_response_code) == ("delivered", 2, 200)
    subscription.refresh_from_db()
    assert subscription.consecutive_failures == 0


def test_backoff_grows_exponentially():
    assert [retry_delay(n, base=60, factor=3) for n in (1, 2, 3, 4)] == [60, 180, 540, 1620]
    with pytest.raises(ValueError):
        retry_delay(0, base=60, factor=3)


def test_failed_deliveries_in_a_row_disable_the_subscription_with_a_notice(
    subscribe, receiver, committed, namespace, settings
):
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    settings.WEBHOOK_DISABLE_AFTER_FAILURES = 2
    receiver.codes = [500, 503]
    subscription = subscribe()
    with committed():
        for n in range(3):
            services.memory_create(namespace=namespace, content=f"Fact {n}.")
    subscription.refresh_from_db()
    assert not subscription.enabled
    assert "2 failed deliveries in a row" in subscription.disabled_reason
    assert "HTTP 503" in subscription.disabled_reason
    statuses = list(WebhookDelivery.objects.order_by("id").values_list("status", flat=True))
    assert statuses == ["failed", "failed", "pending"]
    # Enabling it again clears the notice and sends what is pending.
    with committed():
        hooks.webhook_subscription_update(subscription=subscription, changes={"enabled": True})
    subscription.refresh_from_db()
    assert subscription.enabled and not subscription.disabled_reason
    assert WebhookDelivery.objects.order_by("id").last().status == "delivered"


def test_redelivery_by_hand_sends_the_same_webhook_id_again(
    subscribe, receiver, committed, namespace
):
    subscribe()
    with committed():
        services.memory_create(namespace=namespace, content="Once more.")
    delivery = WebhookDelivery.objects.get()
    with committed():
        hooks.webhook_delivery_redeliver(delivery=delivery)
    assert [r.webhook_id for r in receiver.requests] == [delivery.webhook_id] * 2
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.round_start) == ("delivered", 2, 1)


def test_a_second_run_finds_the_subscription_held_and_leaves(subscribe, namespace):
    subscription = subscribe()
    services.memory_create(namespace=namespace, content="Held.")
    WebhookSubscription.objects.filter(pk=subscription.pk).update(
        lease_token="other", lease_until=timezone.now() + timedelta(seconds=30)
    )
    assert webhook_deliver_run(subscription_id=subscription.pk) == {"busy": 1}
    assert WebhookDelivery.objects.get().status == "pending"


# --- Targets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/x",
        "http://[::1]/x",
        "http://10.0.0.8/x",
        "http://192.168.1.1/x",
        "http://169.254.169.254/latest/meta-data",
        "http://[fe80::1]/x",
        "http://[::ffff:10.0.0.1]/x",
        "http://[fec0::1]/x",  # site-local
        "http://[2002:7f00:1::1]/x",  # 6to4 of 127.0.0.1
        "http://[2002:a9fe:a9fe::1]/x",  # 6to4 of 169.254.169.254
        "http://[64:ff9b::a9fe:a9fe]/x",  # NAT64 of 169.254.169.254
        "http://[::7f00:1]/x",  # IPv4-compatible 127.0.0.1
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x",  # Teredo
        "http://0.0.0.0/x",
        "http://224.0.0.1/x",
        "ftp://example.com/x",
        "http://user:pw@example.com/x",
        "http:///x",
    ],
)
def test_private_loopback_and_odd_targets_are_refused(url, settings):
    settings.WEBHOOK_ALLOW_LOOPBACK = False
    assert target_refusal(url)


@pytest.mark.parametrize(
    "url", ["https://exa mple.com/", "https://exa<mple.com/", "https://a..b/", "http://x%20y/"]
)
def test_a_host_no_name_could_be_is_an_invalid_url_not_one_that_does_not_resolve(url):
    assert target_refusal(url).startswith("Not a valid URL")


@pytest.mark.parametrize(
    "url",
    [
        "http://93.184.215.14/a\nb",
        "http://93.184.215.14/a\tb",
        "http://93.184.215.14/a b",
        "http://93.184.215.14/\x00",
        "http://93.184.215.14/a\u200bb",
        "\thttp://93.184.215.14/",
        "http://93.184.215.14:0/",
    ],
)
def test_a_url_with_whitespace_a_control_character_or_port_0_is_invalid(url):
    assert target_refusal(url).startswith("Not a valid URL")


def test_an_ipv6_address_is_judged_by_the_ipv4_address_it_carries(settings):
    settings.WEBHOOK_ALLOW_LOOPBACK = False
    assert "127.0.0.1" in target_refusal("http://[2002:7f00:1::1]/x")
    assert "169.254.169.254" in target_refusal("http://[2002:a9fe:a9fe::1]/x")
    assert "site-local" in target_refusal("http://[fec0::1]/x")
    # Public ones stay allowed: 6to4 of 8.8.8.8, and 8.8.8.8 mapped.
    assert target_refusal("http://[2002:808:808::1]/x") is None
    assert target_refusal("http://[::ffff:8.8.8.8]/x") is None


def test_every_address_of_a_host_is_checked(settings, monkeypatch):
    settings.WEBHOOK_ALLOW_LOOPBACK = False

    def resolves(host, port, **kwargs):
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", resolves)
    assert "10.1.2.3" in target_refusal("https://mixed.example/hook")


def test_a_public_address_is_allowed_and_loopback_only_by_setting(settings):
    settings.WEBHOOK_ALLOW_LOOPBACK = False
    assert target_refusal("https://93.184.215.14/hook") is None
    settings.WEBHOOK_ALLOW_LOOPBACK = True
    assert target_refusal("http://127.0.0.1:8000/hook") is None
    assert target_refusal("http://10.0.0.1/hook")
    settings.WEBHOOK_ALLOW_PRIVATE = True
    assert target_refusal("http://10.0.0.1/hook") is None


def test_a_refused_target_is_refused_at_creation(namespace, settings):
    settings.WEBHOOK_ALLOW_LOOPBACK = False
    with pytest.raises(Exception) as error:
        hooks.webhook_subscription_create(namespace=namespace, url="http://127.0.0.1/hook")
    assert "loopback" in str(error.value)


def test_a_target_that_became_private_is_not_contacted(
    subscribe, receiver, committed, namespace, settings
):
    subscribe()
    settings.WEBHOOK_ALLOW_LOOPBACK = False  # as if the host now resolved to loopback
    with committed():
        services.memory_create(namespace=namespace, content="Not sent.")
    assert receiver.requests == []
    delivery = WebhookDelivery.objects.get()
    assert "loopback" in delivery.last_error and delivery.last_response_code is None


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        # Old data, written before the URL check refused it: httpx raises InvalidURL,
        # which is no httpx.HTTPError. The check at delivery time refuses it first.
        ({"url": "http://127.0.0.1:9/a\nb"}, "control characters"),
        ({"url": "http://127.0.0.1:0/hook"}, "port 0"),
        # A secret that is not base64: signing fails before anything is sent.
        ({"secret": "whsec_!!!notbase64"}, "Error: Invalid base64"),
    ],
)
def test_stored_data_nothing_can_send_fails_attempts_until_the_subscription_is_disabled(
    subscribe, committed, namespace, settings, fields, error
):
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    settings.WEBHOOK_DISABLE_AFTER_FAILURES = 2
    settings.WEBHOOK_BACKOFF_SECONDS = 0
    subscription = subscribe()
    WebhookSubscription.objects.filter(pk=subscription.pk).update(**fields)
    with committed():
        services.memory_create(namespace=namespace, content="First.")
        services.memory_create(namespace=namespace, content="Second.")
    for _ in range(3):  # as the retry schedule would, without the worker ever failing
        webhook_deliver_run(subscription_id=subscription.pk)
    deliveries = list(WebhookDelivery.objects.order_by("id"))
    assert [(d.status, d.attempts) for d in deliveries] == [("failed", 2), ("failed", 2)]
    assert all(error in d.last_error for d in deliveries)
    subscription.refresh_from_db()
    assert not subscription.enabled and error in subscription.disabled_reason


def test_a_url_httpx_refuses_is_a_failed_attempt_not_a_failed_run(
    subscribe, receiver, committed, namespace, monkeypatch
):
    """Past the address check (as if it had let one through), whatever stops the request
    from being built or sent is recorded, not raised."""
    subscription = subscribe()
    monkeypatch.setattr("memories.webhook_delivery.target_refusal", lambda url: None)
    for url, error in [
        ("http://127.0.0.1:9/a\nb", "InvalidURL"),
        ("gopher://127.0.0.1:9/x", "UnsupportedProtocol"),
    ]:
        WebhookSubscription.objects.filter(pk=subscription.pk).update(url=url)
        WebhookDelivery.objects.all().delete()
        with committed():
            services.memory_create(namespace=namespace, content=f"Never sent to {url}.")
        delivery = WebhookDelivery.objects.get()
        assert (delivery.status, delivery.attempts) == ("pending", 1)
        assert delivery.last_error.startswith(error) and delivery.last_response_code is None
        assert delivery.next_attempt_at > timezone.now()  # a retry, with its backoff
    assert receiver.requests == []


def test_a_ceiling_above_the_creators_is_refused(namespace):
    with pytest.raises(Exception, match="ceiling"):
        hooks.webhook_subscription_create(
            namespace=namespace,
            url="http://127.0.0.1/hook",
            ceiling=Classification.RESTRICTED,
            max_ceiling=Classification.INTERNAL,
        )


# --- review.due and memory.about_to_forget -------------------------------------------------


def test_review_due_counts_only_cards_within_each_ceiling_once_a_day(
    user,
    receiver,
    committed,
):
    from review import services as review
    from review.models import Card
    from review.webhooks import review_due_webhooks_run

    namespace = services.namespace_create(owner=user, name="Study", mode="personal")
    low = hooks.webhook_subscription_create(
        namespace=namespace, url=receiver.url, events=["review.due"], ceiling=0
    )
    high = hooks.webhook_subscription_create(
        namespace=namespace, url=receiver.url, events=["review.due"], ceiling=3
    )
    for level in (0, 0, 3):
        memory = services.memory_create(
            namespace=namespace,
            content=f"Card at level {level} {Card.objects.count()}.",
            classification=level,
        )
        review.card_ensure(memory=memory)
    Card.objects.update(next_review=timezone.now() - timedelta(hours=1))
    with committed():
        review_due_webhooks_run()
        review_due_webhooks_run()  # the same day: nothing new
    by_sub = {d.subscription_id: d.payload["data"]["due"] for d in WebhookDelivery.objects.all()}
    assert by_sub == {low.pk: 2, high.pk: 3}
    assert len(receiver.requests) == 2


def test_about_to_forget_has_a_defined_payload(namespace, subscribe, committed, receiver):
    subscribe(events=["memory.about_to_forget"])
    now = timezone.now()
    event = hooks.about_to_forget_event(
        namespace_id=namespace.pk,
        memory_id=7,
        classification=Classification.INTERNAL,
        topic="db",
        score=0.06,
        forget_at=now + timedelta(days=1),
        last_used_at=now - timedelta(days=11),
        now=now,
    )
    with committed():
        assert hooks.webhook_events_emit([event]) == 1
    data = receiver.requests[0].payload["data"]
    assert data["memory"] == {"id": 7, "classification": "internal", "topic": "db"}
    assert data["score"] == 0.06
    assert data["last_used_at"] == (now - timedelta(days=11)).isoformat()
