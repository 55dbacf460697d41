"""memories.fastpaths answers exactly as the library it stands in for, on generated inputs:
the planned to_representation as DRF's Serializer.to_representation, the per-thread
serializers as a new serializer per call, the column preparers as bulk_create's
get_db_prep_save (the rows stored are the same)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from memories import bulk
from memories import serializers as s
from memories.models import Classification, Memory, Namespace

ZONES = ["UTC", "Europe/Paris", "America/St_Johns", "Asia/Kathmandu", "Pacific/Kiritimati"]

texts = st.text(max_size=30)
string_lists = st.lists(st.text(max_size=10), max_size=4)
aware = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.sampled_from(
        [UTC, timezone.get_fixed_timezone(330), timezone.get_fixed_timezone(-90)]
    ),
)
# The edges of the calendar, where moving into a time zone overflows (DRF's error, both ways).
edges = st.sampled_from(
    [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)]
)
moments = st.one_of(aware, edges)
floats = st.floats(allow_nan=False)


@st.composite
def memories(draw) -> Memory:
    namespace = Namespace(
        id=draw(st.integers(1, 5)),
        slug=draw(st.sampled_from(["work", "home-2"])),
        decay_model=draw(st.sampled_from(["", *Namespace.DecayModel.values])),
        decay_half_life_days=draw(st.none() | st.floats(0.5, 100)),
    )
    now = timezone.now()
    memory = Memory(
        id=draw(st.integers(1, 2**63 - 1)),
        namespace=namespace,
        content=draw(texts),
        content_original=draw(texts),
        language=draw(st.sampled_from(["", "en", "fr"])),
        keywords=draw(string_lists),
        topic=draw(texts),
        cue=draw(texts),
        memory_type=draw(st.sampled_from(Memory.MemoryType.values)),
        tier=draw(st.sampled_from(Memory.Tier.values)),
        storage=draw(st.sampled_from(Memory.Storage.values)),
        status=draw(st.sampled_from(Memory.Status.values)),
        classification=draw(st.sampled_from([c.value for c in Classification])),
        strength=draw(st.floats(0, 2)),
        stability=draw(floats),
        utility=draw(floats),
        confidence=draw(floats),
        emotion_score=draw(floats),
        emotion_tags=draw(string_lists),
        trust=draw(floats),
        credibility=draw(st.integers(1, 5)),
        relevance_score=draw(floats),
        importance_flags=draw(string_lists),
        use_count=draw(st.integers(0, 10**9)),
        last_used_at=draw(
            st.datetimes(
                min_value=datetime(2000, 1, 1),
                max_value=datetime(2030, 1, 1),
                timezones=st.just(UTC),
            )
        ),
        access_count=draw(st.integers(0, 10**9)),
        last_accessed_at=draw(st.none() | moments),
        recall_count=draw(st.integers(0, 10**9)),
        last_recalled_at=draw(st.none() | moments),
        recall_timestamps=draw(st.lists(st.just(now.isoformat()), max_size=2)),
        session_ids=draw(string_lists),
        created_at=draw(moments),
        updated_at=draw(moments),
        expires_at=draw(st.none() | moments),
        promoted_at=draw(st.none() | moments),
        forgotten_at=draw(st.none() | moments),
        forgotten_reason=draw(texts),
        embedding=draw(st.none() | st.binary(max_size=8)),
    )
    return memory


def _outcome(render) -> tuple[str, Any]:
    try:
        return "ok", render()
    except serializers.ValidationError as exc:
        return "error", exc.detail


def _drf(memory: Memory, now) -> dict:
    serializer = s.MemoryOutput(context={"now": now})
    return serializers.Serializer.to_representation(serializer, memory)


@settings(max_examples=300, deadline=None)
@given(memory=memories(), zone=st.sampled_from(ZONES), ahead=st.integers(0, 10**6))
def test_the_planned_representation_is_drfs(memory, zone, ahead):
    now = timezone.now() + timedelta(seconds=ahead)
    with timezone.override(zone):
        planned = _outcome(lambda: dict(s.MemoryOutput(memory, context={"now": now}).data))
        library = _outcome(lambda: _drf(memory, now))
    assert planned == library
    if planned[0] == "ok":
        assert list(planned[1]) == list(library[1])  # the same keys in the same order


@settings(max_examples=100, deadline=None)
@given(batch=st.lists(memories(), min_size=1, max_size=5), zone=st.sampled_from(ZONES))
def test_the_per_thread_renderer_is_a_new_memory_output_per_call(batch, zone):
    now = timezone.now()
    with timezone.override(zone):
        for memory in batch:
            for when in (now, None):
                reused = _outcome(lambda m=memory, w=when: s.memory_representation(m, now=w))
                context = {"now": when} if when is not None else {}
                fresh = _outcome(
                    lambda m=memory, c=context: dict(s.MemoryOutput(m, context=c).data)
                )
                if when is None:  # "now" is read at the call: the scores may differ by a hair
                    for outcome in (reused, fresh):
                        if outcome[0] == "ok":
                            outcome[1].pop("decay_score")
                assert reused == fresh


VALUES: dict[str, list[Any]] = {
    "namespace": ["work", "bad slug!", "", None, 7],
    "content": ["x", "  padded  ", "", "   ", 5, True, None, [], "a\x00b", "\ud800z"],
    "keywords": [[], ["a"], ["a", ""], "notalist", [1, 2], ["a"] * 51],
    "topic": ["t", "t" * 101, None, 3],
    "classification": ["public", "restricted", "secret", 2],
    "strength": [0, 1, 2.5, "1.5", True, None],
    "credibility": [1, 6, 3.0, 3.5, "4"],
    "expires_at": ["2030-01-01T00:00:00Z", "2030-01-01T00:00:00+05:30", "not a date", None],
    "created_at": ["2020-01-01T00:00:00+02:00", "2999-01-01T00:00:00Z", "bad"],
    "status": ["active"],
    "bogus": [1],
}
items = st.dictionaries(
    st.sampled_from(sorted(VALUES)), st.integers(min_value=0, max_value=20), max_size=6
).map(lambda picks: {k: VALUES[k][i % len(VALUES[k])] for k, i in picks.items()})


# Not None (a JSON null body): run_validation answers "This field may not be null." where
# is_valid says "No data provided"; the API has always given the former.
@settings(max_examples=200, deadline=None)
@given(batch=st.lists(items | st.sampled_from([[], "text", 3]), min_size=1, max_size=6))
def test_the_per_thread_validator_is_a_new_memory_create_input_per_call(batch):
    for data in batch:
        fresh = s.MemoryCreateInput(data=data)
        try:
            fresh.is_valid(raise_exception=True)
            expected = ("ok", dict(fresh.validated_data))
        except serializers.ValidationError as exc:
            expected = ("error", exc.detail)
        assert _outcome(lambda d=data: s.validate_memory_input(d)) == expected


# Values every engine stores: text without NUL (PostgreSQL refuses it), numbers within the
# check constraints, datetimes in any offset; choices as members or as their values, and
# numbers of the other type (an int for a float), which take get_db_prep_save's own path.
stored_text = st.text(
    alphabet=st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=20
)
stored_strings = st.lists(stored_text, max_size=3)
stored_moments = st.datetimes(
    min_value=datetime(1900, 1, 1),
    max_value=datetime(2200, 1, 1),
    timezones=st.sampled_from(
        [UTC, timezone.get_fixed_timezone(330), timezone.get_fixed_timezone(-90)]
    ),
)
unit = st.floats(0, 1) | st.sampled_from([0, 1])


@st.composite
def stored_values(draw) -> dict[str, Any]:
    return {
        "content": draw(stored_text),
        "content_original": draw(stored_text),
        "keywords": draw(stored_strings),
        "topic": draw(stored_text.map(lambda t: t[:100])),
        "memory_type": draw(st.sampled_from([*Memory.MemoryType, *Memory.MemoryType.values])),
        "tier": draw(st.sampled_from(Memory.Tier.values)),
        "status": draw(st.sampled_from([*Memory.Status])),
        "classification": draw(st.sampled_from([*Classification, 0, 3])),
        "strength": draw(st.floats(0, 2) | st.sampled_from([0, 2])),
        "stability": draw(unit),
        "utility": draw(unit),
        "confidence": draw(unit),
        "emotion_score": draw(st.floats(-5, 5)),
        "emotion_tags": draw(stored_strings),
        "credibility": draw(st.integers(1, 5)),
        "use_count": draw(st.integers(0, 2**31 - 1)),
        "last_used_at": draw(stored_moments),
        "last_accessed_at": draw(st.none() | stored_moments),
        "recall_timestamps": draw(stored_strings),
        "session_ids": draw(stored_strings),
        "created_at": draw(stored_moments),
        "expires_at": draw(st.none() | stored_moments),
        "valid_from": draw(stored_moments),  # valid_until stays open (never before it)
        "session_id": draw(st.sampled_from(["", "chat-1"])),
        "position": draw(st.none() | st.integers(0, 2**31 - 1)),
        "embedding": draw(
            st.none() | st.binary(max_size=8) | st.binary(max_size=8).map(memoryview)
        ),
    }


_STAMPED = {
    field.name
    for field in Memory._meta.concrete_fields
    if field.primary_key or getattr(field, "auto_now", False)
}
_COLUMNS = [field.attname for field in Memory._meta.concrete_fields if field.name not in _STAMPED]


@pytest.mark.django_db
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(stored_values(), min_size=bulk.SMALL, max_size=bulk.SMALL + 15))
def test_the_column_preparers_store_what_bulk_create_stores(namespace, rows):
    prepared = [Memory(namespace=namespace, **values) for values in rows]
    library = [Memory(namespace=namespace, **values) for values in rows]
    bulk.insert_new(prepared, ids=True)  # COPY or multi-row INSERTs, through column_preparer
    Memory.objects.bulk_create(library)  # get_db_prep_save per value

    def stored(objs: list[Memory]) -> list[tuple]:
        rows = Memory.objects.filter(pk__in=[obj.pk for obj in objs]).order_by("pk")
        return [
            tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
            for row in rows.values_list(*_COLUMNS)
        ]

    assert stored(prepared) == stored(library)
