"""Smoke test of `manage.py bench_decay_fit`: a small namespace, its uses written by recall
tracking, the fit timed and its figures printed."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memories.models import DecayFit, MemoryUse


@pytest.mark.django_db
def test_it_builds_the_namespace_through_tracking_and_prints_the_fit() -> None:
    out = StringIO()
    call_command("bench_decay_fit", size=2000, runs=1, stdout=out, stderr=StringIO())
    figures = json.loads(out.getvalue())
    assert figures["memories"] == 2000
    assert figures["uses_logged"] == MemoryUse.objects.count() > 5000
    assert figures["fit_seconds"]["median"] > 0 and figures["peak_rss_mb"] > 0
    fit = DecayFit.objects.get()
    # The generating half-life (2 days) is found again through the product's writers.
    assert abs(fit.half_life_days - 2.0) < 0.4 and fit.accepted == figures["accepted"]


def test_it_refuses_a_size_too_small() -> None:
    with pytest.raises(CommandError, match="--size"):
        call_command("bench_decay_fit", size=5, stdout=StringIO(), stderr=StringIO())
