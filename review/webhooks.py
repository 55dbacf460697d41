"""review.due: once a day, each namespace with due cards tells its webhooks how many.

The count is of reviewable due cards (live, current memories), per level of their memory,
so each subscription is told only of the cards within its ceiling
(memories.services.webhooks.review_due_emit). Only namespaces with a subscription that
asked for review.due are counted.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count
from django.utils import timezone

from memories.models import WebhookSubscription
from memories.services.webhooks import review_due_emit
from review.models import Card


def review_due_webhooks_run(*, now: datetime | None = None) -> dict[str, int]:
    """Emit today's review.due events; a second run on the same day sends nothing new
    (the webhook-id is derived from the day). Returns namespaces and deliveries made."""
    now = now or timezone.now()
    listening = {
        namespace_id
        for namespace_id, events in WebhookSubscription.objects.filter(enabled=True).values_list(
            "namespace_id", "events"
        )
        if "review.due" in (events or ())
    }
    if not listening:
        return {"namespaces": 0, "deliveries": 0}
    rows = (
        Card.objects.reviewable()
        .due(now)
        .filter(namespace_id__in=listening)
        .values_list("namespace_id", "memory__classification")
        .annotate(n=Count("id"))
        .order_by()
    )
    due = {(namespace_id, level): n for namespace_id, level, n in rows}
    made = review_due_emit(due=due, day=timezone.localdate(now).isoformat(), now=now)
    return {"namespaces": len({ns for ns, _ in due}), "deliveries": made}
