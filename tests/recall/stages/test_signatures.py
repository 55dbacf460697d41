"""Stage Ss (recall.stages.signatures) on the engine the suite runs on."""

from __future__ import annotations

import pytest

from tests.recall.fixtures.helpers import ids

pytestmark = pytest.mark.django_db


def test_signature_stage_finds_near_duplicates(recall, make_memory):
    text = "the quarterly report is due on the first monday of april every year"
    target = make_memory(text)
    make_memory("Bananas ripen faster in a paper bag")
    result = recall(text.replace("quarterly", "annual"), stages=["Ss"])
    assert ids(result) == [target.pk]
    assert result.results[0].stages == ["Ss"]
    assert result.results[0].stage_scores["Ss"] >= 0.65


def test_signature_stage_returns_at_most_five(recall, make_memory, namespace):
    namespace.dedupe = "off"  # eight copies of one text: stored eight times
    namespace.save(update_fields=["dedupe"])
    text = "deploy the billing service to production after the friday review meeting"
    for _ in range(8):
        make_memory(text)
    result = recall(text, stages=["Ss"])
    assert result.stage_timings["Ss"]["hits"] == 5


def test_signature_stage_scans_the_newest_rows_and_skips_other_lengths(make_memory, namespace):
    """The newest scan_cap rows are read whatever their signature; one of another length
    (written under another SIGNATURE_BITS) is read but matches nothing."""
    from django.utils import timezone

    from memories.models import Memory
    from recall.stages.filters import RecallFilters
    from recall.stages.signatures import signature_search

    namespace.dedupe = "off"
    namespace.save(update_fields=["dedupe"])
    text = "deploy the billing service to production after the friday review meeting"
    oldest, middle, newest = (make_memory(text) for _ in range(3))
    Memory.objects.filter(pk=newest.pk).update(signature=bytes(16))
    filters = RecallFilters(namespace_ids=(namespace.pk,), ceiling=3, now=timezone.now())

    def search(scan_cap: int) -> list[int]:
        found = signature_search(text, filters, bits=256, threshold=0.65, cap=5, scan_cap=scan_cap)
        return sorted(memory_id for memory_id, _ in found)

    assert search(2) == [middle.pk]
    assert search(3) == sorted([oldest.pk, middle.pk])
