"""Stage Sf (recall.stages.full_text) on the engine the suite runs on (CI runs both)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from config.db import is_postgres
from memories.models import Classification
from recall.stages.filters import RecallFilters
from recall.stages.full_text import full_text
from recall.stages.query import analyse_query
from tests.recall.fixtures.helpers import ids

pytestmark = pytest.mark.django_db


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
    # Case and accents do not count: query and stored text are folded alike.
    assert ids(recall("POSTGRSQL")) == [target.pk]


def test_it_matches_substrings(recall, make_memory):
    target = make_memory("Kubernetes cluster upgrade is scheduled")
    assert ids(recall("bernet")) == [target.pk]
    assert ids(recall("BERNÉT")) == [target.pk]
    accented = make_memory("Rendez-vous au Château Frontenac")
    assert ids(recall("CHATEA")) == [accented.pk]


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
    terms = analyse_query("standup pager")
    filters = RecallFilters(
        namespace_ids=(namespace.pk,), ceiling=Classification.RESTRICTED, now=rare.created_at
    )
    found = full_text(terms, filters, limit=10, candidate_cap=50, match_budget=5)
    assert found.matched_terms == ["pager"]
    assert found.dropped_terms == ["standup"]
    assert [hit[0] for hit in found.hits] == [rare.pk]


def test_namespace_memories_are_counted_in_document_frequency(make_memory, namespace):
    make_memory("alpha beta")
    make_memory("alpha gamma")
    filters = RecallFilters(
        namespace_ids=(namespace.pk,),
        ceiling=Classification.RESTRICTED,
        now=timezone.now(),
    )
    found = full_text(
        analyse_query("alpha gamma zzzq"),
        filters,
        limit=10,
        candidate_cap=10,
        match_budget=100,
    )
    assert found.document_frequency == {"alpha": 2, "gamma": 1, "zzzq": 0}
    assert found.unmatched_terms == ["zzzq"]


def _theirs(owner, texts: list[str]) -> None:
    """Another user's namespace holding `texts`, written after the caller's memories."""
    from memories import services

    theirs = services.namespace_create(owner=owner, name="Theirs")
    for text in texts:
        services.memory_create(namespace=theirs, content=text)


def _search(namespace, query: str, *, ceiling: int, budget: int = 100):
    filters = RecallFilters(namespace_ids=(namespace.pk,), ceiling=ceiling, now=timezone.now())
    return full_text(analyse_query(query), filters, limit=10, candidate_cap=10, match_budget=budget)


def test_words_are_counted_only_in_what_the_caller_may_see(
    user, other_user, namespace, make_memory
):
    """Sf's counts choose its words and its explanation names them: a word only memories
    above the ceiling, forgotten ones or another user's hold counts 0 and is never said to
    match (on SQLite the full-text table holds every namespace)."""
    from memories import services

    seen = make_memory("Quarterly planning with the vault team", classification=0)
    make_memory("Vault code hzq73b73432 is kept here", classification=3)
    gone = make_memory("Old vault code hzq73b73432", classification=0)
    services.memory_forget(memory=gone, reason="test")
    _theirs(other_user, [f"hzq73b73432 and quarterly {n}" for n in range(3)])

    found = _search(namespace, "hzq73b73432 quarterly vault", ceiling=Classification.PUBLIC)

    assert found.document_frequency == {"hzq73b73432": 0, "quarterly": 1, "vault": 1}
    assert found.unmatched_terms == ["hzq73b73432"]
    assert "hzq73b73432" not in found.matched_terms + found.dropped_terms
    assert [hit[0] for hit in found.hits] == [seen.pk]


def test_the_match_budget_is_spent_only_on_what_the_caller_may_see(
    user, other_user, namespace, make_memory
):
    """Another namespace's newer matches never use up the budget of rows Sf ranks."""
    mine = [make_memory(f"Lighthouse keeper log {n}") for n in range(3)]
    _theirs(other_user, [f"Lighthouse keeper diary {n}" for n in range(8)])

    found = _search(namespace, "lighthouse", ceiling=Classification.RESTRICTED, budget=4)

    assert sorted(hit[0] for hit in found.hits) == sorted(m.pk for m in mine)


def test_the_typo_scan_is_spent_only_on_what_the_caller_may_see(
    user, other_user, namespace, make_memory, monkeypatch
):
    """The same for the trigram step: a typo finds this namespace's memory however many
    newer matches another user's namespace holds."""
    from recall.stages import full_text as sf

    monkeypatch.setattr(sf, "TRIGRAM_SCAN", 3)
    mine = make_memory("Lighthouse keeper log")
    _theirs(other_user, [f"Lighthouse keeper diary {n}" for n in range(6)])

    found = _search(namespace, "lighthuose", ceiling=Classification.RESTRICTED)

    assert [hit[0] for hit in found.hits] == [mine.pk]


@pytest.mark.skipif(not is_postgres(), reason="SQLite's trigram table has one plan")
def test_typo_candidates_are_the_same_read_by_namespace_or_by_index(user, namespace, make_memory):
    from memories import services
    from recall.stages.full_text import _trigram

    other = services.namespace_create(owner=user, name="Elsewhere")
    for n in range(20):
        services.memory_create(namespace=other, content=f"PostgreSQL replica number {n}")
    for n in range(5):
        make_memory(f"We migrated database {n} to PostgreSQL last spring")
    make_memory("The garden needs watering twice a week")
    filters = RecallFilters(namespace_ids=(namespace.pk,), ceiling=3, now=timezone.now())

    by_namespace = _trigram(["postgrsql"], filters, "search_text", small=True)
    by_index = _trigram(["postgrsql"], filters, "search_text", small=False)

    assert sorted(by_namespace) == sorted(by_index)
    assert len(by_namespace) == 5


def test_typo_scores_match_each_text_word_by_word():
    """fuzzy_scores matches each distinct word once; the scores are those of matching every
    text's words one by one (word_match), typos, substrings and misses alike."""
    import random

    from recall.stages.full_text import FUZZY_SIMILARITY, fuzzy_scores, word_match

    rng = random.Random(7)
    vocabulary = [
        "".join(rng.choice("aeiouklmnrst") for _ in range(rng.randint(2, 11))) for _ in range(300)
    ]
    texts = [(n, " ".join(rng.sample(vocabulary, rng.randint(0, 12)))) for n in range(400)]
    texts.append((400, None))

    def by_text(terms: list[str]) -> list[tuple[int, float]]:
        scored = []
        for memory_id, text in texts:
            matches = [word_match(term, set((text or "").split())) for term in terms]
            good = [m for m in matches if m >= FUZZY_SIMILARITY]
            if good:
                scored.append((memory_id, sum(good) / len(terms)))
        return scored

    found = 0
    for _ in range(60):
        terms = []
        for word in rng.sample(vocabulary, rng.randint(1, 3)):
            at = rng.randrange(len(word))
            terms.append(word[:at] + rng.choice("xyz" + word) + word[at + 1 :])
        expected = by_text(terms)
        assert fuzzy_scores(terms, texts) == expected
        found += len(expected)
    assert found > 500  # the terms did match: typos, substrings and partial matches
