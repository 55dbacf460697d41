"""The raw SQL form of "live, current, unexpired, at or below a ceiling"
(memories.models.reachable_sql), which the hot paths use (a create's duplicate look-up,
near-duplicate candidates, the review candidates), selects exactly what the querysets'
rules select, on every combination of the columns it reads."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories.models import LIVE_STATUSES, Classification, Memory, reachable_sql
from memories.services.duplicates import live_duplicates
from memories.text import content_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def grid(namespace):
    """One memory per combination of status, level, valid_until and expires_at (past,
    future, none), all with the same text."""
    now = timezone.now()
    moments = [None, now - timedelta(days=1), now + timedelta(days=1)]
    rows = [
        Memory(
            namespace=namespace,
            content="The same text",
            content_key=content_key("The same text"),
            status=status,
            classification=level,
            valid_until=until,
            expires_at=expires,
            created_at=now - timedelta(days=3),
            last_used_at=now - timedelta(days=3),
            valid_from=now - timedelta(days=3),
        )
        for status, level, until, expires in itertools.product(
            Memory.Status.values, Classification.values, moments, moments
        )
    ]
    Memory.objects.bulk_create(rows)
    return now


def _raw(namespace, **kwargs) -> set[int]:
    sql, params = reachable_sql("m", **kwargs)
    table = connection.ops.quote_name(Memory._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id FROM {table} m WHERE m.namespace_id = %s AND {sql}",
            [namespace.pk, *params],
        )
        return {pk for (pk,) in cursor.fetchall()}


@pytest.mark.parametrize("ceiling", Classification.values)
def test_the_sql_selects_what_the_querysets_select(namespace, grid, ceiling):
    now = grid
    rule = Memory.objects.filter(namespace=namespace).within_ceiling(ceiling)
    rule = rule.current(now).unexpired(now)
    live = set(rule.filter(status__in=LIVE_STATUSES).values_list("pk", flat=True))
    anything = set(rule.values_list("pk", flat=True))
    assert live and anything - live  # the grid exercises both forms
    assert _raw(namespace, ceiling=ceiling, now=now) == live
    assert _raw(namespace, ceiling=ceiling, now=now, statuses=None) == anything


@pytest.mark.parametrize("ceiling", Classification.values)
def test_a_duplicate_is_the_oldest_reachable_copy(namespace, grid, ceiling):
    now = grid
    expected = (
        Memory.objects.filter(namespace=namespace, status__in=LIVE_STATUSES)
        .within_ceiling(ceiling)
        .current(now)
        .unexpired(now)
        .order_by("pk")
        .first()
    )
    key = (namespace.pk, content_key("the SAME text"))
    found = live_duplicates([key, (namespace.pk, "no such key")], ceiling=ceiling, now=now)
    assert list(found) == [key]
    assert found[key].pk == expected.pk
    assert found[key].namespace == namespace  # read with it, for the answer's serializer
