"""The decay sweep's rules (seed 003, seed 001's cold storage), on SQLite and PostgreSQL."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories import services as memory_services
from memories.decay import decay_score
from memories.models import Memory, MemoryEvent, Namespace
from memories.services.near_duplicates import near_index_missing
from memories.sweep import (
    SweepConfig,
    cold_rule_from_settings,
    memories_purge_forgotten,
    sweep_run,
    thresholds_from_settings,
)
from review.models import Card
from review.services import card_ensure
from tests.support.background import NOW, state, sweep_events

pytestmark = pytest.mark.django_db

ACTIVE_SHORT = ("active", "short_term", "hot")
LAMBDA = math.log(2) / (3 * 86_400)  # seed 003's 3-day half-life, per second


def exponential(use_count: int, days: float, strength: float = 1.0) -> float:
    """Seed 003's score, written out independently of memories.decay."""
    return (use_count + 1) ** 0.6 * math.exp(-LAMBDA * days * 86_400) * strength


# --- Promote and forget (seed 003) -------------------------------------------------------


def test_it_promotes_the_worked_example_whose_score_is_2_735(remember):
    memory = remember(days_ago=1, use_count=3, strength=1.5)

    report = sweep_run(now=NOW)

    assert report.promoted == 1
    assert state(memory) == ("promoted", "long_term", "hot")
    memory.refresh_from_db()
    assert memory.promoted_at == NOW and memory.status_changed_at == NOW
    event = sweep_events(memory).get()
    assert event.kind == MemoryEvent.Kind.PROMOTED
    assert event.before == {"status": "active", "tier": "short_term", "storage": "hot"}
    assert event.after["rule"] == "promote" and event.after["tier"] == "long_term"
    assert event.after["score"] == pytest.approx(2.735, abs=5e-4)
    assert event.after["score"] == pytest.approx(exponential(3, 1, 1.5), rel=1e-9)


def test_it_forgets_a_short_term_memory_below_the_threshold_with_reason_and_score(remember):
    memory = remember(days_ago=14)  # 2^(-14/3) = 0.0394 < 0.05

    report = sweep_run(now=NOW)

    assert report.forgotten == 1
    memory.refresh_from_db()
    assert memory.status == "forgotten" and memory.tier == "short_term"
    assert memory.forgotten_at == NOW
    assert memory.forgotten_score == pytest.approx(2 ** (-14 / 3), rel=1e-9)
    assert "0.05" in memory.forgotten_reason and "decay" in memory.forgotten_reason
    event = sweep_events(memory).get()
    assert event.kind == MemoryEvent.Kind.FORGOTTEN
    assert event.after["reason"] == memory.forgotten_reason
    assert event.after["score"] == pytest.approx(memory.forgotten_score, rel=1e-12)


def test_a_forgotten_memory_can_be_restored_and_the_next_sweep_keeps_it(remember):
    memory = remember(days_ago=14)
    sweep_run(now=NOW)

    memory_services.memory_restore(memory=memory, now=NOW)
    report = sweep_run(now=NOW + timedelta(hours=1))

    assert state(memory) == ACTIVE_SHORT
    assert report.forgotten == 0


def test_a_fresh_memory_is_not_promoted_until_it_has_been_used(remember):
    fresh = remember(days_ago=0)  # score 1.0
    used = remember(days_ago=0, use_count=1)

    sweep_run(now=NOW)
    assert state(fresh) == ACTIVE_SHORT
    assert state(used)[0] == "promoted"

    literal = replace(thresholds_from_settings(), promote_score_min_uses=0)
    sweep_run(now=NOW, config=SweepConfig.from_settings(thresholds=literal))
    assert state(fresh)[0] == "promoted"  # seed 003 to the letter


def test_it_leaves_memories_between_the_thresholds_alone(remember):
    kept = [
        remember(days_ago=12),  # 0.0625: above forget
        remember(days_ago=2),  # 0.63: below promote
        remember(days_ago=0, strength=0.6),  # 0.6
    ]

    report = sweep_run(now=NOW)

    assert report.changed == 0
    assert all(state(memory) == ACTIVE_SHORT for memory in kept)
    assert not sweep_events().exists()


def test_the_thresholds_are_inclusive_for_promote_and_strict_for_forget(remember):
    # Strengths chosen so that the score sits exactly on each threshold.
    at_promote = remember(days_ago=3, strength=1.3)  # 0.5 * 1.3 = 0.65
    at_forget = remember(days_ago=3, strength=0.1)  # 0.5 * 0.1 = 0.05

    # exp(-ln 2) may round a hair below 0.5, hence the 1e-12 of slack.
    thresholds = replace(
        thresholds_from_settings(),
        promote=0.65 - 1e-12,
        forget=0.05 - 1e-12,
        promote_score_min_uses=0,
    )
    config = SweepConfig.from_settings(thresholds=thresholds)
    sweep_run(now=NOW, config=config)

    assert state(at_promote)[0] == "promoted"
    assert state(at_forget) == ACTIVE_SHORT


def test_it_promotes_on_five_uses_inside_the_window_even_with_a_low_score(remember):
    memory = remember(days_ago=30, strength=0.2)
    for day in (6, 5, 4, 3, 1):
        memory_services.memory_touch(memory=memory, now=NOW - timedelta(days=day))
    memory.refresh_from_db()
    score = exponential(5, 1, 0.2)
    assert memory.use_count == 5 and score < 0.65

    sweep_run(now=NOW)

    assert state(memory)[:2] == ("promoted", "long_term")
    assert sweep_events(memory).get().after["score"] == pytest.approx(score, rel=1e-9)


def test_four_uses_inside_the_window_are_not_enough(remember):
    memory = remember(days_ago=30, strength=0.2)
    for day in (20, 5, 4, 3, 1):  # the first use falls outside the 14-day window
        memory_services.memory_touch(memory=memory, now=NOW - timedelta(days=day))

    sweep_run(now=NOW)

    assert state(memory) == ACTIVE_SHORT


def test_recalls_inside_the_window_count_as_uses(remember):
    stamps = [(NOW - timedelta(days=d)).isoformat() for d in (30, 9, 7, 5, 3, 1)]
    memory = remember(days_ago=1, strength=0.2, use_count=6, recall_timestamps=stamps)

    sweep_run(now=NOW)

    assert state(memory)[0] == "promoted"


# --- Long-term memories: never deleted, cold at the floor, archived --------------------


def test_a_long_term_memory_is_never_forgotten_and_goes_cold_at_its_floor(remember):
    memory = remember(days_ago=30, tier="long_term", status="promoted")

    report = sweep_run(now=NOW)

    assert report.forgotten == 0 and report.cold == 1
    assert state(memory) == ("promoted", "long_term", "cold")
    event = sweep_events(memory).get()
    assert event.kind == MemoryEvent.Kind.COLD
    assert event.after["storage"] == "cold"
    assert event.after["score"] == pytest.approx(2**-10, rel=1e-9)


def test_a_memory_recalled_lately_is_not_frozen_however_low_its_score(remember):
    memory = remember(
        days_ago=30, tier="long_term", status="promoted", last_accessed_at=NOW - timedelta(days=2)
    )

    sweep_run(now=NOW)
    assert state(memory)[2] == "hot"

    sweep_run(now=NOW + timedelta(days=6))
    assert state(memory)[2] == "cold"  # 8 days without a recall: past COLD_GRACE_DAYS


def test_cold_storage_round_trip_through_recall(remember, namespace):
    """Swept cold, unreachable by search, brought back through a link, kept hot a while."""
    from memories.models import Association
    from recall.services import recall_run

    cold = remember(
        "Rented the cabin at Lake Tahoe", days_ago=40, tier="long_term", status="promoted"
    )
    hot = remember("Ski trip planning for February", days_ago=0, use_count=2)
    Association.objects.create(namespace=namespace, source=hot, target=cold, weight=1.0)

    sweep_run(now=NOW)
    assert state(cold)[2] == "cold"

    def recall(query: str) -> list[int]:
        result = recall_run(
            namespaces=[namespace], ceiling=3, query=query, now=NOW, session_id="s1"
        )
        return [hit.memory_id for hit in result.results]

    assert cold.pk not in recall("cabin tahoe")
    assert recall("ski trip") == [hot.pk, cold.pk]
    assert state(cold)[2] == "hot"  # reactivated by the association
    assert MemoryEvent.objects.filter(memory_ref=cold.pk, kind="reactivated").exists()

    sweep_run(now=NOW + timedelta(hours=1))
    assert state(cold)[2] == "hot"
    sweep_run(now=NOW + timedelta(days=8))
    assert state(cold)[2] == "cold"


def test_a_long_term_memory_above_the_floor_stays_hot(remember):
    memory = remember(days_ago=12, tier="long_term", status="promoted")  # 0.0625

    sweep_run(now=NOW)

    assert state(memory) == ("promoted", "long_term", "hot")


def test_a_core_memory_never_fades(remember):
    memory = remember(days_ago=400, tier="core", status="promoted")

    sweep_run(now=NOW)

    assert state(memory) == ("promoted", "core", "hot")


def test_a_cold_memory_unused_past_the_archive_age_is_archived(remember):
    old = remember(days_ago=200, tier="long_term", status="promoted", storage="cold")
    recent = remember(days_ago=100, tier="long_term", status="promoted", storage="cold")

    report = sweep_run(now=NOW)

    assert report.archived == 1
    assert state(old) == ("archived", "long_term", "cold")
    assert sweep_events(old).get().kind == MemoryEvent.Kind.ARCHIVED
    assert state(recent) == ("promoted", "long_term", "cold")


def test_archiving_can_be_switched_off(remember):
    old = remember(days_ago=500, tier="long_term", status="promoted", storage="cold")

    never = replace(cold_rule_from_settings(), archive_after_days=0)
    sweep_run(now=NOW, config=SweepConfig.from_settings(cold=never))

    assert state(old)[0] == "promoted"


# --- Decay models per namespace ----------------------------------------------------------


def test_each_namespace_decays_with_its_own_model(user, remember):
    power = memory_services.namespace_create(owner=user, name="Slow", decay_model="power_law")
    short = memory_services.namespace_create(owner=user, name="Fast", decay_half_life_days=1.0)
    default = remember(days_ago=14)
    slow = remember(days_ago=14, namespace=power)
    fast = remember(days_ago=5, namespace=short)  # 2^-5 = 0.031 with a 1-day half-life

    sweep_run(now=NOW)

    assert state(default)[0] == "forgotten"
    assert state(slow) == ACTIVE_SHORT  # power law: (1 + 14 / 3.418)^-1.1 = 0.167
    assert state(fast)[0] == "forgotten"
    assert sweep_events(fast).get().after["score"] == pytest.approx(2**-5, rel=1e-9)


@pytest.mark.parametrize("model", ["exponential", "power_law", "two_component"])
def test_sql_scores_and_decisions_agree_with_the_python_formula(user, model):
    ns = memory_services.namespace_create(
        owner=user, name=f"Grid {model}", decay_model=model, decay_beta=0.5
    )
    params = ns.decay_params()
    # The formula is checked for the namespace's own model, not a default standing in.
    assert (params.model, params.beta) == (model, 0.5)
    memories = []
    for use_count in (0, 1, 4, 9):
        for days in (0.1, 0.9, 2.5, 6.0, 11.0, 19.0, 33.0, 75.0):
            for strength in (0.3, 1.0, 1.9):
                memory = memory_services.memory_create(
                    namespace=ns, content=f"grid {use_count} {days} {strength}"
                )
                Memory.objects.filter(pk=memory.pk).update(
                    use_count=use_count,
                    last_used_at=NOW - timedelta(days=days),
                    strength=strength,
                )
                memories.append((memory.pk, use_count, days, strength))

    sweep_run(now=NOW)

    events = {e.memory_ref: e for e in sweep_events()}
    statuses = dict(Memory.objects.filter(namespace=ns).values_list("pk", "status"))
    for pk, use_count, days, strength in memories:
        score = decay_score(
            use_count=use_count,
            last_used_at=NOW - timedelta(days=days),
            strength=strength,
            now=NOW,
            params=params,
        )
        # No uses were recorded inside the window, so only the score can promote, and only
        # a memory used at least once (PROMOTE_SCORE_MIN_USES).
        promote = score >= 0.65 and use_count >= 1
        expected = "promoted" if promote else "forgotten" if score < 0.05 else "active"
        assert statuses[pk] == expected, (use_count, days, strength, score)
        if expected != "active":
            assert events[pk].after["score"] == pytest.approx(score, rel=1e-9)


# --- Scope, dry run, batches -------------------------------------------------------------


def test_a_namespace_sweep_leaves_other_namespaces_alone(user, remember):
    other = memory_services.namespace_create(owner=user, name="Other")
    mine = remember(days_ago=30)
    theirs = remember(days_ago=30, namespace=other)

    report = sweep_run(now=NOW, namespace=mine.namespace)

    assert report.forgotten == 1
    assert state(mine)[0] == "forgotten"
    assert state(theirs) == ACTIVE_SHORT


def _mixed(remember) -> list[Memory]:
    return [
        remember(days_ago=30),  # forget
        remember(days_ago=0, use_count=3),  # promote
        remember(days_ago=5),  # keep
        remember(days_ago=40, tier="long_term", status="promoted"),  # cold
        remember(days_ago=300, tier="long_term", status="promoted", storage="cold"),  # archive
        remember(days_ago=1, session_ids=["a", "b", "c"], access_count=5, stability=0.5),  # core
        remember(days_ago=60, status="forgotten"),  # not live: untouched
    ]


def _snapshot() -> list[tuple]:
    return list(
        Memory.objects.order_by("id").values_list(
            "id", "status", "tier", "storage", "forgotten_reason", "updated_at"
        )
    )


def test_a_dry_run_writes_nothing_and_predicts_the_real_run(remember):
    memories = _mixed(remember)
    before = _snapshot()
    events_before = MemoryEvent.objects.count()

    dry = sweep_run(now=NOW, dry_run=True)

    assert _snapshot() == before
    assert MemoryEvent.objects.count() == events_before
    real = sweep_run(now=NOW)
    assert dry.counts() | {"dry_run": False, "duration_seconds": 0} == real.counts() | {
        "duration_seconds": 0
    }
    assert (dry.core, dry.promoted, dry.forgotten, dry.cold, dry.archived) == (1, 1, 1, 1, 1)
    assert dry.samples["forget"] == [memories[0].pk]
    assert dry.by_namespace == {
        memories[0].namespace_id: {"forget": 1, "promote": 1, "cold": 1, "archive": 1, "core": 1}
    }


def test_small_batches_reach_the_same_end_state_as_one_batch(remember):
    first, second = _mixed(remember), _mixed(remember)
    predicted = sweep_run(now=NOW, dry_run=True)

    report = sweep_run(now=NOW, config=SweepConfig.from_settings(batch_size=3))

    assert report.batches == 5  # ids 1-13 of the live memories, three at a time
    assert report.changed == predicted.changed == 10
    assert [state(m) for m in first] == [state(m) for m in second]
    assert [state(m)[0] for m in first] == [
        "forgotten",
        "promoted",
        "active",
        "promoted",
        "archived",
        "promoted",
        "forgotten",
    ]


def test_one_sweep_reaches_the_fixed_point_whatever_the_state(user):
    """No rule's result matches another rule at the same moment (so no chains across runs)."""
    ns = memory_services.namespace_create(
        owner=user,
        name="Grid",
        decay_model="power_law",
        dedupe="off",  # one text, many rows
    )
    touched = []
    for tier, status, storage in [
        ("short_term", "active", "hot"),
        ("long_term", "promoted", "hot"),
        ("long_term", "promoted", "cold"),
    ]:
        for days in (0.2, 5, 10, 16, 100, 200, 400):
            for strength in (0.01, 1.0, 2.0):
                for uses in (0, 1, 6):
                    for accessed in (None, 2, 30):
                        memory = memory_services.memory_create(namespace=ns, content="x")
                        Memory.objects.filter(pk=memory.pk).update(
                            tier=tier,
                            status=status,
                            storage=storage,
                            use_count=uses,
                            strength=strength,
                            last_used_at=NOW - timedelta(days=days),
                            last_accessed_at=None
                            if accessed is None
                            else NOW - timedelta(days=accessed),
                        )
                        if uses == 6:
                            touched.append(memory)
    MemoryEvent.objects.bulk_create(
        MemoryEvent(
            namespace=ns,
            memory=memory,
            memory_ref=memory.pk,
            kind=MemoryEvent.Kind.TOUCHED,
            created_at=NOW - timedelta(days=n % 3),
        )
        for memory in touched
        for n in range(5)
    )

    first = sweep_run(now=NOW, config=SweepConfig.from_settings(batch_size=100))
    second = sweep_run(now=NOW)

    assert first.changed > 100
    assert second.changed == 0, second.counts()


def test_a_second_sweep_changes_nothing(remember):
    _mixed(remember)
    sweep_run(now=NOW)
    before, events = _snapshot(), MemoryEvent.objects.count()

    again = sweep_run(now=NOW)

    assert again.changed == 0 and again.purged == 0
    assert _snapshot() == before
    assert MemoryEvent.objects.count() == events


# --- Only changed rows are written, events set-based -----------------------------------


def _row_versions() -> dict[int, str]:
    """A value per memory row that any UPDATE of the row changes."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT id, xmin::text FROM memories_memory")
            return dict(cursor.fetchall())
        cursor.execute("SELECT id, n FROM temp.bg_updates")
        return {pk: str(n) for pk, n in cursor.fetchall()}


@pytest.fixture
def count_updates():
    """On SQLite, a temporary trigger counts UPDATEs per memory row."""
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE bg_updates (id INTEGER PRIMARY KEY, n INTEGER)")
        cursor.execute(
            "CREATE TEMP TRIGGER bg_count_updates AFTER UPDATE ON main.memories_memory BEGIN "
            "INSERT INTO bg_updates (id, n) VALUES (new.id, 1) "
            "ON CONFLICT (id) DO UPDATE SET n = n + 1; END"
        )
    yield
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER IF EXISTS temp.bg_count_updates")
        cursor.execute("DROP TABLE IF EXISTS temp.bg_updates")


def test_only_rows_whose_state_changes_are_written(remember, count_updates):
    memories = _mixed(remember)
    for _ in range(20):
        remember(days_ago=5)  # stays as it is
    before = _row_versions()

    sweep_run(now=NOW)

    after = _row_versions()
    written = {pk for pk in set(before) | set(after) if before.get(pk) != after.get(pk)}
    assert written == {memory.pk for memory in memories[:2] + memories[3:6]}


def test_history_is_written_set_based_whatever_the_number_of_changes(remember, user):
    def queries_for(count: int) -> int:
        ns = memory_services.namespace_create(owner=user, name=f"Q{count}")
        for _ in range(count):
            remember(days_ago=30, namespace=ns)
        near_index_missing(ns.pk, now=NOW)  # the worker's near-duplicate step, done
        with CaptureQueriesContext(connection) as captured:
            report = sweep_run(now=NOW, namespace=ns)
        assert report.forgotten == count
        return len(captured)

    assert queries_for(3) == queries_for(30)
    assert sweep_events().count() == 33


# --- Purge -------------------------------------------------------------------------------


def test_forgotten_memories_are_purged_after_the_retention_period(remember):
    old = remember(status="forgotten", forgotten_at=NOW - timedelta(days=31), topic="old")
    card_ensure(memory=old)
    recent = remember(status="forgotten", forgotten_at=NOW - timedelta(days=29))
    long_term = remember(
        status="forgotten", tier="long_term", forgotten_at=NOW - timedelta(days=400)
    )

    report = sweep_run(now=NOW)

    assert report.purged == 1
    assert not Memory.objects.filter(pk=old.pk).exists()
    assert not Card.objects.filter(memory_id=old.pk).exists()
    purged = MemoryEvent.objects.get(memory_ref=old.pk, kind=MemoryEvent.Kind.PURGED)
    assert purged.memory_id is None and purged.before["topic"] == "old"
    assert Memory.objects.filter(pk__in=[recent.pk, long_term.pk]).count() == 2


def test_the_purge_works_in_batches(remember):
    for _ in range(7):
        remember(status="forgotten", forgotten_at=NOW - timedelta(days=40))

    purged = memories_purge_forgotten(now=NOW, config=SweepConfig(purge_batch_size=3))

    assert purged == 7
    assert MemoryEvent.objects.filter(kind=MemoryEvent.Kind.PURGED).count() == 7
    assert not Memory.objects.filter(status="forgotten").exists()


def test_a_dry_run_counts_the_purge_without_deleting(remember):
    memory = remember(status="forgotten", forgotten_at=NOW - timedelta(days=40))

    report = sweep_run(now=NOW, dry_run=True)

    assert report.purged == 1
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_a_sweep_of_an_empty_database_does_nothing(db):
    report = sweep_run(now=NOW)

    assert report.examined == report.batches == report.changed == 0
    assert Namespace.objects.count() == 0
