"""The simulated recall worker (seed 000): agents' memories reviewed without a person.

For each agent_memory namespace it gives every live memory a card (set-based, idempotent),
takes today's queue exactly as the dashboard builds it (due cards by PriorityScore, then
the new cards the daily limit allows, at most SIMULATED_RECALL_BATCH), simulates the grade
from the memory's confidence, utility and recency (review.simulation), and grades through
card_grade with source "simulated", the service a person's grade goes through: SM-2 state,
utility, a ReviewLog and a history event, all in one transaction per card.

Idempotent and safe to run concurrently: a graded card is no longer due, and the random
draw is a function of the card and its version, so two workers that pick the same card
compute the same grade and the card's version lets only one of them apply it (the other
gets GradeConflict and moves on).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils import timezone

from memories.models import Memory, Namespace
from review.models import Card, ReviewLog
from review.selectors import review_queue
from review.services import GradeConflict, card_grade, cards_create_for_namespace
from review.simulation import DEFAULT_PARAMS, SimulationParams, simulate_quality

SECONDS_PER_DAY = 86_400.0
UTC = ZoneInfo("UTC")


@dataclass
class SimulatedRecallReport:
    """What a run of the worker did."""

    namespaces: int = 0
    cards_created: int = 0
    picked: int = 0
    reviewed: int = 0
    passed: int = 0
    conflicts: int = 0
    duration_seconds: float = 0.0
    grades: Counter[int] = field(default_factory=Counter)

    def counts(self) -> dict[str, Any]:
        return {
            "namespaces": self.namespaces,
            "cards_created": self.cards_created,
            "picked": self.picked,
            "reviewed": self.reviewed,
            "passed": self.passed,
            "conflicts": self.conflicts,
            "grades": {str(grade): n for grade, n in sorted(self.grades.items())},
            "duration_seconds": round(self.duration_seconds, 3),
        }


def simulated_draw(card_id: int, version: int) -> float:
    """A uniform draw in [0, 1) fixed by the card and its version.

    Deterministic so that a retried or concurrent run grades a card exactly as the first
    would; a new version (after any grade) gives a new draw.
    """
    return random.Random(f"engram-simulated-recall:{card_id}:{version}").random()


def _agent_namespaces(namespace: Namespace | int | None) -> list[Namespace]:
    namespaces = Namespace.objects.filter(mode=Namespace.Mode.AGENT_MEMORY).order_by("id")
    if namespace is not None:
        pk = namespace.pk if isinstance(namespace, Namespace) else namespace
        namespaces = namespaces.filter(pk=pk)
    return list(namespaces)


def simulated_recall_run(
    *,
    namespace: Namespace | int | None = None,
    now: datetime | None = None,
    batch: int | None = None,
    params: SimulationParams = DEFAULT_PARAMS,
) -> SimulatedRecallReport:
    """Review up to `batch` cards in each agent namespace (or only the one given).

    A namespace that is not in agent_memory mode is left alone: people review theirs.
    """
    started = time.perf_counter()
    now = now or timezone.now()
    batch = settings.SIMULATED_RECALL_BATCH if batch is None else batch
    report = SimulatedRecallReport()
    for ns in _agent_namespaces(namespace):
        report.namespaces += 1
        report.cards_created += cards_create_for_namespace(namespace=ns, now=now)
        _review_namespace(ns, now=now, batch=batch, params=params, report=report)
    report.duration_seconds = time.perf_counter() - started
    return report


def _review_namespace(
    namespace: Namespace,
    *,
    now: datetime,
    batch: int,
    params: SimulationParams,
    report: SimulatedRecallReport,
) -> None:
    queue = review_queue(namespace=namespace, tz=UTC, now=now, limit=batch)
    # The queue's "today" runs to midnight; the worker only takes what is due by now
    # (seed 000: NextReviewDate <= now), plus the new cards the daily limit lets in.
    items = [item for item in queue.items if item.is_new or item.next_review <= now]
    if not items:
        return
    signals = {
        row["id"]: row
        for row in Memory.objects.filter(id__in=[item.memory_id for item in items]).values(
            "id", "confidence", "utility", "last_recalled_at", "last_used_at"
        )
    }
    for item in items:
        memory = signals.get(item.memory_id)
        if memory is None:  # purged since the queue was read
            continue
        report.picked += 1
        last = memory["last_recalled_at"] or memory["last_used_at"]
        days = max(0.0, (now - last).total_seconds() / SECONDS_PER_DAY) if last else 0.0
        quality = simulate_quality(
            confidence=memory["confidence"],
            utility=memory["utility"],
            days_since_last_recall=days,
            rng_value=simulated_draw(item.card_id, item.version),
            params=params,
        )
        card = Card(
            pk=item.card_id,
            namespace_id=namespace.pk,
            memory_id=item.memory_id,
            version=item.version,
        )
        try:
            card_grade(
                card=card,
                grade=quality,
                source=ReviewLog.Source.SIMULATED,
                now=now,
                expected_version=item.version,
            )
        except GradeConflict:
            # Someone (a person, another worker) graded it since the queue was read.
            report.conflicts += 1
            continue
        except Card.DoesNotExist:
            continue
        report.reviewed += 1
        report.grades[quality] += 1
        if quality >= 3:
            report.passed += 1
