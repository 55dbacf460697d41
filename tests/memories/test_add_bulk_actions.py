"""memories.services.bulk_actions and the bulk-action registry of memories.hooks: set-based
writes (one UPDATE per action whatever the count), the single-memory services' rules and
history, and which actions other apps register."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories import hooks, services
from memories.models import Classification, Memory, MemoryEvent

pytestmark = pytest.mark.django_db


def test_review_registers_exactly_its_card_actions():
    names = [action.name for action in hooks.bulk_actions()]
    assert names == ["suspend", "unsuspend", "bury", "unbury", "review_now"]
    assert {a.run.__module__ for a in hooks.bulk_actions()} == {"review.bulk_actions"}
    assert [name for name, _ in services.bulk_action_choices()] == [
        "forget",
        "restore",
        "move",
        "classify",
        "keep",
        *names,
    ]


def test_an_action_registered_twice_or_with_a_parameter_is_refused():
    again = hooks.BulkAction(name="suspend", label="Again", run=lambda **kw: 0)
    with pytest.raises(ValueError, match="suspend"):
        hooks.bulk_action_register(again)
    odd = hooks.BulkAction(name="odd", label="Odd", run=lambda **kw: 0, parameter="reason")
    with pytest.raises(ValueError, match="parameter"):
        hooks.bulk_action_register(odd)
    assert len(hooks.bulk_actions()) == 5


@pytest.mark.parametrize("reason", ["", "   ", None, "r" * 201])
def test_the_forget_reason_rule_is_memory_forgets(make_memory, reason):
    memory = make_memory()
    with pytest.raises(ValidationError) as single:
        services.memory_forget(memory=memory, reason=reason)
    with pytest.raises(ValidationError) as bulk:
        services.memories_forget(memories=Memory.objects.all(), reason=reason)
    assert bulk.value.message_dict == single.value.message_dict
    assert not Memory.objects.filter(status="forgotten").exists()


def _updates(context) -> list[str]:
    table = Memory._meta.db_table
    return [
        q["sql"]
        for q in context.captured_queries
        if q["sql"].lstrip().upper().startswith("UPDATE") and table in q["sql"]
    ]


@pytest.mark.parametrize("count", [2, 12])
@pytest.mark.parametrize(
    ("action", "params"),
    [
        ("forget", {"reason": "stale"}),
        ("move", {"topic": "elsewhere"}),
        ("classify", {"classification": Classification.CONFIDENTIAL}),
    ],
)
def test_each_action_is_one_update_and_one_insert_of_events(
    make_memory, user, count, action, params
):
    for i in range(count):
        make_memory(f"Fact number {i} is here.")
    with CaptureQueriesContext(connection) as context:
        _, _, changed = services.memories_bulk_apply(
            action=action, memories=Memory.objects.all(), params=params, actor=user
        )
    assert changed == count
    assert len(_updates(context)) == 1
    inserts = [q for q in context.captured_queries if "INSERT" in q["sql"].upper()]
    assert len(inserts) == 1  # the events, in one statement
    assert MemoryEvent.objects.filter(actor=user).count() == count


def test_restore_is_one_update_too(make_memory):
    memories = [make_memory(f"Fact {i} to bring back.") for i in range(5)]
    services.memories_forget(memories=Memory.objects.all(), reason="oops")
    with CaptureQueriesContext(connection) as context:
        restored = services.memories_restore(memories=Memory.objects.all())
    assert restored == len(memories)
    assert len(_updates(context)) == 1
    assert set(Memory.objects.values_list("status", flat=True)) == {"active"}


def test_unchanged_memories_get_no_write_and_no_event(make_memory):
    a = make_memory("Already in ops.", topic="ops")
    make_memory("In geo.", topic="geo")
    moved = services.memories_move(memories=Memory.objects.all(), topic="ops")
    assert moved == 1
    assert not MemoryEvent.objects.filter(memory=a, kind="updated").exists()


def test_a_bulk_action_is_all_or_nothing(make_memory, monkeypatch):
    for i in range(3):
        make_memory(f"Fact {i} kept.")

    def broken(events):
        raise RuntimeError("announce failed")

    monkeypatch.setattr("memories.services.bulk_actions.memory_events_announce", broken)
    with pytest.raises(RuntimeError):
        services.memories_bulk_apply(
            action="forget", memories=Memory.objects.all(), params={"reason": "x"}
        )
    assert not Memory.objects.filter(status="forgotten").exists()
    assert not MemoryEvent.objects.filter(kind="forgotten").exists()


def test_a_level_above_the_callers_ceiling_is_refused(make_memory):
    make_memory()
    with pytest.raises(ValidationError) as error:
        services.memories_bulk_apply(
            action="classify",
            memories=Memory.objects.all(),
            params={"classification": Classification.RESTRICTED},
            ceiling=Classification.INTERNAL,
        )
    assert "classification" in error.value.message_dict
    assert not Memory.objects.filter(classification=Classification.RESTRICTED).exists()


def test_an_unknown_action_is_refused_by_name():
    with pytest.raises(ValidationError) as error:
        services.memories_bulk_check(action="explode", params={})
    assert error.value.message_dict == {"action": ["Unknown action."]}


def test_the_words_agree_with_the_count():
    forget, _ = services.memories_bulk_check(action="forget", params={"reason": "x"})
    assert services.bulk_action_text(forget, {}, count=1) == "Forget 1 memory?"
    assert services.bulk_action_text(forget, {}, count=3) == "Forget 3 memories?"
    assert (
        services.bulk_action_text(forget, {}, count=2, selected=3)
        == "Forgot 2 memories. 1 memory needed no change."
    )
    move, values = services.memories_bulk_check(action="move", params={"topic": ""})
    assert services.bulk_action_text(move, values, count=2) == (
        "Move 2 memories to the topic “(no topic)”?"
    )
