"""recall.ranking without a database: boosts, final scores, MMR and the review blend."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from memories.decay import DecayParams, Thresholds
from recall.fusion import Candidate
from recall.ranking import (
    add_association_support,
    association_support,
    episode_boost,
    final_scores,
    keyword_boost,
    normalise,
    rank,
    window_max,
)

# Wednesday 2025-03-05 23:30 UTC is already Thursday 00:30 in Paris.
WEDNESDAY_LATE_UTC = datetime(2025, 3, 5, 23, 30, tzinfo=UTC)
WEIGHTS = {"similarity": 0.5, "recency": 0.2, "utility": 0.2, "confidence": 0.1}


def candidate(memory_id: int, relevance: float = 0.0, **row) -> Candidate:
    base = {
        "namespace_id": 1,
        "content": f"memory number {memory_id}",
        "keywords": [],
        "topic": "",
        "created_ts": 0.0,
        "use_count": 0,
        "last_used_ts": WEDNESDAY_LATE_UTC.timestamp(),
        "strength": 1.0,
        "utility": 0.0,
        "confidence": 0.0,
        "emotion_score": 0.0,
        "recall_timestamps": [],
    }
    return Candidate(memory_id, base | row, relevance=relevance)


def by_id(*candidates: Candidate) -> dict[int, Candidate]:
    return {c.memory_id: c for c in candidates}


# --- relevance boosts ---------------------------------------------------------------------


def test_keyword_boost_matches_singular_and_plural_words():
    bills = candidate(1, 0.5, keywords=["Utility bills"])
    other = candidate(2, 0.5, keywords=["garden"])
    candidates = by_id(bills, other)
    keyword_boost(candidates, ["bill"], 0.3)
    assert bills.relevance == pytest.approx(0.65)
    assert bills.boosts == {"keyword": pytest.approx(0.15)}
    assert other.relevance == 0.5 and other.boosts == {}


def test_association_support_spreads_from_hits_in_both_directions():
    hit = candidate(1, 1.0)
    weak = candidate(2, 0.4)
    echo = candidate(4, 1.0)
    echo.associative = True  # an associative result lends nothing
    links = [(1, 2, 1.0), (3, 1, 0.5), (4, 5, 1.0)]
    support = association_support(by_id(hit, weak, echo), links, 0.5)
    assert support == pytest.approx({1: 0.2, 2: 0.5, 3: 0.25})


def test_association_support_adds_only_to_candidates_and_only_gains():
    hit = candidate(1, 1.0)
    add_association_support(by_id(hit), {1: 0.2, 3: 0.25, 5: 0.0})
    assert hit.relevance == pytest.approx(1.2)
    assert hit.boosts == {"association": 0.2}


def test_window_max_looks_back_over_the_window_only():
    assert window_max([0, 10, 20, 100], [1, 3, 2, 5], 15) == [1, 3, 3, 5]


def test_episode_boost_lends_the_best_relevance_within_the_window_of_one_namespace():
    strong = candidate(1, 1.0, created_ts=0.0)
    same_sitting = candidate(2, 0.2, created_ts=600.0)  # 10 minutes later
    later = candidate(3, 0.5, created_ts=7200.0)  # 2 hours later
    elsewhere = candidate(4, 0.1, created_ts=0.0, namespace_id=2)
    episode_boost(by_id(strong, same_sitting, later, elsewhere), 0.3, 30)
    assert [c.relevance for c in (strong, same_sitting, later, elsewhere)] == pytest.approx(
        [1.3, 0.5, 0.65, 0.13]
    )


def test_episode_boost_uses_the_session_when_there_is_one():
    # A conversation spread over days is one episode; two sessions at the same minute are
    # two; a memory without a session keeps the time window, among those without one.
    strong = candidate(1, 1.0, created_ts=0.0, session_id="chat")
    days_later = candidate(2, 0.2, created_ts=5 * 86_400.0, session_id="chat")
    same_minute = candidate(3, 0.1, created_ts=30.0, session_id="other")
    no_session = candidate(4, 0.4, created_ts=60.0)
    other_namespace = candidate(5, 0.1, created_ts=0.0, session_id="chat", namespace_id=2)
    episode_boost(by_id(strong, days_later, same_minute, no_session, other_namespace), 0.3, 30)
    assert [
        c.relevance for c in (strong, days_later, same_minute, no_session, other_namespace)
    ] == pytest.approx([1.3, 0.5, 0.13, 0.52, 0.13])


def test_normalise_scales_the_best_relevance_to_one():
    candidates = by_id(candidate(1, 2.0), candidate(2, 0.5))
    normalise(candidates)
    assert [c.relevance for c in candidates.values()] == [1.0, 0.25]
    zeros = by_id(candidate(1, 0.0))
    normalise(zeros)
    assert zeros[1].relevance == 0.0


# --- final scores ---------------------------------------------------------------------------


def test_final_score_weighs_relevance_recency_utility_and_confidence():
    cand = candidate(1, 0.6, utility=0.5, confidence=0.8)
    final_scores(
        by_id(cand),
        weights={1: WEIGHTS},
        decay_params={1: DecayParams()},
        context={},
        now=WEDNESDAY_LATE_UTC,
        tz=UTC,
    )
    assert cand.decay == pytest.approx(1.0)  # used just now, strength 1
    assert cand.final == pytest.approx(0.5 * 0.6 + 0.2 * 1.0 + 0.2 * 0.5 + 0.1 * 0.8)
    assert cand.boosts == {}


def test_context_is_read_in_the_given_time_zone_and_spacing_multiplies():
    cand = candidate(
        1,
        0.6,
        created_ts=WEDNESDAY_LATE_UTC.timestamp(),
        # Ten days apart; a naive stamp is read as UTC.
        recall_timestamps=["2025-01-01T00:00:00", "2025-01-11T00:00:00+00:00", "garbage"],
    )
    final_scores(
        by_id(cand),
        weights={1: WEIGHTS},
        decay_params={1: DecayParams()},
        context={"weekday": 3},  # Thursday
        now=WEDNESDAY_LATE_UTC,
        tz=ZoneInfo("Europe/Paris"),
    )
    assert cand.boosts == {"context": pytest.approx(0.015), "spacing": 1.3}
    assert cand.final == pytest.approx((0.5 * 0.6 + 0.2 + 0.015) * 1.3)


# --- order ----------------------------------------------------------------------------------


def ranked(relevance_of_the_fading_one: float) -> list[int]:
    candidates = by_id(
        *(candidate(i, 1.0, content=word) for i, word in enumerate("abcde", start=1)),
    )
    for cand, final in zip(candidates.values(), (0.9, 0.8, 0.7, 0.6, 0.5), strict=True):
        cand.final = final
        cand.decay = 1.0
    fading = candidates[5]
    fading.decay = 0.25  # in the review danger zone (0.15-0.35)
    fading.relevance = relevance_of_the_fading_one
    return rank(candidates, 4, mmr_lambda=1.0, review_blend=0.25, thresholds=Thresholds())


def test_the_review_blend_gives_a_slot_to_a_relevant_fading_memory():
    assert ranked(0.5) == [1, 2, 3, 5]


def test_the_review_blend_skips_fading_memories_that_are_not_about_the_query():
    assert ranked(0.1) == [1, 2, 3, 4]


def test_mmr_demotes_a_near_duplicate():
    first = candidate(1, content="deploy checklist run migrations restart workers")
    twin = candidate(2, content="deploy checklist run migrations restart workers now")
    other = candidate(3, content="deploy window is tuesday morning")
    for cand, final in ((first, 1.0), (twin, 0.95), (other, 0.7)):
        cand.final = final
    order = rank(
        by_id(first, twin, other), 3, mmr_lambda=0.3, review_blend=0.0, thresholds=Thresholds()
    )
    assert order == [1, 3, 2]
    assert rank({}, 3, mmr_lambda=0.7, review_blend=0.0, thresholds=Thresholds()) == []
