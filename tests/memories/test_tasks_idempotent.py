"""Every task is idempotent: run twice, or by two workers at once, it reaches one end state.

Running twice is checked on both engines. Running at once needs real concurrent
transactions and row locks, so those tests run on PostgreSQL only (SQLite serialises
writers: two sweeps there simply take turns, batch by batch).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections

from memories import services as memory_services
from memories.consolidation import digests_run
from memories.models import Consolidation, Memory, MemoryEvent, Namespace
from memories.sweep import SweepConfig, sweep_run
from review.models import Card, ReviewLog
from review.services import cards_create_for_namespace
from review.simulation import simulate_quality
from review.worker import simulated_draw, simulated_recall_run
from tests.support.background import NOW, requires_postgresql

SMALL_BATCHES = SweepConfig.from_settings(batch_size=40, purge_batch_size=7)


def build_memories(namespace: Namespace, count: int = 480) -> None:
    """count memories in every state the sweep acts on, created in one INSERT."""
    kinds = [
        {"last_used_at": NOW - timedelta(days=30)},  # forget
        {"last_used_at": NOW, "use_count": 2},  # promote
        {"last_used_at": NOW - timedelta(days=5)},  # keep
        {"last_used_at": NOW - timedelta(days=40), "tier": "long_term", "status": "promoted"},
        {
            "last_used_at": NOW - timedelta(days=1),
            "session_ids": ["a", "b", "c"],
            "access_count": 6,
            "stability": 0.7,
        },  # core
        {"status": "forgotten", "forgotten_at": NOW - timedelta(days=60)},  # purge
    ]
    Memory.objects.bulk_create(
        Memory(
            namespace=namespace,
            content=f"memory {n}",
            topic=f"t{n % 3}",
            created_at=NOW - timedelta(days=1, minutes=n),
            **kinds[n % len(kinds)],
        )
        for n in range(count)
    )


def end_state(namespace: Namespace) -> list[tuple]:
    return list(
        Memory.objects.filter(namespace=namespace)
        .order_by("id")
        .values_list("id", "status", "tier", "storage", "forgotten_score")
    )


def run_together(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run the jobs in threads released at the same instant; results or raised errors."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)

    def worker(index: int, job: Callable[[], Any]) -> None:
        try:
            barrier.wait()
            results[index] = job()
        except Exception as error:  # returned to the test, which fails on it
            results[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results


# --- Twice in a row: both engines --------------------------------------------------------


@pytest.mark.django_db
def test_a_sweep_run_twice_ends_where_one_run_ends(namespace):
    build_memories(namespace, 60)
    first = sweep_run(now=NOW, config=SMALL_BATCHES)
    after_one = end_state(namespace)
    events = MemoryEvent.objects.count()

    second = sweep_run(now=NOW, config=SMALL_BATCHES)

    assert first.changed + first.purged == 50
    assert second.changed == second.purged == 0
    assert end_state(namespace) == after_one and MemoryEvent.objects.count() == events


@pytest.mark.django_db
def test_the_worker_and_the_digests_run_twice_end_where_one_run_ends(user):
    agent = memory_services.namespace_create(
        owner=user, name="Agent", mode=Namespace.Mode.AGENT_MEMORY, new_cards_per_day=100
    )
    build_memories(agent, 30)
    simulated_recall_run(now=NOW)
    digests_run(now=NOW, lookback=2)
    logs, digests = ReviewLog.objects.count(), list(Consolidation.objects.values())

    assert simulated_recall_run(now=NOW).reviewed == 0
    assert digests_run(now=NOW, lookback=2).written == 0
    assert ReviewLog.objects.count() == logs > 0
    assert list(Consolidation.objects.values()) == digests


# --- At the same time: PostgreSQL --------------------------------------------------------


@requires_postgresql
@pytest.mark.django_db(transaction=True)
def test_two_sweeps_at_once_apply_every_change_exactly_once(namespace):
    build_memories(namespace)
    predicted = sweep_run(now=NOW, dry_run=True)
    assert predicted.changed == 320 and predicted.purged == 80

    reports = run_together([lambda: sweep_run(now=NOW, config=SMALL_BATCHES)] * 2)

    total = Counter()
    for report in reports:
        total.update({k: v for k, v in report.counts().items() if isinstance(v, int)})
    for rule in ("core", "promoted", "forgotten", "cold", "archived", "purged"):
        assert total[rule] == predicted.counts()[rule], rule
    # One event per change, whichever sweep made it, and it matches the row.
    events = Counter(MemoryEvent.objects.filter(source="sweep").values_list("memory_ref", "kind"))
    assert set(events.values()) == {1}
    assert sum(events.values()) == predicted.changed + predicted.purged
    for memory_id, status, tier, storage, _ in end_state(namespace):
        event = MemoryEvent.objects.filter(memory_ref=memory_id, source="sweep").first()
        if event is not None:
            assert (status, tier, storage) == (
                event.after["status"],
                event.after["tier"],
                event.after["storage"],
            )
    # The same end state as one sweep alone: nothing is left to do.
    assert sweep_run(now=NOW).changed == 0


@requires_postgresql
@pytest.mark.django_db(transaction=True)
def test_a_sweep_racing_a_recall_skips_the_row_the_recall_changed(namespace, remember):
    """The UPDATE re-checks its inputs: a memory used meanwhile is not forgotten on stale data."""
    fading = remember(days_ago=30)
    started, release = threading.Event(), threading.Event()

    def use_it_meanwhile():
        from django.db import transaction

        with transaction.atomic():
            # Used 5 days ago after all: nothing for the sweep to do, whichever wins.
            Memory.objects.select_for_update().filter(pk=fading.pk).update(
                last_used_at=NOW - timedelta(days=5)
            )
            started.set()
            release.wait(10)

    def sweep():
        started.wait(10)
        threading.Timer(0.5, release.set).start()  # commit the use while the sweep waits
        return sweep_run(now=NOW)

    _, report = run_together([use_it_meanwhile, sweep])

    fading.refresh_from_db()
    assert fading.status == "active" and report.forgotten == 0
    assert not MemoryEvent.objects.filter(memory_ref=fading.pk, source="sweep").exists()


@requires_postgresql
@pytest.mark.django_db(transaction=True)
def test_two_workers_at_once_grade_every_card_exactly_once(user):
    agent = memory_services.namespace_create(
        owner=user, name="Agent", mode=Namespace.Mode.AGENT_MEMORY, new_cards_per_day=0
    )
    build_memories(agent, 40)
    cards_create_for_namespace(namespace=agent, now=NOW)
    cards = list(Card.objects.filter(namespace=agent).select_related("memory"))
    for n, card in enumerate(cards):
        Card.objects.filter(pk=card.pk).update(next_review=NOW - timedelta(days=1 + n % 9))

    reports = run_together([lambda: simulated_recall_run(now=NOW, batch=100)] * 2)

    logs = list(ReviewLog.objects.filter(namespace=agent).values_list("card_id", "grade"))
    assert len(logs) == len({card_id for card_id, _ in logs}) == len(cards)
    assert sum(r.reviewed for r in reports) == len(cards)
    assert sum(r.reviewed + r.conflicts for r in reports) == sum(r.picked for r in reports)
    grades = dict(logs)
    for card in cards:
        memory = card.memory
        last = memory.last_recalled_at or memory.last_used_at
        expected = simulate_quality(
            confidence=memory.confidence,
            utility=memory.utility,
            days_since_last_recall=max(0.0, (NOW - last).total_seconds() / 86_400),
            rng_value=simulated_draw(card.pk, 0),
        )
        assert grades[card.pk] == expected


@requires_postgresql
@pytest.mark.django_db(transaction=True)
def test_two_digest_runs_at_once_write_each_digest_once(namespace):
    build_memories(namespace, 120)

    reports = run_together([lambda: digests_run(now=NOW, lookback=2)] * 2)

    keys = list(Consolidation.objects.values_list("period", "period_start", "topic"))
    assert len(keys) == len(set(keys)) == 6  # 3 topics x (the day, its week)
    assert sum(r.created for r in reports) == 6
    assert digests_run(now=NOW, lookback=2).written == 0
