"""Webhooks: subscriptions, what each event sends, and redelivery by hand.

One mechanism turns writes into deliveries: every writer of a memory's history (the
services' events, the bulk insert of 'created' events, supersede, the sweep) hands the
events it just wrote to memory_events_announce, in its own transaction. That writes one
WebhookDelivery per (event, subscription that asked for it, ceiling permitting), set-based,
and queues the delivery task for after the commit (config.queue.enqueue). A write that
rolls back therefore leaves no delivery and sends nothing; a committed one has its rows, so
a lost task is made good by the next retry run (memories.webhook_delivery).

Other events go through webhook_events_emit directly: review.due (review.tasks), and
memory.about_to_forget (defined here, emitted once a day by memories.forget_notices).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from config.queue import enqueue
from memories.models import (
    WEBHOOK_EVENTS,
    Classification,
    MemoryEvent,
    Namespace,
    WebhookDelivery,
    WebhookSubscription,
)
from memories.webhook_targets import target_refusal

# The history kinds that are webhook events (the others, touches, grades, cold storage,
# are too frequent or internal to announce).
EVENT_OF_KIND: dict[str, str] = {
    MemoryEvent.Kind.CREATED: "memory.created",
    MemoryEvent.Kind.UPDATED: "memory.updated",
    MemoryEvent.Kind.FORGOTTEN: "memory.forgotten",
    MemoryEvent.Kind.RESTORED: "memory.restored",
    MemoryEvent.Kind.SUPERSEDED: "memory.superseded",
    MemoryEvent.Kind.PROMOTED: "memory.promoted",
    MemoryEvent.Kind.PURGED: "memory.purged",
}
ANNOUNCED_KINDS = tuple(str(kind) for kind in EVENT_OF_KIND)
WEBHOOK_SECRET_BYTES = 32
SUBSCRIPTION_EDITABLE_FIELDS = ("url", "description", "events", "ceiling", "enabled")


@dataclass(frozen=True)
class WebhookEvent:
    """One event of a namespace, before it is addressed to subscriptions.

    `classification` is the level of what the data came from: a subscription whose ceiling
    is below it gets nothing. `key` makes the webhook-id deterministic, so an event emitted
    twice (review.due by two runs of its task on the same day) is delivered once.
    """

    namespace_id: int
    type: str
    classification: int
    data: Mapping[str, Any]
    occurred_at: datetime
    memory_ref: int | None = None
    key: str | None = None
    # Only for subscriptions of exactly this ceiling (an event told differently to each
    # level, like review.due's count of the cards each may know of).
    for_ceiling: int | None = None


def webhook_secret_new() -> str:
    """A Standard Webhooks secret: whsec_ and base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(WEBHOOK_SECRET_BYTES)).decode()


def _clean(fields: dict[str, Any], *, max_ceiling: int) -> dict[str, Any]:
    errors: dict[str, str] = {}
    if "url" in fields:
        refusal = target_refusal(fields["url"])
        if refusal:
            errors["url"] = refusal
    if "events" in fields:
        events = fields["events"]
        unknown = sorted(set(events) - set(WEBHOOK_EVENTS))
        if not events:
            errors["events"] = "Name at least one event."
        elif unknown:
            errors["events"] = f"Unknown events: {', '.join(unknown)}."
        else:
            fields["events"] = [name for name in WEBHOOK_EVENTS if name in set(events)]
    if "ceiling" in fields and fields["ceiling"] > max_ceiling:
        errors["ceiling"] = "Above your own ceiling."
    if errors:
        raise ValidationError(errors)
    return fields


@transaction.atomic
def webhook_subscription_create(
    *,
    namespace: Namespace,
    url: str,
    events: Sequence[str] = WEBHOOK_EVENTS,
    ceiling: int | None = None,
    description: str = "",
    enabled: bool = True,
    max_ceiling: int = Classification.RESTRICTED,
) -> WebhookSubscription:
    """A new subscription with a new secret (the caller shows it once). Its ceiling is at
    most the creator's (`max_ceiling`), internal or the creator's if lower by default; its
    URL must be allowed (memories.webhook_targets)."""
    fields = _clean(
        {
            "url": url,
            "events": list(events),
            "ceiling": Classification.default_for(max_ceiling) if ceiling is None else ceiling,
        },
        max_ceiling=max_ceiling,
    )
    return WebhookSubscription.objects.create(
        namespace=namespace,
        description=description,
        enabled=enabled,
        secret=webhook_secret_new(),
        **fields,
    )


@transaction.atomic
def webhook_subscription_update(
    *,
    subscription: WebhookSubscription,
    changes: Mapping[str, Any],
    max_ceiling: int = Classification.RESTRICTED,
) -> WebhookSubscription:
    """Change a subscription. Enabling one clears its failures and its notice; what it
    missed while disabled is not sent (events are addressed to enabled subscriptions)."""
    unknown = set(changes) - set(SUBSCRIPTION_EDITABLE_FIELDS)
    if unknown:
        raise ValidationError({name: "Unknown or read-only field." for name in sorted(unknown)})
    fields = _clean(dict(changes), max_ceiling=max_ceiling)
    locked = WebhookSubscription.objects.select_for_update().get(pk=subscription.pk)
    for name, value in fields.items():
        setattr(locked, name, value)
    update = [*fields, "updated_at"]
    if fields.get("enabled") is True:
        locked.consecutive_failures, locked.disabled_reason, locked.disabled_at = 0, "", None
        update += ["consecutive_failures", "disabled_reason", "disabled_at"]
    locked.updated_at = timezone.now()
    locked.save(update_fields=update)
    if fields.get("enabled") is True:
        enqueue("memories.tasks.webhook_deliver", locked.pk)
    return locked


@transaction.atomic
def webhook_subscription_delete(*, subscription: WebhookSubscription) -> None:
    """Delete a subscription with its delivery log."""
    subscription.delete()


@transaction.atomic
def webhook_delivery_redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again (by hand): pending now, with the same webhook-id, so a
    receiver that already has it can tell. Its earlier attempts stay counted in
    `attempts`; it gets WEBHOOK_MAX_ATTEMPTS more. It goes out in id order with the
    subscription's other pending deliveries, once the subscription is enabled."""
    locked = WebhookDelivery.objects.select_for_update().get(pk=delivery.pk)
    locked.status = WebhookDelivery.Status.PENDING
    locked.next_attempt_at = timezone.now()
    locked.round_start = locked.attempts
    locked.last_error = "Redelivery requested."
    locked.save(update_fields=["status", "next_attempt_at", "round_start", "last_error"])
    enqueue("memories.tasks.webhook_deliver", locked.subscription_id)
    return locked


# --- Events into deliveries --------------------------------------------------------------


def _namespace_info(namespace_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    rows = Namespace.objects.filter(pk__in=list(namespace_ids)).values_list(
        "pk", "slug", "owner__username"
    )
    return {pk: {"id": pk, "slug": slug, "owner": owner} for pk, slug, owner in rows}


def _webhook_id(subscription_id: int, key: str | None) -> str:
    if key is None:
        return f"msg_{uuid.uuid4().hex}"
    digest = hashlib.sha256(f"{subscription_id}:{key}".encode()).hexdigest()[:32]
    return f"msg_{digest}"


def _anyone_listening(namespace_ids: Sequence[int]) -> bool:
    """Whether an enabled subscription exists in these namespaces: every write asks, and
    nearly always none does, so the question is raw SQL (0.1 ms; the ORM's query took
    0.4, most of it compiling)."""
    table = connection.ops.quote_name(WebhookSubscription._meta.db_table)
    marks = ", ".join(["%s"] * len(namespace_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {table} WHERE namespace_id IN ({marks}) AND enabled LIMIT 1",
            list(namespace_ids),
        )
        return cursor.fetchone() is not None


def webhook_events_emit(events: Sequence[WebhookEvent], *, now: datetime | None = None) -> int:
    """Address events to the enabled subscriptions of their namespaces that asked for them
    and whose ceiling admits them: one delivery row each, set-based, in the caller's
    transaction, and the delivery task queued for after its commit. Returns the rows made.

    One query when no subscription listens (the common case), five or six otherwise (one
    more for keyed events: those already made), however many events.
    """
    if not events:
        return 0
    namespace_ids = sorted({event.namespace_id for event in events})
    if not _anyone_listening(namespace_ids):
        return 0
    subscriptions = list(
        WebhookSubscription.objects.filter(namespace_id__in=namespace_ids, enabled=True)
        .order_by("id")
        .values_list("id", "namespace_id", "events", "ceiling")
    )
    if not subscriptions:
        return 0
    now = now or timezone.now()
    listening: dict[int, list[tuple[int, set[str], int]]] = {}
    for pk, namespace_id, types, ceiling in subscriptions:
        listening.setdefault(namespace_id, []).append((pk, set(types or ()), ceiling))
    info = _namespace_info(listening)
    rows: list[WebhookDelivery] = []
    for event in events:
        for pk, types, ceiling in listening.get(event.namespace_id, ()):
            if event.type not in types or event.classification > ceiling:
                continue
            if event.for_ceiling is not None and event.for_ceiling != ceiling:
                continue
            rows.append(
                WebhookDelivery(
                    subscription_id=pk,
                    namespace_id=event.namespace_id,
                    event_type=event.type,
                    webhook_id=_webhook_id(pk, event.key),
                    memory_ref=event.memory_ref,
                    classification=event.classification,
                    payload={
                        "type": event.type,
                        "timestamp": event.occurred_at.isoformat(),
                        "data": {"namespace": info[event.namespace_id], **event.data},
                    },
                    next_attempt_at=now,
                    created_at=now,
                )
            )
    # A keyed event met again (review.due twice on one day, a memory still heading for the
    # forget threshold on the same clock) is skipped by its webhook-id: those already made
    # are left out here (one indexed look-up), and a concurrent run's by the conflict.
    keyed = any(event.key for event in events)
    if keyed and rows:
        made = set(
            WebhookDelivery.objects.filter(
                webhook_id__in=[row.webhook_id for row in rows]
            ).values_list("webhook_id", flat=True)
        )
        rows = [row for row in rows if row.webhook_id not in made]
    if not rows:
        return 0
    WebhookDelivery.objects.bulk_create(rows, batch_size=500, ignore_conflicts=keyed)
    for pk in sorted({row.subscription_id for row in rows}):
        enqueue("memories.tasks.webhook_deliver", pk)
    return len(rows)


def _memory_event(
    *,
    namespace_id: int,
    memory_ref: int,
    kind: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    source: str,
    classification: int,
    created_at: datetime,
) -> WebhookEvent:
    """The webhook event of one history event (its kind is one of EVENT_OF_KIND's).

    data.memory is the memory's id and level, and for memory.created every field of the
    new memory (the snapshot its history keeps); data.changes is the event's before and
    after (what changed, with the sweep's rule and score, or the successor's id).
    """
    memory: dict[str, Any] = {"id": memory_ref}
    data: dict[str, Any] = {"memory": memory, "source": source}
    if kind == MemoryEvent.Kind.CREATED:
        memory.update(after or {})
    else:
        data["changes"] = {"before": dict(before or {}), "after": dict(after or {})}
    memory["classification"] = Classification(classification).label
    return WebhookEvent(
        namespace_id=namespace_id,
        type=EVENT_OF_KIND[kind],
        classification=classification,
        data=data,
        occurred_at=created_at,
        memory_ref=memory_ref,
    )


def memory_events_announce(events: Iterable[MemoryEvent]) -> int:
    """Deliveries for history events just written (saved MemoryEvent objects)."""
    return webhook_events_emit(
        [
            _memory_event(
                namespace_id=event.namespace_id,
                memory_ref=event.memory_ref,
                kind=event.kind,
                before=event.before,
                after=event.after,
                source=event.source,
                classification=event.classification,
                created_at=event.created_at,
            )
            for event in events
            if event.kind in EVENT_OF_KIND
        ]
    )


def memory_event_rows_announce(rows: Iterable[tuple], columns: Sequence[str]) -> int:
    """Deliveries for history events just inserted as rows of `columns` (the bulk path)."""
    at = {name: index for index, name in enumerate(columns)}
    return webhook_events_emit(
        [
            _memory_event(
                namespace_id=row[at["namespace_id"]],
                memory_ref=row[at["memory_ref"]],
                kind=row[at["kind"]],
                before=row[at["before"]] if "before" in at else None,
                after=row[at["after"]],
                source=row[at["source"]],
                classification=row[at["classification"]],
                created_at=row[at["created_at"]],
            )
            for row in rows
            if row[at["kind"]] in EVENT_OF_KIND
        ]
    )


def memory_events_announce_where(condition: Q, *, namespace_id: int | None = None) -> int:
    """Deliveries for history events written by SQL (the sweep), found by `condition`.

    Nothing is read unless a subscription is enabled (in the namespace, if one is named)."""
    listening = WebhookSubscription.objects.filter(enabled=True)
    if namespace_id is not None:
        listening = listening.filter(namespace_id=namespace_id)
    if not listening.exists():
        return 0
    events = MemoryEvent.objects.filter(condition, kind__in=ANNOUNCED_KINDS).order_by("id")
    return memory_events_announce(events.iterator(chunk_size=2000))


# --- Other events ------------------------------------------------------------------------


def review_due_emit(
    *, due: Mapping[tuple[int, int], int], day: str, now: datetime | None = None
) -> int:
    """review.due, once a day per namespace with due cards. `due` counts the due cards by
    (namespace id, level of their memory); each subscription is told the count of those
    within its ceiling. The webhook-id is derived from the day, so a second run of the
    same day sends nothing new."""
    now = now or timezone.now()
    events: list[WebhookEvent] = []
    by_namespace: dict[int, dict[int, int]] = {}
    for (namespace_id, level), count in due.items():
        by_namespace.setdefault(namespace_id, {})[level] = count
    for namespace_id, levels in by_namespace.items():
        # One event per ceiling: a subscription takes the one of its own level, so each
        # counts exactly the cards it may know of.
        for ceiling in Classification:
            counted = {level: n for level, n in levels.items() if level <= ceiling and n}
            if not counted:
                continue
            events.append(
                WebhookEvent(
                    namespace_id=namespace_id,
                    type="review.due",
                    classification=max(counted),
                    data={"date": day, "due": sum(counted.values())},
                    occurred_at=now,
                    key=f"review.due:{day}",
                    for_ceiling=ceiling,
                )
            )
    return webhook_events_emit(events, now=now)


def about_to_forget_event(
    *,
    namespace_id: int,
    memory_id: int,
    classification: int,
    topic: str,
    score: float,
    forget_at: datetime,
    last_used_at: datetime,
    now: datetime,
) -> WebhookEvent:
    """memory.about_to_forget: a memory the sweep will forget at `forget_at` unless it is
    used, with its current score (memories.forget_notices emits it once a day).

    Its key is the crossing's: the memory and the last use its decay runs from. Every later
    run that finds it heading for the threshold on the same clock sends nothing new; a use
    restarts the clock, so a later approach to the threshold is a new event."""
    crossing = last_used_at.astimezone(UTC).isoformat()
    return WebhookEvent(
        namespace_id=namespace_id,
        type="memory.about_to_forget",
        classification=classification,
        data={
            "memory": {
                "id": memory_id,
                "classification": Classification(classification).label,
                "topic": topic,
            },
            "score": score,
            "forget_at": forget_at.isoformat(),
            "last_used_at": crossing,
        },
        occurred_at=now,
        memory_ref=memory_id,
        key=f"about_to_forget:{memory_id}:{crossing}",
    )
