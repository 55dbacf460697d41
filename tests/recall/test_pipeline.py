"""recall_run end to end: short-circuit, filters and ceilings, ranking, enrichment, tracking."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories import services
from memories.models import (
    Association,
    Classification,
    Consolidation,
    Entity,
    Memory,
    MemoryEvent,
    Namespace,
    Relation,
)
from memories.services import NEAR_DUPLICATE
from recall.embeddings import embed_pending
from recall.enrichment import interference
from recall.models import RecallEvent
from recall.pipeline import RecallConfig
from recall.services import recall_run
from tests.recall.fixtures.helpers import ids, requires_numpy

pytestmark = pytest.mark.django_db


C = Classification


def _link(source, target, weight=1.0):
    return Association.objects.create(
        namespace=source.namespace, source=source, target=target, weight=weight
    )


# --- Short-circuit -------------------------------------------------------------------------


@requires_numpy
def test_it_skips_se_and_ss_when_full_text_fills_the_limit(recall, make_memory, settings):
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "fake"
    for n in range(3):
        make_memory(f"Invoice {n} for the design agency")
    result = recall("invoice", limit=3)
    assert result.stage_timings["Se"]["skipped"] is True
    assert result.stage_timings["Se"]["reason"] == "Sf filled limit"
    assert result.stage_timings["Ss"]["skipped"] is True
    assert result.stage_timings["S6"]["skipped"] is False
    assert result.stage_timings["S8"]["skipped"] is False


@requires_numpy
def test_it_runs_se_and_ss_when_full_text_is_short(recall, make_memory, settings):
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "fake"
    settings.EMBEDDING_SIMILARITY_THRESHOLD = 0.2
    make_memory("Invoice for the design agency")
    car = make_memory("The car is parked outside")
    embed_pending(provider="fake")
    result = recall("invoice automobile", limit=3)
    assert result.stage_timings["Se"]["skipped"] is False
    assert result.stage_timings["Ss"]["skipped"] is False
    assert car.pk in ids(result)


def test_it_reports_every_stage_with_time_and_hits(recall, make_memory):
    make_memory("Budget review on Thursday")
    result = recall("budget")
    assert list(result.stage_timings) == ["Sf", "Se", "Ss", "S6", "S8"]
    for timing in result.stage_timings.values():
        assert set(timing) >= {"ms", "hits", "skipped", "reason"}


def test_it_runs_only_the_requested_stages(recall, make_memory):
    make_memory("Budget review on Thursday")
    result = recall("budget", stages=["S6", "S8"])
    assert result.results == []
    assert result.stage_timings["Sf"]["reason"] == "not requested"


# --- Filters and ceilings never leak ------------------------------------------------------


def test_it_never_returns_another_namespace(recall, make_memory, user):
    other = services.namespace_create(owner=user, name="Home")
    make_memory("Secret recipe for lasagna", namespace=other)
    mine = make_memory("Lasagna night on Friday")
    assert ids(recall("lasagna recipe")) == [mine.pk]


def test_it_searches_every_namespace_it_is_given(make_memory, namespace, user):
    other = services.namespace_create(owner=user, name="Home")
    a = make_memory("Lasagna night on Friday")
    b = make_memory("Lasagna recipe from grandma", namespace=other)
    result = recall_run(
        namespaces=[namespace, other], ceiling=C.RESTRICTED, query="lasagna", track=False
    )
    assert set(ids(result)) == {a.pk, b.pk}
    assert {hit.namespace for hit in result.results} == {namespace.slug, other.slug}


def test_it_hides_memories_above_the_ceiling(recall, make_memory):
    public = make_memory("Salary bands are published", classification=C.PUBLIC)
    make_memory("Salary of the CEO is confidential", classification=C.CONFIDENTIAL)
    assert ids(recall("salary", ceiling=C.INTERNAL)) == [public.pk]


@requires_numpy
def test_it_hides_above_ceiling_memories_from_every_memory_stage(recall, make_memory, settings):
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "fake"
    settings.EMBEDDING_SIMILARITY_THRESHOLD = 0.1
    text = "the launch code for the vault is kept in the red binder on the shelf"
    make_memory(text, classification=C.RESTRICTED)
    embed_pending(provider="fake")
    for stage in ("Sf", "Se", "Ss"):
        assert ids(recall(text, ceiling=C.CONFIDENTIAL, stages=[stage])) == []


def test_it_never_reaches_above_the_ceiling_through_associations(recall, make_memory):
    hit = make_memory("Quarterly planning notes", classification=C.PUBLIC)
    secret = make_memory("Layoff list draft", classification=C.RESTRICTED)
    _link(hit, secret)
    assert ids(recall("quarterly planning", ceiling=C.INTERNAL)) == [hit.pk]


def test_it_hides_digests_quoting_memories_above_the_ceiling(recall, namespace, make_memory):
    secret = make_memory("Merger talks with Acme", classification=C.RESTRICTED)
    Consolidation.objects.create(
        namespace=namespace,
        period="weekly",
        period_start=date(2026, 3, 2),
        text="Merger talks with Acme progressed.",
        memory_ids=[secret.pk],
    )
    assert recall("merger", ceiling=C.INTERNAL, stages=["S6"]).digests == []
    assert len(recall("merger", ceiling=C.RESTRICTED, stages=["S6"]).digests) == 1


def test_it_hides_relations_drawn_from_memories_above_the_ceiling(recall, namespace, make_memory):
    alice = Entity.objects.create(namespace=namespace, name="alice")
    bob = Entity.objects.create(namespace=namespace, name="bob")
    secret = make_memory("Alice is investigating Bob", classification=C.RESTRICTED)
    Relation.objects.create(
        namespace=namespace, subject=alice, predicate="investigates", object=bob, memory=secret
    )
    assert recall("alice", ceiling=C.INTERNAL, stages=["S8"]).relations == []
    assert len(recall("alice", ceiling=C.RESTRICTED, stages=["S8"]).relations) == 1


def test_it_filters_by_topic(recall, make_memory):
    work = make_memory("Review the budget", topic="work")
    make_memory("Budget for the holiday", topic="travel")
    assert ids(recall("budget", topic="work")) == [work.pk]


def test_it_filters_by_tier(recall, make_memory):
    core = make_memory("The office door code changes monthly", tier="core")
    make_memory("The door squeaks", tier="short_term")
    assert ids(recall("door", tier="core")) == [core.pk]


def test_it_filters_by_time_range(recall, make_memory):
    now = timezone.now()
    old = make_memory("Dentist appointment booked", created_at=now - timedelta(days=30))
    new = make_memory("Dentist appointment moved", created_at=now - timedelta(days=2))
    assert ids(recall("dentist", time_start=now - timedelta(days=7))) == [new.pk]
    assert ids(recall("dentist", time_end=now - timedelta(days=7))) == [old.pk]


def test_it_hides_expired_memories_unless_asked(recall, make_memory):
    now = timezone.now()
    expired = make_memory("Parking permit number 4411", expires_at=now - timedelta(days=1))
    assert ids(recall("parking permit")) == []
    assert ids(recall("parking permit", include_expired=True)) == [expired.pk]


def test_it_hides_forgotten_memories(recall, make_memory):
    memory = make_memory("Old wifi password")
    services.memory_forget(memory=memory, reason="rotated")
    assert ids(recall("wifi password")) == []


def test_it_reaches_cold_memories_only_through_associations(recall, make_memory):
    cold = make_memory("Rented the cabin at Lake Tahoe")
    Memory.objects.filter(pk=cold.pk).update(storage=Memory.Storage.COLD)
    assert ids(recall("cabin tahoe")) == []
    hot = make_memory("Ski trip planning for February")
    _link(hot, cold)
    result = recall("ski trip")
    assert ids(result) == [hot.pk, cold.pk]
    assert result.results[1].associative is True
    assert result.results[1].stages == ["association"]


# --- Ranking --------------------------------------------------------------------------------


def test_agent_memory_mode_weights_utility(make_memory, user):
    agent = services.namespace_create(
        owner=user, name="Agent", mode=Namespace.Mode.AGENT_MEMORY, dedupe="off"
    )
    low = make_memory("Retry the payment webhook", namespace=agent, utility=0.0)
    high = make_memory("Retry the payment webhook", namespace=agent, utility=1.0)
    result = recall_run(namespaces=[agent], ceiling=C.RESTRICTED, query="webhook", track=False)
    assert ids(result) == [high.pk, low.pk]
    assert agent.ranking_weights()["utility"] == 0.2


def test_it_uses_the_context_boost(recall, make_memory, namespace):
    namespace.dedupe = "off"  # one text under two topics: two memories
    namespace.save(update_fields=["dedupe"])
    a = make_memory("Standup notes", topic="work")
    b = make_memory("Standup notes", topic="home")
    result = recall("standup", context={"topic": "home"})
    assert ids(result)[0] == b.pk
    assert result.results[0].boosts["context"] == pytest.approx(0.03)
    assert a.pk in ids(result)


def test_it_adds_association_neighbours_as_associative_results(recall, make_memory):
    hit = make_memory("What time is the flight to Lisbon?")
    answer = make_memory("It leaves at 7:40 from gate 12")
    make_memory("Unrelated note about plants")
    _link(hit, answer)
    result = recall("flight lisbon")
    assert ids(result) == [hit.pk, answer.pk]
    assert result.results[1].associative
    assert result.results[1].boosts["association"] > 0


@pytest.mark.parametrize(("fusion", "penalised"), [("penalty", True), ("rrf", False)])
@requires_numpy
def test_both_fusion_methods_rank_confirmed_hits_first(
    recall, make_memory, settings, fusion, penalised
):
    """Each method ranks the hit both stages found first; only the penalty halves the hit
    full text found alone (tests/recall/test_fusion.py has the methods' own numbers)."""
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "fake"
    settings.EMBEDDING_SIMILARITY_THRESHOLD = 0.2
    settings.RECALL_FUSION = fusion
    both = make_memory("car insurance renewal")
    make_memory("insurance for the house")
    # Cosine 0.17 to the query with the fake embedder: below the threshold, so Sf's alone.
    text_only = make_memory(
        "boat insurance quote arrived yesterday via email from Lisbon broker office"
    )
    embed_pending(provider="fake")
    result = recall("car insurance", limit=5)
    assert ids(result)[0] == both.pk
    assert {"Sf", "Se"} <= set(result.results[0].stages)
    (alone,) = [hit for hit in result.results if hit.memory_id == text_only.pk]
    assert alone.stages == ["Sf"]
    assert ("cross_stage_penalty" in alone.boosts) is penalised


@requires_numpy
def test_penalty_fusion_halves_full_text_only_hits_when_embeddings_ran(
    recall, make_memory, settings
):
    settings.EMBEDDING_ENABLED = True
    settings.EMBEDDING_PROVIDER = "fake"
    settings.EMBEDDING_SIMILARITY_THRESHOLD = 0.99
    settings.RECALL_FUSION = "penalty"
    make_memory("car insurance renewal")
    embed_pending(provider="fake")
    result = recall("insurance", limit=5, stages=["Sf", "Se"])
    assert result.stage_timings["Se"]["skipped"] is False
    assert result.results[0].boosts["cross_stage_penalty"] == 0.5


def test_mmr_spreads_near_duplicates(namespace, make_memory):
    first = make_memory("deploy checklist: run migrations then restart the web workers")
    twin = make_memory("deploy checklist: run migrations then restart the web workers now")
    other = make_memory("deploy window is Tuesday morning")
    config = RecallConfig.from_settings(mmr_lambda=0.3, episode_boost=0.0, association_spread=0.0)
    result = recall_run(
        namespaces=[namespace],
        ceiling=C.RESTRICTED,
        query="deploy checklist migrations",
        track=False,
        config=config,
    )
    assert ids(result)[0] in {first.pk, twin.pk}
    assert ids(result)[1] == other.pk


def test_it_blends_in_memories_from_the_review_danger_zone(namespace, make_memory):
    now = timezone.now()
    fresh = [make_memory(f"Garden hose number {n} is green garden") for n in range(8)]
    # Decay 2^(-6/3) = 0.25: the middle of the danger zone.
    fading = make_memory("garden hose", created_at=now - timedelta(days=6))
    config = RecallConfig.from_settings(episode_boost=0.0, association_spread=0.0)
    result = recall_run(
        namespaces=[namespace],
        ceiling=C.RESTRICTED,
        query="garden hose",
        limit=5,
        track=False,
        now=now,
        config=config,
    )
    assert fading.pk in ids(result)
    assert [hit.review for hit in result.results if hit.memory_id == fading.pk] == [True]
    assert sum(1 for hit in result.results if hit.memory_id in {m.pk for m in fresh}) == 4


# --- Enrichment -----------------------------------------------------------------------------


def test_it_explains_each_result(recall, make_memory):
    make_memory(
        "Pay the electricity bill",
        keywords=["bills"],
        emotion_score=2.0,
        emotion_tags=["worry"],
        importance_flags=["deadline"],
    )
    make_memory("Pay the water bill")  # stored lists empty
    payload = recall("electricity bill", stages=["Sf"]).to_dict()
    hit = payload["results"][0]
    assert hit["metadata"]["emotion_tags"] == ["worry"]
    assert hit["metadata"]["importance_flags"] == ["deadline"]
    assert hit["metadata"]["keywords"] == ["bills"]
    other = payload["results"][1]
    assert (other["metadata"]["emotion_tags"], other["metadata"]["importance_flags"]) == ([], [])
    assert hit["explanation"]["stages"] == ["Sf"]
    assert hit["explanation"]["stage_scores"]["Sf"] > 0
    assert hit["explanation"]["boosts"]["emotion"] == pytest.approx(0.04)
    assert hit["explanation"]["boosts"]["keyword"] > 0
    assert set(hit["metadata"]) >= {
        "topic",
        "emotion_tags",
        "importance_flags",
        "confidence",
        "created_at",
    }


def test_it_builds_a_timeline_for_results_sharing_a_topic(recall, make_memory):
    now = timezone.now()
    first = make_memory("Kitchen renovation quote", topic="house", created_at=now - timedelta(3))
    second = make_memory("Kitchen renovation started", topic="house", created_at=now)
    result = recall("kitchen renovation")
    by_id = {hit.memory_id: hit for hit in result.results}
    line = [entry["memory_id"] for entry in by_id[second.pk].timeline]
    assert line == [first.pk, second.pk]
    assert by_id[first.pk].timeline[0]["current"] is True


def test_it_warns_about_results_that_contradict_each_other(recall, make_memory):
    make_memory("The project uses PostgreSQL for the main database")
    make_memory("The project does not use PostgreSQL for the main database")
    result = recall("project database postgresql")
    assert all(any("Conflicts" in w for w in hit.warnings) for hit in result.results)


def test_it_warns_about_different_numbers_for_the_same_fact(recall, make_memory):
    make_memory("The release deadline is May 5", topic="release")
    make_memory("The release deadline is May 12", topic="release")
    result = recall("release deadline")
    assert all(any("different numbers" in w for w in hit.warnings) for hit in result.results)


def test_interference_ignores_unrelated_results():
    class Hit:
        def __init__(self, memory_id, content):
            self.memory_id = memory_id
            self.content = content
            self.metadata = {"topic": ""}
            self.warnings = []

    a, b = Hit(1, "We do not have a cat"), Hit(2, "The quarterly report is late")
    interference([a, b])
    assert a.warnings == b.warnings == []


# --- Tracking and boosting ------------------------------------------------------------------


def test_it_boosts_stability_as_in_seed_001s_worked_example(recall, make_memory):
    now = timezone.now()
    direct = make_memory("Semantic note about tide tables")
    linked = make_memory("The beach path floods at noon")
    _link(direct, linked)
    Memory.objects.filter(pk__in=[direct.pk, linked.pk]).update(
        stability=0.3, last_accessed_at=now - timedelta(days=10)
    )
    result = recall("tide tables", track=True, now=now)
    assert ids(result) == [direct.pk, linked.pk]
    direct.refresh_from_db()
    linked.refresh_from_db()
    assert round(direct.stability, 3) == 0.443
    assert round(linked.stability, 3) == 0.343


def test_it_tracks_recalls(recall, make_memory):
    now = timezone.now()
    memory = make_memory("Passport renewal form")
    recall("passport", track=True, now=now, session_id="s-1")
    recall("passport", track=True, now=now + timedelta(hours=1), session_id="s-1")
    recall("passport", track=True, now=now + timedelta(hours=2), session_id="s-2")
    memory.refresh_from_db()
    assert memory.recall_count == 3
    assert memory.access_count == 3
    assert memory.use_count == 3
    assert memory.last_recalled_at == now + timedelta(hours=2)
    assert memory.last_accessed_at == now + timedelta(hours=2)
    assert memory.session_ids == ["s-1", "s-2"]
    assert len(memory.recall_timestamps) == 3


def test_it_keeps_the_last_20_recall_timestamps(recall, make_memory):
    now = timezone.now()
    memory = make_memory("Passport renewal form")
    old = [(now - timedelta(days=30 - n)).isoformat() for n in range(20)]
    Memory.objects.filter(pk=memory.pk).update(recall_timestamps=old)
    recall("passport", track=True, now=now)
    memory.refresh_from_db()
    assert memory.recall_timestamps == [*old[1:], now.isoformat()]


def test_it_does_not_track_when_asked_not_to(recall, make_memory):
    memory = make_memory("Passport renewal form")
    recall("passport", track=False)
    memory.refresh_from_db()
    assert (memory.recall_count, memory.access_count, memory.stability) == (0, 0, 0.0)


def test_tracking_writes_one_statement_per_kind_whatever_the_result_count(recall, make_memory):
    hubs = [make_memory(f"Fern watering schedule {n}") for n in range(12)]
    for hub in hubs:
        _link(hub, make_memory(f"Unrelated cactus {hub.pk}"))
    with CaptureQueriesContext(connection) as few:
        few_result = recall("fern watering", track=True, limit=4)
    with CaptureQueriesContext(connection) as many:
        many_result = recall("fern watering", track=True, limit=10)
    assert any(hit.associative for hit in few_result.results)
    assert len(many_result.results) > len(few_result.results)

    def updates(ctx):
        # On PostgreSQL the direct hits' UPDATE is the CTE of the use log's INSERT.
        return sum(1 for q in ctx.captured_queries if "UPDATE memories_memory" in q["sql"])

    assert updates(few) == updates(many) == 2
    assert len(many.captured_queries) == len(few.captured_queries)


def test_it_reactivates_cold_memories_reached_through_associations(recall, make_memory):
    hot = make_memory("Ski trip planning for February")
    cold = make_memory("Rented the cabin at Lake Tahoe")
    Memory.objects.filter(pk=cold.pk).update(storage=Memory.Storage.COLD)
    _link(hot, cold)
    recall("ski trip", track=True)
    cold.refresh_from_db()
    assert cold.storage == Memory.Storage.HOT
    assert MemoryEvent.objects.filter(memory=cold, kind=MemoryEvent.Kind.REACTIVATED).count() == 1


def test_it_records_a_recall_event_per_call(recall, make_memory, namespace):
    memory = make_memory("Passport renewal form")
    result = recall("passport", session_id="s-9")
    event = RecallEvent.objects.get(pk=result.event_id)
    assert event.namespace == namespace
    assert event.result_ids == [memory.pk]
    assert event.session_id == "s-9"
    assert set(event.stage_timings) == {"Sf", "Se", "Ss", "S6", "S8"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"query": "  "},
        {"limit": 0},
        {"limit": 101},
        {"stages": ["Sx"]},
        {"tier": "eternal"},
        {"context": {"hour": 24}},
    ],
)
def test_it_rejects_bad_input(namespace, kwargs):
    arguments = {"namespaces": [namespace], "ceiling": C.RESTRICTED, "query": "x", **kwargs}
    with pytest.raises(ValidationError):
        recall_run(**arguments)


@pytest.mark.parametrize("microsecond", [0, 1, 499_999, 999_999])
def test_results_keep_their_created_at_to_the_microsecond(recall, make_memory, microsecond):
    created = datetime(2026, 1, 31, 23, 59, 59, microsecond, tzinfo=UTC)
    memory = make_memory("Quarterly budget review", created_at=created)
    (hit,) = recall("quarterly budget").results
    assert hit.memory_id == memory.pk
    assert hit.to_dict()["metadata"]["created_at"] == created.isoformat()


# --- Dates in the query ----------------------------------------------------------------------


def test_a_date_in_the_query_favours_what_was_written_then(recall, make_memory):
    june = make_memory(
        "Booked the rooftop venue for the launch party",
        created_at=datetime(2023, 6, 3, 10, tzinfo=UTC),
    )
    march = make_memory(
        "Launch party venue: the venue we book for a launch party must seat two hundred",
        created_at=datetime(2023, 3, 9, 10, tzinfo=UTC),
    )
    assert len(ids(recall("What venue did we book for the launch party?"))) == 2
    # Whichever the words prefer, the date named decides.
    assert ids(recall("What venue did we book for the launch party in March 2023?"))[0] == march.pk
    dated = recall("What venue did we book for the launch party on 3 June, 2023?")
    assert ids(dated)[0] == june.pk
    explanation = dated.results[0].to_dict()["explanation"]
    assert explanation["boosts"]["temporal"] > 0
    assert "temporal" not in dated.results[1].to_dict()["explanation"]["boosts"]


def test_a_query_naming_only_a_date_returns_what_was_written_then(recall, make_memory):
    now = timezone.now()
    yesterday = make_memory("Sketched the new logo", created_at=now - timedelta(days=1))
    make_memory("Sketched the old logo", created_at=now - timedelta(days=20))
    result = recall("What happened yesterday?")  # "happened" matches nothing
    assert ids(result) == [yesterday.pk]
    assert result.stage_timings["Sf"]["hits"] == 1
    assert ids(recall("yesterday")) == [yesterday.pk]
    assert ids(recall("What happened on 1 January 1999?")) == []


def test_association_links_come_with_the_far_ends_rows_that_pass_the_filters(make_memory):
    """Spreading's one statement (recall.rows.association_links_with_rows): every link of
    the candidates within the ceiling, the rows of only those far ends a caller may be
    given, and the near-duplicate links of the candidates and of every far end."""
    from django.utils import timezone

    from recall.rows import association_links_with_rows, load_rows
    from recall.stages.filters import RecallFilters

    now = timezone.now()
    a = make_memory("Alpha note")
    e = make_memory("Echo note, a candidate too")
    b = make_memory("Bravo note")
    above = make_memory("Charlie note", classification=C.RESTRICTED)
    expired = make_memory("Delta note", expires_at=now - timedelta(days=1))
    twin = make_memory("Bravo note again")
    far = make_memory("Foxtrot note, two links away")
    for source, target in ((a, b), (above, a), (a, expired), (e, a), (b, e)):
        _link(source, target, weight=0.5)
    # Near-duplicates: of a candidate, of a far end (either direction), and two links away.
    for source, target in ((e, expired), (twin, b), (twin, far)):
        Association.objects.create(
            namespace=a.namespace, source=source, target=target, weight=0.9, kind=NEAR_DUPLICATE
        )
    filters = RecallFilters(namespace_ids=(a.namespace_id,), ceiling=C.INTERNAL, now=now)
    links, rows, near = association_links_with_rows(
        [a.pk, e.pk], filters, near_duplicate=NEAR_DUPLICATE
    )
    # The link to the restricted memory is as restricted as it (Association.classification):
    # above this caller's ceiling, it is not read at all.
    assert sorted(links) == sorted(
        [(s.pk, t.pk, 0.5) for s, t in ((a, b), (a, expired), (e, a), (b, e))]
        + [(e.pk, expired.pk, 0.9)]
    )
    assert set(rows) == {b.pk}
    assert rows[b.pk] == load_rows([b.pk], filters)[b.pk]
    # twin-far touches neither a candidate nor a far end: not read.
    assert near == {(e.pk, expired.pk), (twin.pk, b.pk)}


def test_far_ends_reached_by_spreading_are_collapsed_by_their_near_duplicate_links(
    recall, namespace, make_memory
):
    """Two memories no stage finds, both linked to a result and to each other as
    near-duplicates, are one associative result naming the other; one whose near-duplicate
    is outside the results names it only if the caller may see it."""
    namespace.dedupe = Namespace.Dedupe.OFF  # no text comparison: only the links group
    namespace.save(update_fields=["dedupe"])
    seed = make_memory("Kestrel migration counted over the ridge")
    first = make_memory("Roost survey at the north barn, first visit")
    second = make_memory("Roost survey at the north barn, second visit")
    lone = make_memory("Owl pellets gathered by the silo")
    shown = make_memory("Owl pellets gathered near the silo")
    hidden = make_memory("Owl pellets gathered at the silo", classification=C.RESTRICTED)
    for target in (first, second, lone):
        _link(seed, target, weight=0.9)
    for source, target in ((first, second), (lone, shown), (hidden, lone)):
        Association.objects.create(
            namespace=namespace, source=source, target=target, weight=0.9, kind=NEAR_DUPLICATE
        )

    def results(ceiling):
        hits = recall("kestrel", ceiling=ceiling).results
        return {hit.memory_id: hit for hit in hits}

    everything = results(C.RESTRICTED)
    assert seed.pk in everything
    roost = [everything[i] for i in (first.pk, second.pk) if i in everything]
    assert len(roost) == 1 and roost[0].associative
    assert roost[0].duplicates == sorted({first.pk, second.pk} - {roost[0].memory_id})
    assert everything[lone.pk].duplicates == sorted([shown.pk, hidden.pk])
    internal = results(C.INTERNAL)
    assert internal[lone.pk].duplicates == [shown.pk]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's planner, without statistics")
def test_links_are_found_by_their_ends_not_by_scanning_the_namespace(make_memory):
    """Without ANALYZE's statistics SQLite would read the links by the namespace's index
    and scan every link of the namespace for each branch of spreading's statement; the
    statements of recall.rows must look the links up by their ends."""
    from django.utils import timezone

    from recall.rows import association_links, association_links_with_rows
    from recall.stages.filters import RecallFilters

    a, b, c = (make_memory(f"Note {n}") for n in "abc")
    _link(a, b)
    _link(c, a)
    filters = RecallFilters(
        namespace_ids=(a.namespace_id,), ceiling=C.RESTRICTED, now=timezone.now()
    )
    statements = []

    def keep(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        association_links_with_rows([a.pk], filters, near_duplicate=NEAR_DUPLICATE)
        association_links([a.pk], filters.namespace_ids, filters.ceiling, kind=NEAR_DUPLICATE)
    assert len(statements) == 2
    for sql, params in statements:
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            plan = [row[3] for row in cursor.fetchall()]
        searches = [step for step in plan if "memories_association" in step or " d " in step]
        assert searches and all("namespace_id" not in step for step in searches), plan
        assert all("(source_id=?)" in s or "(target_id=?)" in s for s in searches), plan
