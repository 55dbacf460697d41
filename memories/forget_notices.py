"""memory.about_to_forget: once a day, what decay will forget within FORGET_DIGEST_DAYS is
announced to the webhooks that asked for it, once per memory per crossing.

Only namespaces with an enabled subscription to the event are looked at. For each, one
statement scores its active short-term memories at now + FORGET_DIGEST_DAYS with its decay
model (memories.selectors.about_to_forget_ids: the digest page's own SQL, at every level);
the few it finds get their payload (when they fall due, their score now) from the pure
memories.decay. Each event carries its memory's level, so a subscription whose ceiling is
below it gets nothing (webhook_events_emit).

Its key is the crossing's: the memory and the last use its decay runs from
(about_to_forget_event). The next day's run finds the memory still heading for the
threshold on the same clock and sends nothing; a use restarts the clock, so a later
approach to the threshold is a new crossing and a new event.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memories.decay import DecayParams, decay_score, seconds_until_below
from memories.models import Memory, Namespace, WebhookSubscription
from memories.selectors import about_to_forget_ids
from memories.services.webhooks import WebhookEvent, about_to_forget_event, webhook_events_emit
from memories.sweep import thresholds_from_settings

EVENT = "memory.about_to_forget"
# Memories read and addressed per transaction.
CHUNK = 1_000
_FIELDS = ("id", "namespace_id", "classification", "topic", "use_count", "last_used_at")


def about_to_forget_notify(
    *, namespace_id: int | None = None, now: datetime | None = None, days: int | None = None
) -> dict[str, int]:
    """Send memory.about_to_forget for the memories decay will forget within `days`
    (FORGET_DIGEST_DAYS) in every namespace listening (or the one named), once per
    crossing. Returns the namespaces looked at, the memories found and the deliveries made
    (0 for the memories already announced on the same clock)."""
    now = now or timezone.now()
    days = settings.FORGET_DIGEST_DAYS if days is None else days
    subscriptions = WebhookSubscription.objects.filter(enabled=True)
    if namespace_id is not None:
        subscriptions = subscriptions.filter(namespace_id=namespace_id)
    listening = {
        listener
        for listener, events in subscriptions.values_list("namespace_id", "events")
        if EVENT in (events or ())
    }
    counts = {"namespaces": 0, "memories": 0, "deliveries": 0}
    if not listening:
        return counts
    threshold = thresholds_from_settings().forget
    for space in Namespace.objects.filter(pk__in=listening).order_by("pk"):
        ids = about_to_forget_ids(namespace=space, now=now, days=days)
        counts["namespaces"] += 1
        counts["memories"] += len(ids)
        params = space.decay_params()
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            found = Memory.objects.only(*_FIELDS, "strength").in_bulk(chunk)
            events = [
                _event(found[pk], params=params, threshold=threshold, now=now, days=days)
                for pk in chunk
                if pk in found  # purged since the statement
            ]
            with transaction.atomic():
                counts["deliveries"] += webhook_events_emit(events, now=now)
    return counts


def _event(
    memory: Memory, *, params: DecayParams, threshold: float, now: datetime, days: int
) -> WebhookEvent:
    left = seconds_until_below(
        threshold,
        use_count=memory.use_count,
        dt_seconds=(now - memory.last_used_at).total_seconds(),
        strength=memory.strength,
        params=params,
        horizon_days=days + 1,
    )
    return about_to_forget_event(
        namespace_id=memory.namespace_id,
        memory_id=memory.pk,
        classification=memory.classification,
        topic=memory.topic,
        score=decay_score(
            use_count=memory.use_count,
            last_used_at=memory.last_used_at,
            strength=memory.strength,
            now=now,
            params=params,
        ),
        # The statement and the bisection agree to a second; None only at that edge.
        forget_at=now + (timedelta(days=days) if left is None else timedelta(seconds=left)),
        last_used_at=memory.last_used_at,
        now=now,
    )
