"""recall.stages.sql on the engine the suite runs on."""

from __future__ import annotations

import pytest
from django.db import connection

from recall.stages.sql import in_list

pytestmark = pytest.mark.django_db


def test_in_list_selects_exactly_the_given_ids(make_memory):
    kept = [make_memory(f"Memory number {n}") for n in range(5)]
    wanted = [kept[3].pk, kept[0].pk, kept[4].pk]
    where, params = in_list("id", wanted)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM memories_memory WHERE {where}", params)
        found = sorted(row[0] for row in cursor.fetchall())
    assert found == sorted(wanted)
