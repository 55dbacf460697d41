"""Sending webhooks: one worker at a time per subscription, in id order, signed per the
Standard Webhooks specification, retried with exponential backoff.

- Order: a subscription's pending deliveries go out in id order (the order their events
  were written). A delivery that fails waits for its retry and holds back the later ones
  of its subscription until it succeeds or gives up (WEBHOOK_MAX_ATTEMPTS), so a receiver
  sees one memory's events in the order they happened.
- One worker per subscription: a run takes a lease on the subscription row (renewed as it
  goes, WEBHOOK_LEASE_SECONDS); a second run finds it held and leaves. A killed worker's
  lease runs out and the retry run (memories.tasks.webhooks_retry) sends what it left.
- At least once: a delivery is marked delivered only after a 2xx answer, so a worker killed
  between the receiver's answer and that write sends it again, with the same webhook-id.
- A subscription is disabled with a notice after WEBHOOK_DISABLE_AFTER_FAILURES
  deliveries in a row gave up; enabling it again resumes its pending deliveries.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from config.metrics import observe_webhook_attempts
from config.queue import enqueue
from memories.models import WebhookDelivery, WebhookSubscription
from memories.webhook_targets import target_refusal

BATCH = 200
USER_AGENT = "Engram-Webhooks/1"


def retry_delay(attempt: int, *, base: float, factor: float) -> float:
    """Seconds to wait after failed attempt number `attempt` (1-based): base x factor^(n-1)."""
    if attempt < 1:
        raise ValueError("attempt starts at 1")
    return base * factor ** (attempt - 1)


def webhook_body(payload: dict) -> str:
    """The exact text sent and signed (compact JSON, UTF-8)."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def webhook_headers(*, secret: str, webhook_id: str, body: str, at: datetime) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt: id, timestamp and v1 signature."""
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": Webhook(secret).sign(msg_id=webhook_id, timestamp=at, data=body),
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


@dataclass
class Attempt:
    ok: bool
    code: int | None
    duration_ms: int
    error: str


def _post(
    client: httpx.Client, *, url: str, secret: str, webhook_id: str, body: str, at: datetime
) -> Attempt:
    """One attempt: sign, send, and what came of it.

    Whatever stops it is a failed attempt with its reason: the network, and as much the
    stored subscription (a URL httpx refuses, InvalidURL, which is no HTTPError; a scheme
    it has no transport for; a secret that is not base64). An exception out of here would
    record no attempt at all: the delivery would stay pending, never give up, never
    disable its subscription, and hold back the later ones for ever."""
    started = time.perf_counter()
    try:
        headers = webhook_headers(secret=secret, webhook_id=webhook_id, body=body, at=at)
        # Streamed so the answer's body is never read: a receiver cannot make us download.
        with client.stream("POST", url, content=body.encode(), headers=headers) as response:
            code = response.status_code
    except Exception as error:  # any failure, not only httpx.HTTPError (docstring)
        elapsed = int((time.perf_counter() - started) * 1000)
        return Attempt(False, None, elapsed, f"{type(error).__name__}: {error}"[:300])
    elapsed = int((time.perf_counter() - started) * 1000)
    ok = 200 <= code < 300
    return Attempt(ok, code, elapsed, "" if ok else f"HTTP {code}")


def http_client() -> httpx.Client:
    """Short timeouts, no redirects followed, no proxy from the environment."""
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    return httpx.Client(
        timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
        follow_redirects=False,
        trust_env=False,
    )


class _Lease:
    def __init__(self, subscription_id: int) -> None:
        self.subscription_id = subscription_id
        self.token = uuid.uuid4().hex
        self.seconds = settings.WEBHOOK_LEASE_SECONDS
        self.until = timezone.now()

    def take(self) -> bool:
        """Hold the subscription (enabled, and free or ours), or say it is held."""
        now = timezone.now()
        free = Q(lease_until__isnull=True) | Q(lease_until__lt=now) | Q(lease_token=self.token)
        taken = WebhookSubscription.objects.filter(
            free, pk=self.subscription_id, enabled=True
        ).update(lease_token=self.token, lease_until=now + timedelta(seconds=self.seconds))
        self.until = now + timedelta(seconds=self.seconds)
        return taken == 1

    def keep(self) -> bool:
        """Renew past half the lease; False if another run took it over meanwhile."""
        if self.until - timezone.now() > timedelta(seconds=self.seconds / 2):
            return True
        return self.take()

    def release(self) -> None:
        WebhookSubscription.objects.filter(pk=self.subscription_id, lease_token=self.token).update(
            lease_token="", lease_until=None
        )


def _due(subscription_id: int, now: datetime) -> bool:
    """Whether the subscription's first pending delivery may be attempted now."""
    first = (
        WebhookDelivery.objects.filter(
            subscription_id=subscription_id,
            status=WebhookDelivery.Status.PENDING,
            subscription__enabled=True,
        )
        .order_by("id")
        .values_list("next_attempt_at", flat=True)
        .first()
    )
    return first is not None and first <= now


def webhook_deliver_run(
    *, subscription_id: int, client: httpx.Client | None = None, budget: float | None = None
) -> dict[str, int]:
    """Send a subscription's due deliveries in id order; the task behind every delivery.

    Returns counts: delivered, failed_attempts, gave_up, disabled, busy (another run held
    the subscription). Stops after `budget` seconds (half of Q_TIMEOUT) and queues
    itself again, so one long backlog never reaches the worker's timeout.
    """
    counts: Counter[str] = Counter()
    budget = settings.Q_TIMEOUT / 2 if budget is None else budget
    deadline = time.monotonic() + budget
    own = client is None
    client = client or http_client()
    try:
        while True:
            lease = _Lease(subscription_id)
            if not lease.take():
                counts["busy"] += 1
                break
            try:
                _send_claimed(subscription_id, lease, client, counts, deadline)
            finally:
                lease.release()
            if time.monotonic() >= deadline:
                enqueue("memories.tasks.webhook_deliver", subscription_id)
                break
            # A delivery queued while this run held the subscription found it busy and
            # left: look once more after letting go.
            if not _due(subscription_id, timezone.now()):
                break
    finally:
        if own:
            client.close()
        observe_webhook_attempts(
            delivered=counts["delivered"],
            retry=counts["failed_attempts"] - counts["gave_up"],
            failed=counts["gave_up"],
        )
    return dict(counts)


def _send_claimed(
    subscription_id: int,
    lease: _Lease,
    client: httpx.Client,
    counts: Counter[str],
    deadline: float,
) -> None:
    subscription = WebhookSubscription.objects.filter(pk=subscription_id).first()
    if subscription is None:
        return
    # Checked again at delivery time: the host's addresses may have changed since.
    refusal = target_refusal(subscription.url)
    failures = subscription.consecutive_failures
    while True:
        batch = list(
            WebhookDelivery.objects.filter(
                subscription_id=subscription_id, status=WebhookDelivery.Status.PENDING
            ).order_by("id")[:BATCH]
        )
        if not batch:
            return
        for delivery in batch:
            now = timezone.now()
            if delivery.next_attempt_at > now:
                return  # waiting for its retry: later ones wait behind it
            if time.monotonic() >= deadline or not lease.keep():
                return
            body = webhook_body(delivery.payload)
            if refusal:
                attempt = Attempt(False, None, 0, refusal[:300])
            else:
                attempt = _post(
                    client,
                    url=subscription.url,
                    secret=subscription.secret,
                    webhook_id=delivery.webhook_id,
                    body=body,
                    at=now,
                )
            tried = delivery.attempts + 1
            fields = {
                "attempts": F("attempts") + 1,
                "last_response_code": attempt.code,
                "last_duration_ms": attempt.duration_ms,
                "last_error": attempt.error,
                "last_attempt_at": now,
            }
            pending = WebhookDelivery.objects.filter(
                pk=delivery.pk, status=WebhookDelivery.Status.PENDING
            )
            if attempt.ok:
                pending.update(
                    status=WebhookDelivery.Status.DELIVERED, delivered_at=timezone.now(), **fields
                )
                counts["delivered"] += 1
                if failures:
                    failures = 0
                    WebhookSubscription.objects.filter(pk=subscription_id).update(
                        consecutive_failures=0
                    )
                continue
            counts["failed_attempts"] += 1
            # Attempts of this round: a redelivery by hand starts a new round.
            round_attempts = tried - delivery.round_start
            if round_attempts < settings.WEBHOOK_MAX_ATTEMPTS:
                wait = retry_delay(
                    round_attempts,
                    base=settings.WEBHOOK_BACKOFF_SECONDS,
                    factor=settings.WEBHOOK_BACKOFF_FACTOR,
                )
                pending.update(next_attempt_at=now + timedelta(seconds=wait), **fields)
                return  # later deliveries wait behind this one
            pending.update(status=WebhookDelivery.Status.FAILED, **fields)
            counts["gave_up"] += 1
            failures += 1
            WebhookSubscription.objects.filter(pk=subscription_id).update(
                consecutive_failures=failures
            )
            if failures >= settings.WEBHOOK_DISABLE_AFTER_FAILURES:
                _disable(subscription_id, failures, attempt)
                counts["disabled"] += 1
                return


def _disable(subscription_id: int, failures: int, attempt: Attempt) -> None:
    last = f"HTTP {attempt.code}" if attempt.code else (attempt.error or "no answer")
    WebhookSubscription.objects.filter(pk=subscription_id).update(
        enabled=False,
        disabled_at=timezone.now(),
        disabled_reason=(
            f"Disabled after {failures} failed deliveries in a row (last: {last[:120]}). "
            "Fix the receiver, then enable the subscription again."
        ),
        lease_token="",
        lease_until=None,
    )


def webhooks_retry_due(*, now: datetime | None = None) -> dict[str, int]:
    """Queue a delivery run for every enabled subscription with a delivery due (a retry
    whose time came, or one whose task was lost with its worker), and delete log rows
    older than WEBHOOK_DELIVERIES_KEEP_DAYS. Runs every WEBHOOK_RETRY_INTERVAL_MINUTES."""
    now = now or timezone.now()
    subscription_ids = list(
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING,
            next_attempt_at__lte=now,
            subscription__enabled=True,
        )
        .order_by()
        .values_list("subscription_id", flat=True)
        .distinct()
    )
    for pk in sorted(subscription_ids):
        enqueue("memories.tasks.webhook_deliver", pk)
    pruned, _ = (
        WebhookDelivery.objects.filter(
            created_at__lt=now - timedelta(days=settings.WEBHOOK_DELIVERIES_KEEP_DAYS)
        )
        .exclude(status=WebhookDelivery.Status.PENDING)
        .delete()
    )
    return {"subscriptions": len(subscription_ids), "pruned": pruned}
