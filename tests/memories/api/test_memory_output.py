"""MemoryOutput's compiled to_representation gives exactly what DRF's generic one gives."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework import serializers

from memories import serializers as s
from memories import services
from memories.fastpaths import per_thread
from memories.models import Classification, Memory, Namespace


def _drf(memory: Memory, now) -> dict:
    """The representation by DRF's own Serializer.to_representation."""
    serializer = s.MemoryOutput(context={"now": now})
    return serializers.Serializer.to_representation(serializer, memory)


@pytest.fixture
def varied(user, namespace) -> list[Memory]:
    slow = services.namespace_create(
        owner=user, name="slow", decay_model="power_law", decay_half_life_days=30
    )
    now = timezone.now()
    made = [
        services.memory_create(namespace=namespace, content="Plain memory"),
        services.memory_create(
            namespace=slow,
            content="Rich  memory\nwith lines",
            content_original="Mémoire riche",
            language="fr",
            keywords=["a", "b"],
            topic="t",
            cue="Why?",
            memory_type="semantic",
            tier="core",
            classification=Classification.RESTRICTED,
            strength=2,
            utility=0.1,
            confidence=1,
            emotion_score=-4.5,
            emotion_tags=["joy", "fear"],
            trust=0.0,
            credibility=1,
            relevance_score=123456.789,
            importance_flags=["pinned"],
            expires_at=now + timedelta(days=400, microseconds=7),
            created_at=now - timedelta(days=3, hours=5),
        ),
    ]
    services.memory_touch(memory=made[0], boost_strength=True)
    services.memory_forget(memory=made[1], reason="outdated")
    Memory.objects.filter(pk=made[0].pk).update(
        recall_timestamps=[now.isoformat()],
        session_ids=["s1"],
        last_recalled_at=now,
        last_accessed_at=now - timedelta(minutes=3),
        recall_count=4,
        access_count=2,
        embedding=b"\x00\x01",
    )
    return list(Memory.objects.select_related("namespace").order_by("pk"))


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/St_Johns"])
def test_the_compiled_representation_equals_drfs(varied, zone):
    now = timezone.now()
    with timezone.override(zone):
        for memory in varied:
            fast = s.MemoryOutput(memory, context={"now": now}).data
            assert fast == _drf(memory, now)
            assert list(fast) == list(_drf(memory, now))  # same keys in the same order
        many = s.MemoryOutput(varied, many=True, context={"now": now}).data
        assert many == [_drf(memory, now) for memory in varied]


def test_each_memory_is_scored_with_its_own_namespaces_decay_settings(varied):
    now = timezone.now() + timedelta(days=5)
    scores = [
        row["decay_score"] for row in s.MemoryOutput(varied, many=True, context={"now": now}).data
    ]
    expected = [round(m.decay_score(now, m.namespace.decay_params()), 6) for m in varied]
    assert scores == expected
    assert scores[0] != scores[1]
    assert {m.namespace.decay_model for m in varied} == {"", Namespace.DecayModel.POWER_LAW}


def test_the_per_thread_renderer_equals_memory_output_and_rereads_namespace_settings(varied):
    now = timezone.now() + timedelta(days=2)
    for memory in varied:
        assert (
            s.memory_representation(memory, now=now)
            == s.MemoryOutput(memory, context={"now": now}).data
        )
    memory = varied[0]
    before = s.memory_representation(memory, now=now)["decay_score"]
    services.namespace_update(namespace=memory.namespace, changes={"decay_half_life_days": 0.5})
    memory.namespace.refresh_from_db()
    assert s.memory_representation(memory, now=now)["decay_score"] < before


def test_each_thread_has_its_own_renderer_and_validator():
    import threading

    seen = []

    def grab():
        seen.append((per_thread(s.MemoryOutput), per_thread(s.MemoryCreateInput)))

    threads = [threading.Thread(target=grab) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    grab()
    assert len({id(output) for output, _ in seen}) == 3
    assert len({id(validator) for _, validator in seen}) == 3
    assert per_thread(s.MemoryOutput) is seen[-1][0]
