"""Stage S6 (recall.stages.digests) on the engine the suite runs on."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memories import services
from memories.models import Classification, Consolidation

pytestmark = pytest.mark.django_db


def test_consolidation_stage_returns_matching_paragraphs_at_half_score(
    recall, namespace, make_memory
):
    memory = make_memory("We moved the database to SQLite", classification=Classification.PUBLIC)
    Consolidation.objects.create(
        namespace=namespace,
        period="weekly",
        period_start=date(2026, 3, 2),
        text="Team offsite planned.\n\nThe database was migrated to SQLite this week.",
        memory_ids=[memory.pk],
    )
    result = recall("database migration", stages=["S6"])
    assert [d.text for d in result.digests] == ["The database was migrated to SQLite this week."]
    assert result.digests[0].score == 0.5


def test_consolidation_stage_deduplicates_by_content_hash(recall, namespace):
    for topic in ("ops", "infra"):
        Consolidation.objects.create(
            namespace=namespace,
            period="daily",
            period_start=date(2026, 3, 2),
            topic=topic,
            text="Backups now run at 02:00 UTC.",
        )
    assert len(recall("backups", stages=["S6"]).digests) == 1


def test_consolidation_stage_matches_any_case_and_keeps_to_topic_time_and_namespace(
    recall, namespace, user
):
    other_namespace = services.namespace_create(owner=user, name="Home")

    def digest(start, topic="ops", text="Nightly BACKUPS moved to the new cluster.", ns=namespace):
        return Consolidation.objects.create(
            namespace=ns, period="daily", period_start=start, topic=topic, text=text
        )

    digest(date(2026, 3, 2))
    digest(date(2026, 3, 9), text="Backups were verified by restoring one.")
    digest(date(2026, 3, 3), topic="travel", text="Backups of the travel photos.")
    digest(date(2026, 3, 4), ns=other_namespace, text="Backups elsewhere.")
    digest(date(2026, 3, 5), text="Nothing about 50%_of anything.")

    def texts(**kwargs):
        return [d.text for d in recall("backups", stages=["S6"], **kwargs).digests]

    assert texts() == [  # newest first, any case, never another namespace's
        "Backups were verified by restoring one.",
        "Backups of the travel photos.",
        "Nightly BACKUPS moved to the new cluster.",
    ]
    assert texts(topic="ops") == [
        "Backups were verified by restoring one.",
        "Nightly BACKUPS moved to the new cluster.",
    ]
    assert texts(
        time_start=datetime(2026, 3, 3, tzinfo=UTC), time_end=datetime(2026, 3, 8, tzinfo=UTC)
    ) == ["Backups of the travel photos."]
