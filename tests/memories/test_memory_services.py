from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from memories import services
from memories.models import Classification, Memory, MemoryEvent
from memories.signatures import hamming_similarity, simhash


def test_it_stores_a_memory_with_derived_search_fields_and_signature(make_memory):
    memory = make_memory(
        "Crème brûlée sets at 80 °C",
        keywords=["Dessert"],
        content_original="La crème brûlée prend à 80 °C",
        language="fr",
    )
    memory.refresh_from_db()
    assert memory.search_text == "creme brulee sets at 80 °c dessert"
    assert memory.search_original == "la creme brulee prend a 80 °c"
    assert len(memory.signature) == 32
    assert bytes(memory.signature) == simhash("Crème brûlée sets at 80 °C Dessert", bits=256)
    assert memory.status == Memory.Status.ACTIVE
    assert memory.tier == Memory.Tier.SHORT_TERM
    assert memory.last_used_at == memory.created_at


def test_it_records_a_created_event(make_memory):
    memory = make_memory("A fact", topic="facts", classification=Classification.CONFIDENTIAL)
    event = MemoryEvent.objects.get(memory=memory)
    assert event.kind == "created"
    assert event.after["topic"] == "facts"
    assert event.after["classification"] == "confidential"


@pytest.mark.parametrize(
    ("fields", "field_at_fault"),
    [
        ({"content": "   "}, "content"),
        ({"strength": 2.5}, "strength"),
        ({"tier": "forever"}, "tier"),
        ({"classification": 9}, "classification"),
        ({"keywords": "not-a-list"}, "keywords"),
        ({"use_count": 100}, "use_count"),
        ({"emotion_score": -7}, "emotion_score"),
    ],
)
def test_it_rejects_bad_input_naming_the_field_and_writes_nothing(
    namespace, fields, field_at_fault
):
    fields = {"content": "valid text", **fields}
    with pytest.raises(ValidationError) as error:
        services.memory_create(namespace=namespace, **fields)
    assert field_at_fault in error.value.message_dict
    assert Memory.objects.count() == 0
    assert MemoryEvent.objects.count() == 0


def test_update_recomputes_search_fields_and_records_before_and_after(make_memory):
    memory = make_memory("Deploys happen on Tuesdays", topic="ops")
    old_signature = bytes(memory.signature)
    services.memory_update(
        memory=memory, changes={"content": "Deploys happen on Thursdays", "topic": "ops"}
    )
    memory.refresh_from_db()
    assert memory.search_text == "deploys happen on thursdays"
    assert bytes(memory.signature) != old_signature
    assert hamming_similarity(bytes(memory.signature), old_signature) > 0.5
    event = MemoryEvent.objects.get(memory=memory, kind="updated")
    # Only what changed is recorded.
    assert event.before == {"content": "Deploys happen on Tuesdays"}
    assert event.after == {"content": "Deploys happen on Thursdays"}


def test_update_refuses_server_owned_fields(make_memory):
    memory = make_memory()
    with pytest.raises(ValidationError) as error:
        services.memory_update(memory=memory, changes={"use_count": 99, "namespace": 3})
    assert set(error.value.message_dict) == {"use_count", "namespace"}
    memory.refresh_from_db()
    assert memory.use_count == 0


def test_update_with_an_invalid_value_changes_nothing(make_memory):
    memory = make_memory("Original text", strength=1.0)
    with pytest.raises(ValidationError):
        services.memory_update(memory=memory, changes={"content": "New", "strength": 5})
    memory.refresh_from_db()
    assert memory.content == "Original text"
    assert not MemoryEvent.objects.filter(kind="updated").exists()


def test_forget_then_restore_round_trips_with_reason_and_history(make_memory):
    memory = make_memory()
    services.memory_forget(memory=memory, reason="obsolete", score=0.03)
    memory.refresh_from_db()
    assert memory.status == Memory.Status.FORGOTTEN
    assert memory.forgotten_reason == "obsolete"
    assert memory.forgotten_score == 0.03
    assert memory.forgotten_at is not None

    later = timezone.now() + timedelta(days=3)
    services.memory_restore(memory=memory, now=later)
    memory.refresh_from_db()
    assert memory.status == Memory.Status.ACTIVE
    assert memory.forgotten_at is None and memory.forgotten_reason == ""
    assert memory.last_used_at == later
    kinds = list(MemoryEvent.objects.filter(memory=memory).values_list("kind", flat=True))
    assert sorted(kinds) == ["created", "forgotten", "restored"]


def test_forget_requires_a_reason(make_memory):
    memory = make_memory()
    with pytest.raises(ValidationError) as error:
        services.memory_forget(memory=memory, reason=" ")
    assert "reason" in error.value.message_dict
    memory.refresh_from_db()
    assert memory.status == Memory.Status.ACTIVE


def test_restore_of_a_long_term_memory_brings_it_back_as_promoted(make_memory):
    memory = make_memory(tier=Memory.Tier.LONG_TERM)
    services.memory_forget(memory=memory, reason="by hand")
    restored = services.memory_restore(memory=memory)
    assert restored.status == Memory.Status.PROMOTED


def test_purge_deletes_the_row_but_keeps_an_auditable_event(make_memory):
    memory = make_memory()
    memory_id = services.memory_purge(memory=memory)
    assert not Memory.objects.filter(pk=memory_id).exists()
    kinds = set(MemoryEvent.objects.filter(memory_ref=memory_id).values_list("kind", flat=True))
    assert kinds == {"created", "purged"}


def test_touch_counts_a_use_and_boosts_strength_by_ten_percent_capped_at_two(make_memory):
    memory = make_memory(strength=1.0)
    now = timezone.now() + timedelta(hours=1)
    services.memory_touch(memory=memory, now=now)
    memory.refresh_from_db()
    assert (memory.use_count, memory.strength, memory.last_used_at) == (1, 1.0, now)

    services.memory_touch(memory=memory, boost_strength=True, now=now)
    memory.refresh_from_db()
    assert memory.use_count == 2
    assert memory.strength == pytest.approx(1.1)

    Memory.objects.filter(pk=memory.pk).update(strength=1.95)
    services.memory_touch(memory=memory, boost_strength=True, now=now)
    memory.refresh_from_db()
    assert memory.strength == 2.0


def test_promote_moves_a_short_term_memory_to_long_term(make_memory):
    memory = make_memory()
    services.memory_promote(memory=memory)
    memory.refresh_from_db()
    assert (memory.tier, memory.status) == (Memory.Tier.LONG_TERM, Memory.Status.PROMOTED)
    assert memory.promoted_at is not None
    assert MemoryEvent.objects.filter(memory=memory, kind="promoted").exists()


def test_decay_score_uses_the_namespace_model(make_memory, namespace):
    memory = make_memory(strength=1.0)
    three_days_later = memory.last_used_at + timedelta(days=3)
    assert memory.decay_score(three_days_later) == pytest.approx(0.5)
    namespace.decay_half_life_days = 6.0
    namespace.save()
    memory.refresh_from_db()
    assert memory.decay_score(three_days_later) == pytest.approx(2**-0.5)


def test_namespace_slugs_are_unique_per_owner(user, other_user):
    services.namespace_create(owner=user, name="Work")
    services.namespace_create(owner=other_user, name="Work")
    with pytest.raises(ValidationError):
        services.namespace_create(owner=user, name="Work")


def test_ranking_weights_follow_the_mode_unless_overridden(user):
    agent = services.namespace_create(owner=user, name="Agent", mode="agent_memory")
    assert agent.ranking_weights()["utility"] == 0.2
    agent.weight_utility = 0.4
    assert agent.ranking_weights()["utility"] == 0.4


@pytest.mark.parametrize("field", ["content", "topic", "keywords"])
def test_null_characters_are_refused_on_every_engine(namespace, field):
    value = ["a\x00b"] if field == "keywords" else "a\x00b"
    fields = {"content": "valid", field: value}
    with pytest.raises(ValidationError) as error:
        services.memory_create(namespace=namespace, **fields)
    assert field in error.value.message_dict


def test_changing_the_content_drops_the_stale_embedding(make_memory):
    memory = make_memory("Old text")
    Memory.objects.filter(pk=memory.pk).update(embedding=b"\x00" * 16, embedding_model="m")
    memory.refresh_from_db()
    services.memory_update(memory=memory, changes={"topic": "kept"})
    memory.refresh_from_db()
    assert memory.embedding is not None
    services.memory_update(memory=memory, changes={"content": "New text"})
    memory.refresh_from_db()
    assert memory.embedding is None and memory.embedding_model == ""
