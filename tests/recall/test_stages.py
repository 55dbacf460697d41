"""Each recall stage on the engine the suite runs on (the CI runs SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memories import services
from memories.models import Classification, Consolidation, Entity, Relation
from recall import stages
from recall.embeddings import embed_pending
from tests.recall.fixtures.helpers import ids, make_recall, requires_numpy

pytestmark = pytest.mark.django_db


@pytest.fixture
def recall(namespace):
    return make_recall(namespace)


def test_it_finds_stemmed_keyword_matches(recall, make_memory):
    runner = make_memory("She was running three marathons every year")
    make_memory("The kitchen tap drips at night")
    result = recall("marathon runs")
    assert ids(result) == [runner.pk]
    assert result.results[0].stages == ["Sf"]
    assert result.stage_timings["Sf"]["hits"] == 1


def test_it_matches_keywords_as_well_as_content(recall, make_memory):
    tagged = make_memory("Notes from Tuesday", keywords=["vacuum", "postgresql"])
    assert ids(recall("vacuum")) == [tagged.pk]


def test_it_ranks_rare_words_above_common_ones(recall, make_memory):
    for n in range(6):
        make_memory(f"Project status meeting number {n}")
    rare = make_memory("Project kickoff in Reykjavik")
    assert ids(recall("project reykjavik"))[0] == rare.pk


def test_it_tolerates_typos(recall, make_memory):
    target = make_memory("We migrated the main database to PostgreSQL last spring")
    make_memory("The garden needs watering twice a week")
    result = recall("postgrsql")
    assert ids(result) == [target.pk]


def test_it_matches_substrings(recall, make_memory):
    target = make_memory("Kubernetes cluster upgrade is scheduled")
    assert ids(recall("bernet")) == [target.pk]


def test_it_folds_diacritics(recall, make_memory):
    target = make_memory("Meeting at Café Müller on Friday")
    assert ids(recall("cafe muller")) == [target.pk]
    accented = make_memory("The resume template is in the shared drive")
    assert accented.pk in ids(recall("résumé"))


def test_it_falls_back_to_the_original_language_text(recall, make_memory):
    target = make_memory(
        "The key is on the kitchen table",
        content_original="Der Schlüssel liegt auf dem Küchentisch",
        language="de",
    )
    make_memory("Groceries: milk, bread and eggs")
    result = recall("Schlüssel Küchentisch")
    assert ids(result) == [target.pk]


def test_it_skips_queries_made_only_of_common_words(recall, make_memory):
    make_memory("It is what it is and that was that")
    result = recall("what is the")
    assert ids(result) == []
    assert any("common words" in w for w in result.warnings)


def test_it_matches_only_the_rarest_terms_when_a_term_is_too_common(namespace, make_memory):
    for n in range(12):
        make_memory(f"Standup notes {n}: nothing new")
    rare = make_memory("Standup notes: the pager rotation changes")
    terms = stages.analyse_query("standup pager")
    filters = stages.RecallFilters(
        namespace_ids=(namespace.pk,), ceiling=Classification.RESTRICTED, now=rare.created_at
    )
    found = stages.full_text(terms, filters, limit=10, candidate_cap=50, match_budget=5)
    assert found.matched_terms == ["pager"]
    assert found.dropped_terms == ["standup"]
    assert [hit[0] for hit in found.hits] == [rare.pk]


def test_signature_stage_finds_near_duplicates(recall, make_memory):
    text = "the quarterly report is due on the first monday of april every year"
    target = make_memory(text)
    make_memory("Bananas ripen faster in a paper bag")
    result = recall(text.replace("quarterly", "annual"), stages=["Ss"])
    assert ids(result) == [target.pk]
    assert result.results[0].stages == ["Ss"]
    assert result.results[0].stage_scores["Ss"] >= 0.65


def test_signature_stage_returns_at_most_five(recall, make_memory):
    text = "deploy the billing service to production after the friday review meeting"
    for _ in range(8):
        make_memory(text)
    result = recall(text, stages=["Ss"])
    assert result.stage_timings["Ss"]["hits"] == 5


@requires_numpy
def test_embedding_stage_finds_what_full_text_cannot(recall, make_memory, settings):
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "fake"
    settings.EMBEDDING_SIMILARITY_THRESHOLD = 0.3
    car = make_memory("My car needs new tyres before winter")
    make_memory("The dog chases the postman")
    embed_pending(provider="fake")
    result = recall("automobile")
    assert ids(result) == [car.pk]
    assert result.results[0].stages == ["Se"]
    assert result.stage_timings["Se"]["skipped"] is False


@requires_numpy
def test_embedding_stage_is_skipped_with_a_warning_when_the_provider_is_down(
    recall, make_memory, settings
):
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "broken"
    make_memory("My car needs new tyres before winter")
    result = recall("automobile")
    assert result.stage_timings["Se"]["skipped"] is True
    assert any(w.startswith("Se skipped") for w in result.warnings)


@requires_numpy
def test_embedding_stage_is_skipped_when_the_provider_is_slow(recall, make_memory, settings):
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "slow"
    settings.EMBEDDING_QUERY_BUDGET_MS = 50
    make_memory("My car needs new tyres before winter")
    result = recall("automobile")
    assert result.stage_timings["Se"]["skipped"] is True
    assert "slower than 50 ms" in result.stage_timings["Se"]["reason"]
    assert result.duration_ms < 450


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


def test_entity_stage_returns_the_first_named_entitys_relations(recall, namespace, make_memory):
    alice = Entity.objects.create(namespace=namespace, name="alice", display_name="Alice")
    bob = Entity.objects.create(namespace=namespace, name="bob", display_name="Bob")
    project = Entity.objects.create(namespace=namespace, name="project-x", display_name="Project X")
    source = make_memory("Alice works with Bob on Project X")
    Relation.objects.create(
        namespace=namespace, subject=alice, predicate="works_with", object=bob, memory=source
    )
    Relation.objects.create(namespace=namespace, subject=bob, predicate="leads", object=project)
    result = recall("who does alice work with", stages=["S8"])
    assert [r.text for r in result.relations] == ["Alice —[works_with]→ Bob"]
    assert result.relations[0].score == pytest.approx(0.6)
    assert [r.text for r in recall("status of project x", stages=["S8"]).relations] == [
        "Bob —[leads]→ Project X"
    ]


def test_entity_stage_reports_no_match(recall):
    result = recall("nothing known here", stages=["S8"])
    assert result.relations == []
    assert result.stage_timings["S8"]["detail"] == "no entity match"


def test_entity_candidates_join_words_every_usual_way():
    names = stages.entity_candidates(["project", "x", "status"])
    assert names.index("project x") < names.index("project")
    assert {"project-x", "project_x", "projectx"} <= set(names)


def test_namespace_memories_are_counted_in_document_frequency(make_memory, namespace):
    make_memory("alpha beta")
    make_memory("alpha gamma")
    filters = stages.RecallFilters(
        namespace_ids=(namespace.pk,),
        ceiling=Classification.RESTRICTED,
        now=services.timezone.now(),
    )
    found = stages.full_text(
        stages.analyse_query("alpha gamma zzzq"),
        filters,
        limit=10,
        candidate_cap=10,
        match_budget=100,
    )
    assert found.document_frequency == {"alpha": 2, "gamma": 1, "zzzq": 0}
    assert found.unmatched_terms == ["zzzq"]


def test_in_list_selects_exactly_the_given_ids(make_memory):
    from django.db import connection

    kept = [make_memory(f"Memory number {n}") for n in range(5)]
    wanted = [kept[3].pk, kept[0].pk, kept[4].pk]
    where, params = stages.in_list("id", wanted)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM memories_memory WHERE {where}", params)
        found = sorted(row[0] for row in cursor.fetchall())
    assert found == sorted(wanted)
