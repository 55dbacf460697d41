"""recall.enrichment: interference warnings name the newer of two contradicting results."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from recall.enrichment import interference
from recall.pipeline import RecallHit


def hit(memory_id: int, content: str, created_at: str | None, topic: str = "") -> RecallHit:
    return RecallHit(
        memory_id=memory_id,
        namespace="work",
        content=content,
        score=1.0,
        raw_score=1.0,
        stages=["Sf"],
        stage_scores={"Sf": 1.0},
        boosts={},
        metadata={"topic": topic, "created_at": created_at},
    )


def test_each_conflicting_result_names_the_other_and_which_is_newer():
    older = hit(7, "The release deadline is May 5", "2026-03-01T09:00:00+00:00", "release")
    newer = hit(12, "The release deadline is May 12", "2026-03-02T09:00:00+00:00", "release")
    interference([newer, older])
    assert older.warnings == [
        "⚠️ Conflicts with another result (memory 12, newer): different numbers"
    ]
    assert newer.warnings == [
        "⚠️ Conflicts with another result (memory 7, older): different numbers"
    ]
    assert older.conflicts == [{"memory_id": 12, "newer_id": 12, "reason": "different numbers"}]
    assert newer.conflicts == [{"memory_id": 7, "newer_id": 12, "reason": "different numbers"}]


def test_the_newer_is_the_later_created_whatever_the_ids():
    # Imported memories keep their created_at: the larger id can be the older fact.
    later = hit(3, "The project uses PostgreSQL", "2026-03-02T09:00:00.250000+00:00")
    earlier = hit(9, "The project does not use PostgreSQL", "2026-03-02T09:00:00+00:00")
    interference([earlier, later])
    assert earlier.warnings == [
        "⚠️ Conflicts with another result (memory 3, newer): one negates the other"
    ]
    assert later.conflicts == [{"memory_id": 9, "newer_id": 3, "reason": "one negates the other"}]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("2026-03-02T09:00:00+00:00", "2026-03-02T10:00:00+01:00"),  # the same instant
        (None, "2026-03-02T09:00:00+00:00"),  # no date to compare
    ],
)
def test_a_tie_goes_to_the_larger_id(first, second):
    a = hit(5, "The project uses PostgreSQL", first)
    b = hit(4, "The project does not use PostgreSQL", second)
    interference([a, b])
    assert [c["newer_id"] for c in a.conflicts + b.conflicts] == [5, 5]
    assert b.warnings[0].startswith("⚠️ Conflicts with another result (memory 5, newer)")


def test_a_result_lists_every_result_it_contradicts():
    first = hit(1, "The release deadline is May 5", "2026-03-01T09:00:00+00:00", "release")
    second = hit(2, "The release deadline is May 12", "2026-03-02T09:00:00+00:00", "release")
    third = hit(3, "The release deadline is May 19", "2026-03-03T09:00:00+00:00", "release")
    interference([first, second, third])
    assert [(c["memory_id"], c["newer_id"]) for c in second.conflicts] == [(1, 2), (3, 3)]
    assert len(second.warnings) == 2


def test_unrelated_results_have_no_conflicts():
    a = hit(1, "We do not have a cat", "2026-03-01T09:00:00+00:00")
    b = hit(2, "The quarterly report is late", "2026-03-02T09:00:00+00:00")
    interference([a, b])
    assert a.conflicts == b.conflicts == [] and a.warnings == b.warnings == []
    assert a.to_dict()["conflicts"] == []


@pytest.mark.django_db
def test_recall_names_the_newer_of_two_stored_facts(recall, make_memory):
    # Worded apart: near-duplicates would come back as one result.
    now = timezone.now()
    old = make_memory(
        "The release deadline is May 5", topic="release", created_at=now - timedelta(1)
    )
    new = make_memory("Release deadline moved: May 12 now", topic="release", created_at=now)
    results = {hit["memory_id"]: hit for hit in recall("release deadline").to_dict()["results"]}
    assert results[old.pk]["warnings"] == [
        f"⚠️ Conflicts with another result (memory {new.pk}, newer): different numbers"
    ]
    assert results[new.pk]["conflicts"] == [
        {"memory_id": old.pk, "newer_id": new.pk, "reason": "different numbers"}
    ]
