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
