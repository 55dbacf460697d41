"""Stored document frequencies (recall.termstats): refreshed by the worker, read by Sf."""

from __future__ import annotations

import itertools

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.db import is_postgres
from memories import services
from memories.models import BackgroundRun, Classification
from recall import termstats
from recall.models import TermStat
from recall.stages.filters import RecallFilters
from recall.stages.full_text import document_frequencies
from recall.tasks import term_stats_refresh
from tests.recall.fixtures.helpers import ids, make_recall

pytestmark = pytest.mark.django_db
postgres_only = pytest.mark.skipif(
    not is_postgres(), reason="SQLite counts matches from FTS5 directly"
)


@pytest.fixture
def corpus(namespace, make_memory):
    for n in range(12):
        make_memory(f"Weekly status meeting number {n} about the roadmap")
    for n in range(3):
        make_memory(f"Deployment checklist {n} for the cluster")
    return make_memory("Kickoff trip to Reykjavik in spring")


@postgres_only
def test_refresh_stores_the_words_of_a_large_namespace_and_its_size(namespace, corpus):
    report = termstats.refresh(min_memories=10, min_documents=3)

    assert report.refreshed == [namespace.pk]
    rows = _documents(namespace)
    assert rows[""] == 16
    assert rows["meet"] == 12  # stemmed, as the tsvector holds it
    assert rows["checklist"] == 3
    assert "reykjavik" not in rows  # below min_documents: counted live


def _documents(namespace) -> dict[str, int]:
    """Each stored word's count over every level."""
    rows: dict[str, int] = {}
    for lexeme, documents in TermStat.objects.filter(namespace=namespace).values_list(
        "lexeme", "documents"
    ):
        rows[lexeme] = rows.get(lexeme, 0) + documents
    return rows


@postgres_only
def test_refresh_counts_each_level_of_live_memories_apart(namespace, corpus, make_memory):
    for n in range(4):
        make_memory(f"Merger codename Bluefin {n}", classification=Classification.RESTRICTED)
    forgotten = make_memory("Obsolete codename Bluefin", classification=Classification.PUBLIC)
    services.memory_forget(memory=forgotten, reason="test")

    termstats.refresh(min_memories=10, min_documents=3)

    levels = {
        (lexeme, level): documents
        for lexeme, level, documents in TermStat.objects.filter(namespace=namespace).values_list(
            "lexeme", "classification", "documents"
        )
    }
    internal, restricted = Classification.INTERNAL, Classification.RESTRICTED
    assert levels[("", internal)] == 16 and levels[("", restricted)] == 4
    assert levels[("", Classification.PUBLIC)] == 0  # the forgotten one does not count
    assert levels[("bluefin", restricted)] == 4
    assert ("bluefin", Classification.PUBLIC) not in levels
    # A recall within a lower ceiling adds up only its levels: the word is unknown there
    # (counted live, where it is in nothing the caller may see) and the size is 16.
    assert termstats.lookup(["bluefin", "meeting"], (namespace.pk,), internal) == (
        {"meeting": 12},
        16,
    )
    assert termstats.lookup(["bluefin"], (namespace.pk,), restricted) == ({"bluefin": 4}, 20)


@postgres_only
def test_refresh_gives_the_planner_statistics_of_the_rows_it_wrote(namespace, corpus):
    def planner_rows():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT reltuples FROM pg_class WHERE relname = %s", [TermStat._meta.db_table]
            )
            return cursor.fetchone()[0]

    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {TermStat._meta.db_table}")  # empty: estimates of none
    assert planner_rows() <= 0

    termstats.refresh(min_memories=10, min_documents=3)

    assert planner_rows() == TermStat.objects.count() > 0


@postgres_only
def test_lookup_knows_stored_words_only_and_falls_back_without_statistics(namespace, corpus):
    assert termstats.lookup(["meeting"], (namespace.pk,), 3) == ({}, None)

    termstats.refresh(min_memories=10, min_documents=3)

    known, size = termstats.lookup(["meetings", "checklist", "reykjavik"], (namespace.pk,), 3)
    assert known == {"meetings": 12, "checklist": 3}
    assert size == 16


@postgres_only
def test_document_frequencies_are_the_same_from_statistics_and_live(namespace, corpus):
    filters = RecallFilters(namespace_ids=(namespace.pk,), ceiling=3, now=corpus.created_at)
    terms = ["meeting", "checklist", "reykjavik", "absent"]
    live = document_frequencies(terms, filters, cap=501)

    termstats.refresh(min_memories=10, min_documents=3)

    assert document_frequencies(terms, filters, cap=501) == live
    assert live == ({"meeting": 12, "checklist": 3, "reykjavik": 1, "absent": 0}, 16)


@postgres_only
def test_a_small_namespace_is_counted_from_its_rows_a_larger_one_from_the_index(
    user, namespace, corpus
):
    """Below n_cap memories the counts come from one pass over the namespace's own rows;
    above it from the index: the same figures, capped the same way."""
    other = services.namespace_create(owner=user, name="Elsewhere")
    for n in range(30):  # words of another namespace never count
        services.memory_create(namespace=other, content=f"Status meeting {n} and checklist")
    filters = RecallFilters(namespace_ids=(namespace.pk,), ceiling=3, now=corpus.created_at)
    terms = ["meeting", "checklist", "reykjavik", "absent"]
    with CaptureQueriesContext(connection) as scanned_queries:
        scanned = document_frequencies(terms, filters, cap=5, n_cap=16)
    with CaptureQueriesContext(connection) as indexed_queries:
        indexed = document_frequencies(terms, filters, cap=5, n_cap=15)

    assert scanned == ({"meeting": 5, "checklist": 3, "reykjavik": 1, "absent": 0}, 16)
    assert indexed == ({"meeting": 5, "checklist": 3, "reykjavik": 1, "absent": 0}, 15)
    assert ["MATERIALIZED" in q["sql"] for q in scanned_queries.captured_queries] == [
        False,  # the statistics' look-up
        True,
    ]
    assert ["MATERIALIZED" in q["sql"] for q in indexed_queries.captured_queries] == [
        False,
        True,  # the scan finds more than n_cap rows ...
        False,  # ... so the index counts
    ]


@postgres_only
def test_stemmed_ranking_is_the_same_read_by_namespace_or_by_index(user, namespace, corpus):
    from recall.stages import full_text as sf

    other = services.namespace_create(owner=user, name="Elsewhere")
    for n in range(30):
        services.memory_create(namespace=other, content=f"Status meeting {n} and checklist")
    filters = RecallFilters(namespace_ids=(namespace.pk,), ceiling=3, now=corpus.created_at)
    terms = ["meeting", "checklist", "reykjavik"]
    df = {"meeting": 12, "checklist": 3, "reykjavik": 1}

    def ranked(budget: int) -> list[tuple[int, float]]:
        # The namespace's 16 memories: read by namespace when fewer than the budget.
        with CaptureQueriesContext(connection) as captured:
            rows = sf._stemmed_postgres(terms, terms, df, 16, filters, 10, budget)
        assert ("MATERIALIZED" in captured.captured_queries[0]["sql"]) == (budget > 16)
        return [(memory_id, round(score, 9)) for memory_id, score, _row in rows]

    by_namespace, by_index = ranked(50), ranked(16)

    assert by_namespace == by_index
    assert len(by_namespace) == 10
    # Equal scores (the twelve alike meetings) come newest first.
    scores = [score for _, score in by_namespace]
    assert scores == sorted(scores, reverse=True)
    for (a, score_a), (b, score_b) in itertools.pairwise(by_namespace):
        assert score_a > score_b or a > b


@postgres_only
def test_recall_ranks_the_same_with_statistics(namespace, corpus):
    recall = make_recall(namespace)
    before = ids(recall("reykjavik meeting checklist"))

    termstats.refresh(min_memories=10, min_documents=3)

    assert ids(recall("reykjavik meeting checklist")) == before
    assert before[0] == corpus.pk


@postgres_only
def test_refresh_skips_fresh_namespaces_and_redoes_changed_ones(namespace, corpus, make_memory):
    termstats.refresh(min_memories=10, min_documents=3)
    make_memory("One more status meeting")  # 17 of 16: within 10 %

    again = termstats.refresh(min_memories=10, min_documents=3)
    assert again.refreshed == [] and again.skipped_fresh == 1

    make_memory("And another status meeting")  # 18 of 16: more than 10 %
    changed = termstats.refresh(min_memories=10, min_documents=3)
    assert changed.refreshed == [namespace.pk]
    assert _documents(namespace)["meet"] == 14


@postgres_only
def test_a_namespace_below_the_threshold_loses_its_statistics(namespace, corpus):
    termstats.refresh(min_memories=10, min_documents=3)

    termstats.refresh(min_memories=100, min_documents=3)

    assert not TermStat.objects.filter(namespace=namespace).exists()


@postgres_only
def test_statistics_of_one_namespace_never_count_for_another(user, namespace, corpus):
    other = services.namespace_create(owner=user, name="Other")
    services.memory_create(namespace=other, content="Meeting notes")
    termstats.refresh(min_memories=10, min_documents=3)

    # The other namespace has no statistics: nothing is known for the two together.
    assert termstats.lookup(["meeting"], (namespace.pk, other.pk), 3) == ({}, None)


def test_the_task_records_its_run(namespace, corpus, settings):
    settings.RECALL_TERM_STATS_MIN_MEMORIES = 10
    settings.RECALL_TERM_STATS_MIN_DOCUMENTS = 3

    counts = term_stats_refresh()

    run = BackgroundRun.objects.get(kind=BackgroundRun.Kind.TERM_STATS)
    assert run.status == BackgroundRun.Status.OK
    if is_postgres():
        assert counts["namespaces_refreshed"] == 1 and counts["words"] > 0
    else:
        assert counts == {"namespaces_refreshed": 0, "namespaces_fresh": 0, "words": 0}
