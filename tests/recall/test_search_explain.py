"""recall.explain: what the search page says about a result, without a database."""

from __future__ import annotations

from datetime import date

import pytest

from memories.consolidation import digest_text
from recall.explain import (
    EXACT,
    FORM,
    FUZZY_CEILING,
    PART,
    RELEVANCE_FLOOR,
    TRIGRAM,
    TYPO,
    association_relevance,
    best_matches,
    digest_parts,
    digest_reason,
    edit_distance,
    excerpt,
    explain_digests,
    explain_hits,
    highlight,
    match_word,
    relevance,
    relevance_help,
)
from recall.pipeline import RecallHit
from recall.stages.digests import DigestHit

# --- One word against one word ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("term", "word", "kind"),
    [
        ("kyoto", "kyoto", EXACT),
        ("database", "databases", FORM),
        ("studied", "studying", FORM),
        ("running", "run", FORM),
        ("kyot", "kyoto", PART),
        ("memory", "maxmemory", PART),
        ("fushini", "fushimi", TYPO),
        ("kyotp", "kyoto", TYPO),
        ("postgrsql", "postgresql", TYPO),
        ("teh", "the", None),  # too short for a typo
        ("pythno", "python", TYPO),  # two letters swapped count as one
        ("lisbn", "lisbon", TYPO),
        ("kubrnetis", "kubernetes", TYPO),  # two letters off in a long word
        ("tomatoe", "tomato", FORM),  # a typo that reads as another form of the word
        ("pastries", "pasteries", TYPO),
        ("cat", "dog", None),
    ],
)
def test_it_names_how_a_query_word_meets_a_word(term, word, kind):
    found = match_word(term, word)
    assert (found[0] if found else None) == kind


def test_a_weak_trigram_match_is_its_own_kind():
    kind, quality, _apart, similarity = match_word("postgrs", "postgresql")
    assert kind == TRIGRAM and 0.45 <= similarity < 0.5
    assert quality == pytest.approx(FUZZY_CEILING * similarity)


def test_match_quality_puts_exact_above_a_typo_above_a_weak_trigram():
    exact = match_word("fushimi", "fushimi")[1]
    form = match_word("sourdoughs", "sourdough")[1]
    one_typo = match_word("fushini", "fushimi")[1]
    two_typos = match_word("kubrnetis", "kubernetes")[1]
    weak_trigram = match_word("postgrs", "postgresql")[1]
    assert exact == 1.0 and form == 0.9
    assert exact > form > one_typo > two_typos > weak_trigram
    assert one_typo == pytest.approx(0.8 * (1 - 1 / 7))
    # No fuzzy match ever reaches the ceiling, so a typo never reads as exact.
    assert match_word("kubernetesx", "kubernetes")[1] < FUZZY_CEILING


def test_edit_distance_counts_swaps_as_one_and_stops_past_the_cap():
    assert edit_distance("pythno", "python", 2) == 1
    assert edit_distance("kitten", "sitting", 3) == 3
    assert edit_distance("kitten", "sitting", 1) == 2  # cap + 1
    assert edit_distance("a", "abcdef", 2) == 3


# --- Relevance ---------------------------------------------------------------------------------


def test_relevance_is_the_mean_of_the_words_or_the_semantic_score():
    assert relevance([1.0, 0.0]) == 0.5
    assert relevance([]) == 0.0
    assert relevance([0.2], semantic=0.7) == 0.7
    assert relevance([1.0], semantic=0.3) == 1.0
    assert relevance([1.2], semantic=-1) == 1.0


def test_an_association_is_worth_the_spread_times_the_link_times_its_origin():
    assert association_relevance(weight=1.0, origin=1.0, spread=0.5) == 0.5
    assert association_relevance(weight=0.6, origin=1.0, spread=0.5) == pytest.approx(0.3)
    assert association_relevance(weight=0.6, origin=1.0, spread=0.5) < RELEVANCE_FLOOR


def test_the_help_names_the_floor_and_the_spread():
    text = relevance_help(0.5)
    assert "0.35" in text and "0.5 x link weight" in text and "1 exact" in text


# --- Texts -------------------------------------------------------------------------------------


def test_best_matches_prefers_the_content_and_names_other_sources():
    best = best_matches(
        ["kyoto", "travel", "schlussel"],
        [("", "Kyoto trip"), ("keywords", "travel kyoto"), ("original", "Der Schlüssel")],
    )
    assert best["kyoto"].source == "" and best["kyoto"].word == "Kyoto"
    assert best["travel"].describe() == "travel: exact (in its keywords)"
    assert best["schlussel"].word == "Schlüssel" and best["schlussel"].source == "original"
    assert best_matches(["absent"], [("", "Kyoto")]) == {"absent": None}


def test_each_kind_says_what_matched():
    words = dict.fromkeys(["kyoto", "database", "kyot", "fushini", "postgrs"])
    best = best_matches(list(words), [("", "Kyoto databases Kyoto Fushimi PostgreSQL")])
    assert [best[t].describe() for t in words] == [
        "kyoto: exact",
        "database ~ databases: another form of the word",
        "kyot is part of Kyoto",
        "fushini ≈ Fushimi, 1 letter apart",
        "postgrs ≈ PostgreSQL, trigram similarity 0.46",
    ]


def test_highlight_marks_fuzzy_matches_with_how_they_match():
    html = highlight("Kyoto: Fushimi Inari is quiet.", ["fushini", "inari"])
    assert html == (
        'Kyoto: <mark class="fuzzy" title="fushini ≈ Fushimi, 1 letter apart">Fushimi</mark> '
        "<mark>Inari</mark> is quiet."
    )


def test_highlight_marks_only_the_best_fuzzy_words_and_none_past_an_exact_one():
    assert highlight("kyoto kyotos kyot", ["kyoto"]) == (
        "<mark>kyoto</mark> <mark>kyotos</mark> kyot"
    )
    assert highlight("maxmemory and memoryless", ["memory"]).count("<mark") == 1


def test_highlight_escapes_the_text_and_the_title():
    html = highlight('<script>alert("x")</script> Fushimi"s', ["fushini", "script"])
    assert "<script>" not in html
    assert "&lt;<mark>script</mark>&gt;" in html
    assert 'title="fushini ≈ Fushimi, 1 letter apart"' in html


def test_excerpt_cuts_at_a_word():
    assert excerpt("Short one.") == "Short one."
    assert excerpt("Kyoto: Fushimi Inari is quiet before 7am; bring water", 30) == (
        "Kyoto: Fushimi Inari is quiet…"
    )


# --- Results -----------------------------------------------------------------------------------


def hit(memory_id, content, *, associative=False, stage_scores=None, keywords=()):
    return RecallHit(
        memory_id=memory_id,
        namespace="work",
        content=content,
        score=0.5,
        raw_score=1.0,
        stages=[] if associative else ["Sf"],
        stage_scores=stage_scores if stage_scores is not None else {"Sf": 2.0},
        boosts={},
        metadata={"keywords": list(keywords)},
        associative=associative,
    )


def test_a_typo_hit_is_explained_and_rated_below_the_exact_one():
    hits = [hit(1, "Kyoto: Fushimi Inari is quiet."), hit(2, "Lisbon: the Alfama at dusk.")]
    exact, typo = explain_hits(hits, terms=["inari", "alfamma"], originals={}, links=[], spread=0.5)
    assert exact.relevance == 0.5 and exact.missing == ["alfamma"]
    assert typo.relevance == pytest.approx(0.8 * (1 - 1 / 7) / 2)
    assert [m.describe() for m in typo.matches] == ["alfamma ≈ Alfama, 1 letter apart"]
    assert exact.shown and typo.shown


def test_semantic_stages_lift_relevance_and_say_so():
    [found] = explain_hits(
        [hit(1, "Nothing alike.", stage_scores={"Se": 0.81, "Ss": 0.7})],
        terms=["kyoto"],
        originals={},
        links=[],
        spread=0.5,
    )
    assert found.relevance == 0.81
    assert found.semantic == [
        "close in meaning (cosine 0.81)",
        "worded like the query (signature similarity 0.70)",
    ]


def test_associative_hits_show_above_the_floor_with_the_link_that_brought_them():
    hits = [
        hit(1, "Kyoto: Fushimi Inari is quiet before 7am; bring water."),
        hit(2, "Book the ryokan early.", associative=True),
        hit(3, "Passport renewal takes six weeks.", associative=True),
        hit(4, "Nothing links here.", associative=True),
    ]
    links = [(1, 2, 1.0, "next_turn"), (3, 1, 0.6, "related"), (2, 3, 1.0, "related")]
    _direct, turn, related, alone = explain_hits(
        hits, terms=["kyoto"], originals={}, links=links, spread=0.5
    )
    assert (turn.relevance, turn.shown) == (0.5, True)
    assert turn.link.memory_id == 1 and turn.link.kind == "next turn of the same session"
    assert turn.link.excerpt == "Kyoto: Fushimi Inari is quiet before 7am; bring…"
    # Linked only to another associative result, or to a hit through a weak link: hidden.
    assert related.relevance == pytest.approx(0.3) and not related.shown
    assert related.link.memory_id == 1
    assert (alone.relevance, alone.shown, alone.link) == (0.0, False, None)


def test_an_association_to_a_weak_match_stays_hidden():
    hits = [hit(1, "Redis maxmemory policy."), hit(2, "Staging box.", associative=True)]
    _direct, linked = explain_hits(
        hits, terms=["memory"], originals={}, links=[(1, 2, 1.0, "next_turn")], spread=0.5
    )
    assert linked.relevance < RELEVANCE_FLOOR and not linked.shown


# --- Digests -----------------------------------------------------------------------------------


def digest(text, topic="travel", memory_ids=(1,)):
    return DigestHit(
        consolidation_id=7,
        namespace_id=1,
        period="weekly",
        period_start="2026-11-16",
        topic=topic,
        text=text,
        score=0.5,
        memory_ids=list(memory_ids),
        content_hash="x",
    )


def test_digest_parts_split_what_the_template_adds_from_what_the_memories_say():
    text = digest_text(
        period="weekly",
        start=date(2026, 11, 16),
        topic="travel",
        total=1,
        items=[(14, "Kyoto: Fushimi Inari is quiet before 7am.", 1.2)],
        excerpt_chars=120,
    )
    header, _blank, bullet = text.split("\n")
    assert header == 'Weekly digest for the week of 2026-11-16 (2026-W47) on "travel": 1 memory.'
    assert digest_parts(header) == (header, "", "")
    assert digest_parts(bullet) == (
        "- ",
        "Kyoto: Fushimi Inari is quiet before 7am.",
        " (#14, score 1.20)",
    )
    assert digest_parts("Written by a person.") == ("", "Written by a person.", "")


def test_digests_matching_only_the_templates_words_are_hidden():
    header = 'Weekly digest for the week of 2026-11-16 (2026-W47) on "travel": 3 memories.'
    bullet = "- Kyoto: Fushimi Inari is quiet. (#14, score 1.20)"
    for query in (["memory"], ["score"], ["week"], ["digest"]):
        assert [
            d.shown for d in explain_digests([digest(header), digest(bullet)], terms=query)
        ] == [
            False,
            False,
        ]


def test_a_digest_says_what_it_is_of_and_highlights_what_matched():
    bullet = "- Kyoto: Fushimi Inari is quiet. (#14, score 1.20)"
    header = 'Weekly digest for the week of 2026-11-16 (2026-W47) on "travel": 3 memories.'
    quoted, about = explain_digests(
        [digest(bullet, memory_ids=(14, 15, 16)), digest(header, memory_ids=(14, 15, 16))],
        terms=["fushini"],
    )
    assert quoted.shown and quoted.relevance == pytest.approx(0.8 * (1 - 1 / 7))
    assert quoted.reason == "weekly digest of 3 memories about “travel”"
    assert '<mark class="fuzzy"' in quoted.text and quoted.text.endswith("(#14, score 1.20)")
    assert not about.shown
    [topic] = explain_digests([digest(header)], terms=["travel"])
    assert topic.shown and topic.matches[0].describe() == "travel: exact (its topic)"
    assert digest_reason("daily", 1, "") == "daily digest of 1 memory without a topic"
