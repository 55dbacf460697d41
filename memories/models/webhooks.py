"""Webhooks: a namespace's subscriptions, and the log of every delivery made to them.

The rules (what is sent, signing, retries, address checks) live in
memories/services/webhooks.py; docs/webhooks.md describes them.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from config.bounds import datetime_checks, validate_datetime
from memories.models.classification import Classification, DerivedQuerySet, derived_level
from memories.models.namespaces import Namespace

# Every event a subscription may ask for, in the order the docs list them.
WEBHOOK_EVENTS = (
    "memory.created",
    "memory.updated",
    "memory.forgotten",
    "memory.restored",
    "memory.superseded",
    "memory.promoted",
    "memory.purged",
    "memory.about_to_forget",
    "review.due",
)


class WebhookSubscriptionQuerySet(models.QuerySet["WebhookSubscription"]):
    def visible_to(self, *, namespace_ids, ceiling: int) -> WebhookSubscriptionQuerySet:
        """Subscriptions a caller may see and manage: of its namespaces, and no higher than
        its ceiling (a subscription's log and payloads carry data up to the subscription's)."""
        return self.filter(namespace_id__in=list(namespace_ids), ceiling__lte=ceiling)


class WebhookSubscription(models.Model):
    """A URL that receives a namespace's events, signed with its secret (Standard Webhooks).

    The secret is stored as it is, because every delivery is signed with it; it is shown
    once, when the subscription is created. Like a token, a subscription has a ceiling:
    nothing above it is ever sent.
    """

    # Indexed by webhook_ns_enabled, which leads with it.
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="webhooks", db_index=False
    )
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True)
    events = models.JSONField(default=list, help_text="Event types sent, e.g. memory.created.")
    secret = models.CharField(max_length=100, editable=False)
    ceiling = models.PositiveSmallIntegerField(
        choices=Classification.choices, default=Classification.INTERNAL
    )
    enabled = models.BooleanField(default=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    disabled_reason = models.CharField(max_length=300, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    # The worker delivering to this subscription holds it until lease_until (one worker at
    # a time keeps the order); a killed worker's hold simply runs out.
    lease_token = models.CharField(max_length=32, blank=True, editable=False)
    lease_until = models.DateTimeField(
        null=True, blank=True, editable=False, validators=[validate_datetime]
    )
    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    updated_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    objects = WebhookSubscriptionQuerySet.as_manager()

    class Meta:
        ordering = ["namespace_id", "id"]
        indexes = [models.Index(fields=["namespace", "enabled"], name="webhook_ns_enabled")]
        constraints = datetime_checks(
            "webhooksubscription", "disabled_at", "lease_until", "created_at", "updated_at"
        )

    def __str__(self) -> str:
        return f"{self.url} ({self.namespace.slug})"


class WebhookDelivery(models.Model):
    """One message to one subscription: its signed id, payload and what became of it."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    # Indexed by delivery_sub_status, which leads with it.
    subscription = models.ForeignKey(
        WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries", db_index=False
    )
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="webhook_deliveries"
    )
    event_type = models.CharField(max_length=40)
    # The webhook-id header: the receiver's idempotency key, the same on every attempt.
    webhook_id = models.CharField(max_length=80, unique=True)
    memory_ref = models.BigIntegerField(null=True, blank=True)
    # The level of what the payload came from (at most the subscription's ceiling).
    classification = derived_level()
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    # `attempts` when the current round began: a redelivery by hand starts a new round of
    # WEBHOOK_MAX_ATTEMPTS, and the log keeps counting every attempt.
    round_start = models.PositiveSmallIntegerField(default=0)
    last_response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_duration_ms = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    next_attempt_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    last_attempt_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    delivered_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    objects = DerivedQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "webhook deliveries"
        indexes = [
            models.Index(fields=["subscription", "status", "id"], name="delivery_sub_status"),
            models.Index(fields=["status", "next_attempt_at"], name="delivery_status_next"),
            models.Index(fields=["created_at"], name="delivery_created"),
        ]
        constraints = datetime_checks(
            "webhookdelivery", "next_attempt_at", "last_attempt_at", "delivered_at", "created_at"
        )

    def __str__(self) -> str:
        return f"{self.event_type} {self.webhook_id} ({self.status})"
