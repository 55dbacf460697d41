"""Recall's candidate filter admits exactly the memories the visibility rule declares.

Every recall stage restricts its rows with RecallFilters.sql(), raw SQL; the rule itself
is declared once, as Memory.objects.visible_to(namespace_ids=..., ceiling=...).live().
Hypothesis builds memories across namespaces, levels, statuses, storages, expiry times,
topics, tiers and creation times (boundaries included: an expiry exactly at `now`, a
creation exactly at either end of the range), then checks on the real database (SQLite
or PostgreSQL, whichever DATABASE_URL names) that the SQL admits the same ids as the
QuerySet composed from the declared rule and recall's other conditions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from memories import services
from memories.models import Classification, Memory, MemoryQuerySet, Namespace
from recall.stages.filters import RecallFilters

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
MOMENTS = (NOW - timedelta(days=3), NOW - timedelta(days=1), NOW, NOW + timedelta(days=1))
TOPICS = ("", "work", "home")
N_NAMESPACES = 3


@dataclass(frozen=True)
class Row:
    namespace: int  # index into the namespaces fixture
    classification: int
    status: str
    storage: str
    expires_at: datetime | None
    topic: str
    tier: str
    created_at: datetime
    valid_from: datetime = NOW - timedelta(days=3)
    valid_until: datetime | None = None


def validity(row: Row, valid_from: datetime, ends_after: timedelta | None) -> Row:
    """The row with a validity: valid_until never before valid_from."""
    until = None if ends_after is None else valid_from + ends_after
    return Row(**{**row.__dict__, "valid_from": valid_from, "valid_until": until})


rows = st.builds(
    Row,
    namespace=st.integers(0, N_NAMESPACES - 1),
    classification=st.sampled_from(Classification.values),
    status=st.sampled_from(Memory.Status.values),
    storage=st.sampled_from(Memory.Storage.values),
    expires_at=st.one_of(st.none(), st.sampled_from(MOMENTS)),
    topic=st.sampled_from(TOPICS),
    tier=st.sampled_from(Memory.Tier.values),
    created_at=st.sampled_from(MOMENTS),
).flatmap(
    lambda row: st.builds(
        validity,
        st.just(row),
        st.sampled_from(MOMENTS),
        st.one_of(st.none(), st.sampled_from([timedelta(0), timedelta(days=1), timedelta(days=2)])),
    )
)


@dataclass(frozen=True)
class Ask:
    namespaces: frozenset[int]
    ceiling: int
    cold: bool
    include_expired: bool
    topic: str | None
    tier: str | None
    time_start: datetime | None
    time_end: datetime | None
    as_of: datetime | None = None
    include_superseded: bool = False


def asks(*, narrowed: bool) -> st.SearchStrategy[Ask]:
    """What a recall asks for; `narrowed` adds the optional topic, tier and time range."""

    def maybe(values):
        return st.one_of(st.none(), st.sampled_from(values)) if narrowed else st.none()

    return st.builds(
        Ask,
        namespaces=st.frozensets(st.integers(0, N_NAMESPACES - 1), min_size=1),
        ceiling=st.sampled_from(Classification.values),
        cold=st.booleans(),
        include_expired=st.booleans(),
        topic=maybe(TOPICS[1:]),
        tier=maybe(Memory.Tier.values),
        time_start=maybe(MOMENTS),
        time_end=maybe(MOMENTS),
        as_of=st.one_of(st.none(), st.sampled_from(MOMENTS)),
        include_superseded=st.booleans(),
    )


@pytest.fixture
def namespaces(user) -> list[Namespace]:
    return [services.namespace_create(owner=user, name=f"Space {n}") for n in range(N_NAMESPACES)]


def store(generated: list[Row], namespaces: list[Namespace]) -> list[int]:
    memories = Memory.objects.bulk_create(
        Memory(
            namespace=namespaces[row.namespace],
            content=f"generated memory {i}",
            classification=row.classification,
            status=row.status,
            storage=row.storage,
            expires_at=row.expires_at,
            topic=row.topic,
            tier=row.tier,
            created_at=row.created_at,
            valid_from=row.valid_from,
            valid_until=row.valid_until,
        )
        for i, row in enumerate(generated)
    )
    return [memory.pk for memory in memories]


def admitted_by_recall(filters: RecallFilters, *, cold: bool) -> set[int]:
    where, params = filters.sql("m", cold=cold)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT m.id FROM memories_memory m WHERE {where}", params)
        return {memory_id for (memory_id,) in cursor.fetchall()}


def declared(ask: Ask, namespace_ids: list[int]) -> MemoryQuerySet:
    """The visibility rule as declared, and recall's own further conditions."""
    visible = Memory.objects.visible_to(namespace_ids=namespace_ids, ceiling=ask.ceiling).live()
    if not ask.cold:
        visible = visible.filter(storage=Memory.Storage.HOT)
    if not ask.include_expired:
        visible = visible.unexpired(NOW)
    if ask.include_superseded:
        pass
    elif ask.as_of:
        visible = visible.valid_at(ask.as_of)
    else:
        visible = visible.current(NOW)
    if ask.topic:
        visible = visible.filter(topic=ask.topic)
    if ask.tier:
        visible = visible.filter(tier=ask.tier)
    if ask.time_start:
        visible = visible.filter(created_at__gte=ask.time_start)
    if ask.time_end:
        visible = visible.filter(created_at__lte=ask.time_end)
    return visible


def check(generated: list[Row], ask: Ask, namespaces: list[Namespace]) -> None:
    store(generated, namespaces)
    namespace_ids = sorted(namespaces[n].pk for n in ask.namespaces)
    filters = RecallFilters(
        namespace_ids=tuple(namespace_ids),
        ceiling=ask.ceiling,
        now=NOW,
        topic=ask.topic,
        tier=ask.tier,
        time_start=ask.time_start,
        time_end=ask.time_end,
        include_expired=ask.include_expired,
        as_of=ask.as_of,
        include_superseded=ask.include_superseded,
    )
    expected = set(declared(ask, namespace_ids).values_list("id", flat=True))
    assert admitted_by_recall(filters, cold=ask.cold) == expected


GENERATED = settings(
    max_examples=80,
    deadline=None,
    # No explain phase: it traces every line of Django under sys.settrace (slow).
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@GENERATED
@given(generated=st.lists(rows, min_size=1, max_size=25), ask=asks(narrowed=False))
def test_recall_admits_exactly_the_visible_live_memories(namespaces, generated, ask):
    with transaction.atomic():
        check(generated, ask, namespaces)
        transaction.set_rollback(True)


@GENERATED
@given(generated=st.lists(rows, min_size=1, max_size=25), ask=asks(narrowed=True))
def test_recall_admits_exactly_those_within_topic_tier_and_time_range_too(
    namespaces, generated, ask
):
    with transaction.atomic():
        check(generated, ask, namespaces)
        transaction.set_rollback(True)


def test_the_declared_rule_hides_what_it_is_named_for(namespaces):
    """A fixed world, so the generated test's rule is seen to exclude something of each kind."""
    kept = Row(0, Classification.INTERNAL, "active", "hot", None, "", "short_term", NOW)
    hidden = [
        Row(1, Classification.INTERNAL, "active", "hot", None, "", "short_term", NOW),  # namespace
        Row(0, Classification.CONFIDENTIAL, "active", "hot", None, "", "short_term", NOW),
        Row(0, Classification.INTERNAL, "forgotten", "hot", None, "", "short_term", NOW),
        Row(0, Classification.INTERNAL, "archived", "hot", None, "", "short_term", NOW),
        Row(0, Classification.INTERNAL, "active", "cold", None, "", "short_term", NOW),
        Row(0, Classification.INTERNAL, "active", "hot", NOW, "", "short_term", NOW),  # expired
        Row(0, Classification.INTERNAL, "active", "hot", None, "", "short_term", NOW, NOW, NOW),
    ]
    ids = store([kept, *hidden], namespaces)
    filters = RecallFilters(
        namespace_ids=(namespaces[0].pk,), ceiling=Classification.INTERNAL, now=NOW
    )
    assert admitted_by_recall(filters, cold=False) == {ids[0]}
    ask = Ask(frozenset({0}), Classification.INTERNAL, False, False, None, None, None, None)
    assert set(declared(ask, [namespaces[0].pk]).values_list("id", flat=True)) == {ids[0]}
