"""Core promotion (seed 001): recalled in 3+ distinct sessions, accessed and stable enough."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memories.boosting import CorePromotionRule, should_promote_to_core
from memories.models import Memory, MemoryEvent
from memories.sweep import SweepConfig, sweep_run
from tests.support.background import NOW, state, sweep_events

pytestmark = pytest.mark.django_db

CORE = ("promoted", "core", "hot")
QUALIFIES = {"session_ids": ["s1", "s2", "s3"], "access_count": 5, "stability": 0.5}


def test_a_memory_recalled_in_three_sessions_becomes_core(remember):
    memory = remember(days_ago=2, **QUALIFIES)

    report = sweep_run(now=NOW)

    assert report.core == 1 and report.promoted == 0
    assert state(memory) == CORE
    memory.refresh_from_db()
    assert memory.promoted_at == NOW and memory.status_changed_at == NOW
    event = sweep_events(memory).get()
    assert event.kind == MemoryEvent.Kind.PROMOTED
    assert event.before["tier"] == "short_term"
    assert event.after["tier"] == "core" and event.after["rule"] == "core"


@pytest.mark.parametrize(
    "change",
    [
        {"session_ids": ["s1", "s2"]},
        {"session_ids": ["s1", "s1", "s2", ""]},  # duplicates and blanks count once / never
        {"access_count": 4},
        {"stability": 0.49},
    ],
)
def test_each_threshold_is_needed(remember, change):
    memory = remember(days_ago=2, **{**QUALIFIES, **change})

    sweep_run(now=NOW)

    assert state(memory) == ("active", "short_term", "hot")


def test_the_sql_rule_agrees_with_the_python_rule(remember):
    cases = [
        (["a", "b", "c"], 5, 0.5),
        (["a", "b", "c", "d"], 9, 0.9),
        (["a", "b"], 9, 0.9),
        (["a", "a", "a"], 9, 0.9),
        (["a", "b", "c"], 4, 0.9),
        (["a", "b", "c"], 5, 0.4999),
    ]
    memories = [
        remember(days_ago=2, session_ids=s, access_count=a, stability=st) for s, a, st in cases
    ]

    sweep_run(now=NOW)

    rule = CorePromotionRule()
    for memory, (sessions, access, stability) in zip(memories, cases, strict=True):
        expected = should_promote_to_core(
            status="active",
            tier="short_term",
            session_ids=sessions,
            access_count=access,
            stability=stability,
            rule=rule,
        )
        assert (state(memory)[1] == "core") is expected, (sessions, access, stability)


def test_a_long_term_memory_becomes_core_and_keeps_its_promotion_date(remember):
    promoted_at = NOW - timedelta(days=40)
    memory = remember(
        days_ago=2, tier="long_term", status="promoted", promoted_at=promoted_at, **QUALIFIES
    )

    sweep_run(now=NOW)

    memory.refresh_from_db()
    assert (memory.status, memory.tier) == ("promoted", "core")
    assert memory.promoted_at == promoted_at
    assert memory.status_changed_at is None  # its status did not change


def test_a_cold_memory_that_qualifies_comes_back_hot_as_core(remember):
    memory = remember(days_ago=90, tier="long_term", status="promoted", storage="cold", **QUALIFIES)

    sweep_run(now=NOW)

    assert state(memory) == CORE


def test_core_beats_forgetting_when_both_apply(remember):
    memory = remember(days_ago=60, **QUALIFIES)  # score 0.00001

    sweep_run(now=NOW)

    assert state(memory) == CORE


def test_a_core_memory_stays_core_and_hot_however_old(remember):
    memory = remember(days_ago=1000, tier="core", status="promoted", **QUALIFIES)

    report = sweep_run(now=NOW)

    assert report.changed == 0
    assert state(memory) == CORE


def test_the_thresholds_are_settings(remember):
    memory = remember(days_ago=2, session_ids=["a", "b"], access_count=1, stability=0.1)
    config = SweepConfig.from_settings(
        core=CorePromotionRule(min_sessions=2, min_access_count=1, min_stability=0.1)
    )

    sweep_run(now=NOW, config=config)

    assert state(memory) == CORE


def test_forgotten_and_archived_memories_are_not_made_core(remember):
    memories = [
        remember(days_ago=2, status="forgotten", **QUALIFIES),
        remember(days_ago=2, status="archived", tier="long_term", **QUALIFIES),
    ]

    sweep_run(now=NOW)

    assert [state(m)[1] for m in memories] == ["short_term", "long_term"]
    assert not Memory.objects.filter(tier="core").exists()
