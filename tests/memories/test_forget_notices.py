"""memory.about_to_forget, the daily webhook of the about-to-forget digest: once per memory
per crossing (the next day's run sends nothing again; a use and a later approach to the
threshold is a new crossing), within each subscription's ceiling, and nothing read unless a
subscription listens."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories import services
from memories.forget_notices import about_to_forget_notify
from memories.models import BackgroundRun, Classification, Memory, WebhookDelivery
from memories.services import webhooks as hooks
from memories.tasks import SCHEDULES, about_to_forget_webhooks

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)
EVENT = "memory.about_to_forget"


def _aged(memory: Memory, days: float, now: datetime) -> Memory:
    """Last used `days` before `now`. With the defaults (3-day half-life, beta 0.6, forget
    under 0.05) a memory never used again is forgotten 12.97 days after its last use."""
    Memory.objects.filter(pk=memory.pk).update(last_used_at=now - timedelta(days=days))
    memory.refresh_from_db()
    return memory


@pytest.fixture
def now():
    return timezone.now()


@pytest.fixture
def subscribe(namespace, receiver):
    def make(**fields):
        fields.setdefault("namespace", namespace)
        fields.setdefault("url", receiver.url)
        fields.setdefault("events", [EVENT])
        return hooks.webhook_subscription_create(**fields)

    return make


def _sent(subscription=None) -> list[tuple[int, str]]:
    deliveries = WebhookDelivery.objects.filter(event_type=EVENT).order_by("id")
    if subscription is not None:
        deliveries = deliveries.filter(subscription=subscription)
    return [(d.memory_ref, d.payload["data"]["last_used_at"]) for d in deliveries]


def test_each_memory_is_announced_once_per_crossing(
    make_memory, subscribe, receiver, committed, now
):
    subscription = subscribe()
    soon = _aged(make_memory("Soon forgotten."), 11, now)  # 1.97 days left
    later = _aged(make_memory("Later forgotten."), 9, now)  # 3.97: outside the 3 days
    fresh = make_memory("Fresh.")
    with committed():
        first = about_to_forget_notify(now=now)
        again = about_to_forget_notify(now=now + timedelta(hours=1))  # a second run that day
    assert first == {"namespaces": 1, "memories": 1, "deliveries": 1}
    assert again == {"namespaces": 1, "memories": 1, "deliveries": 0}
    assert len(receiver.requests) == 1
    data = receiver.requests[0].payload["data"]
    assert data["memory"] == {"id": soon.pk, "classification": "internal", "topic": ""}
    assert data["last_used_at"] == soon.last_used_at.isoformat()
    forget_at = datetime.fromisoformat(data["forget_at"])
    assert abs(forget_at - (now + 1.97 * DAY)) < timedelta(hours=1)
    assert data["score"] == pytest.approx(0.5 ** (11 / 3), rel=1e-6)

    # The next day: nothing again for `soon`; `later` has come within the 3 days.
    with committed():
        next_day = about_to_forget_notify(now=now + DAY)
    assert next_day["deliveries"] == 1
    assert [pk for pk, _ in _sent(subscription)] == [soon.pk, later.pk]

    # A use restarts `soon`'s clock: it heads for the threshold again, a new crossing.
    services.memory_touch(memory=soon, now=now + DAY)
    soon.refresh_from_db()
    with committed():
        assert about_to_forget_notify(now=now + 2 * DAY)["deliveries"] == 0  # far off now
        # One use: (1 + 1)^0.6 x 0.5^(t / 3) < 0.05 at t = 14.77 days after it.
        crossed = about_to_forget_notify(now=now + DAY + 13 * DAY)
    # `soon` again, and `fresh` for the first time; `later`, on its old clock, not again.
    assert crossed["deliveries"] == 2
    assert sorted(_sent(subscription)[2:]) == sorted(
        [(soon.pk, soon.last_used_at.isoformat()), (fresh.pk, fresh.last_used_at.isoformat())]
    )
    assert len({d.webhook_id for d in WebhookDelivery.objects.all()}) == 4


def test_each_subscription_gets_only_what_its_ceiling_admits(make_memory, subscribe, now):
    low = subscribe(ceiling=Classification.INTERNAL)
    high = subscribe(ceiling=Classification.RESTRICTED)
    public = _aged(make_memory("Public, fading.", classification=Classification.PUBLIC), 11, now)
    secret = _aged(
        make_memory("Restricted, fading.", classification=Classification.RESTRICTED), 11, now
    )
    assert about_to_forget_notify(now=now)["deliveries"] == 3
    assert [pk for pk, _ in _sent(low)] == [public.pk]
    assert sorted(pk for pk, _ in _sent(high)) == sorted([public.pk, secret.pk])
    row = WebhookDelivery.objects.get(subscription=high, memory_ref=secret.pk)
    assert row.classification == Classification.RESTRICTED
    assert row.payload["data"]["memory"]["classification"] == "restricted"


def test_only_namespaces_listening_are_scored_and_only_their_memories_sent(
    user, other_user, namespace, make_memory, subscribe, receiver, now
):
    mine = _aged(make_memory("Mine, fading."), 11, now)
    quiet = services.namespace_create(owner=user, name="Quiet", mode="personal")
    _aged(services.memory_create(namespace=quiet, content="Quiet, fading."), 11, now)
    theirs = services.namespace_create(owner=other_user, name="Bob's", mode="personal")
    bobs = _aged(services.memory_create(namespace=theirs, content="Bob's, fading."), 11, now)
    subscribe(namespace=quiet, events=["memory.created"])  # another event only
    subscribe(namespace=namespace)
    subscribe(namespace=theirs)
    counts = about_to_forget_notify(now=now)
    assert counts == {"namespaces": 2, "memories": 2, "deliveries": 2}
    by_namespace = dict(
        WebhookDelivery.objects.filter(event_type=EVENT).values_list("namespace_id", "memory_ref")
    )
    assert by_namespace == {namespace.pk: mine.pk, theirs.pk: bobs.pk}
    # One namespace alone, as the task may be called.
    WebhookDelivery.objects.all().delete()
    assert about_to_forget_notify(namespace_id=theirs.pk, now=now)["memories"] == 1


def test_nothing_is_read_when_no_subscription_listens(make_memory, subscribe, now):
    _aged(make_memory("Fading."), 11, now)
    subscribe(events=["memory.created"])
    subscribe(events=[EVENT], enabled=False)
    with CaptureQueriesContext(connection) as context:
        counts = about_to_forget_notify(now=now)
    assert counts == {"namespaces": 0, "memories": 0, "deliveries": 0}
    assert len(context.captured_queries) == 1


def test_the_queries_do_not_grow_with_the_memories(make_memory, subscribe, now):
    subscribe()

    def queries(count: int) -> int:
        Memory.objects.all().delete()
        for i in range(count):
            _aged(make_memory(f"Fading fact number {i}."), 11, now)
        with CaptureQueriesContext(connection) as context:
            assert about_to_forget_notify(now=now)["memories"] == count
        return len(context.captured_queries)

    assert queries(3) == queries(30)


def test_the_task_is_scheduled_daily_and_recorded(make_memory, subscribe, now):
    spec = next(s for s in SCHEDULES if s.func == "memories.tasks.about_to_forget_webhooks")
    assert spec.interval_setting == "ABOUT_TO_FORGET_INTERVAL_MINUTES"
    assert settings.ABOUT_TO_FORGET_INTERVAL_MINUTES == 1440
    subscribe()
    _aged(make_memory("Fading."), 11, now)
    counts = about_to_forget_webhooks()
    assert counts == {"namespaces": 1, "memories": 1, "deliveries": 1}
    run = BackgroundRun.objects.get(kind=BackgroundRun.Kind.ABOUT_TO_FORGET)
    assert (run.status, run.counts) == (BackgroundRun.Status.OK, counts)
    assert about_to_forget_webhooks()["deliveries"] == 0
