"""manage.py bench_vectors builds its namespace once and prints Se's figures."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from memories.models import Memory
from recall.models import EmbeddingCode
from tests.recall.fixtures.helpers import requires_numpy

pytestmark = [pytest.mark.django_db, requires_numpy]


def run(**options) -> str:
    out = StringIO()
    options = {"size": 300, "queries": 3, "runs": 1, "exact_queries": 1} | options
    call_command("bench_vectors", stdout=out, **options)
    return out.getvalue()


def test_it_builds_once_and_prints_latency_and_recall():
    first = run()
    assert "built in" in first
    assert Memory.objects.count() == EmbeddingCode.objects.count() == 300
    assert "two-step (codes -> best 900 -> cosine, limit 30): p50" in first
    assert "recall of the exact top 10:" in first
    assert "exact scan of all 300 vectors" in first

    second = run()
    assert "reused" in second and "built in" not in second
    assert Memory.objects.count() == 300
