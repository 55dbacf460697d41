from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from recall.scoring import (
    RecallScoringConfig,
    context_boost,
    cross_stage_penalty,
    emotion_tiebreak,
    fts_score,
    hour_bucket,
    reciprocal_rank_fusion,
    spacing_multiplier,
)

CONFIG = RecallScoringConfig()
# Wednesday 2025-03-05, 09:30: a weekday morning.
WEDNESDAY_MORNING = datetime(2025, 3, 5, 9, 30, tzinfo=UTC)
BASE = {
    "bm25": 2.0,
    "emotion_score": 0.0,
    "recall_count": 0,
    "relevance_score": 0.0,
    "trust": 3.0,
    "credibility": 3.0,
    "tier": "long_term",
    "age_days": 0.0,
    "config": CONFIG,
}


def test_it_returns_bm25_for_a_plain_fresh_trusted_hit():
    assert fts_score(**BASE) == pytest.approx(2.0)


def test_it_multiplies_every_seed_002_factor():
    score = fts_score(
        bm25=3.0,
        emotion_score=-2.0,
        recall_count=4,
        relevance_score=0.7,
        trust=1.5,
        credibility=2.0,
        tier="core",
        age_days=73.0,
        config=CONFIG,
    )

    expected = (
        (3.0 + 0.5 * math.log(3.0))
        * 1.4
        * 1.2
        * 0.75
        * 1.25
        * 1.3
        * (1 - 73 / 365)
        * (1 + 2.0 * 0.1)
    )
    assert score == pytest.approx(expected)


def test_it_floors_the_recency_factor():
    ancient = fts_score(**{**BASE, "age_days": 10_000})

    assert ancient == pytest.approx(2.0 * 0.3)


def test_it_treats_future_ages_as_brand_new():
    assert fts_score(**{**BASE, "age_days": -30}) == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("field", "value", "factor"),
    [
        ("relevance_score", 0.0, 1.0),
        ("relevance_score", 0.01, 1.2),
        ("credibility", 2.0, 1.25),
        ("credibility", 2.5, 1.0),
        ("tier", "core", 1.3),
        ("tier", "short_term", 1.0),
        ("trust", 0.0, 0.5),
        ("recall_count", 10, 2.0),
    ],
)
def test_it_applies_each_factor_at_its_boundary(field, value, factor):
    assert fts_score(**{**BASE, field: value}) == pytest.approx(2.0 * factor)


@pytest.mark.parametrize(
    ("hour", "bucket"),
    [(5, "morning"), (11, "morning"), (12, "afternoon"), (16, "afternoon"), (17, "evening"),
     (21, "evening"), (22, "night"), (0, "night"), (4, "night")],
)  # fmt: skip
def test_it_buckets_hours(hour, bucket):
    assert hour_bucket(hour) == bucket


def test_it_rejects_impossible_hours():
    with pytest.raises(ValueError):
        hour_bucket(24)


def test_it_adds_every_context_signal_that_matches():
    boost = context_boost(
        created_at=WEDNESDAY_MORNING,
        topic="Work",
        context_hour=7,
        context_weekday=2,
        context_topic="  work ",
    )

    assert boost == pytest.approx(0.02 + 0.015 + 0.03)


def test_it_gives_half_the_weekday_boost_for_the_same_part_of_the_week():
    thursday = context_boost(
        created_at=WEDNESDAY_MORNING,
        topic="",
        context_hour=None,
        context_weekday=3,
        context_topic=None,
    )
    saturday = context_boost(
        created_at=WEDNESDAY_MORNING,
        topic="",
        context_hour=None,
        context_weekday=5,
        context_topic=None,
    )
    sunday_memory = context_boost(
        created_at=WEDNESDAY_MORNING + timedelta(days=4),
        topic="",
        context_hour=None,
        context_weekday=5,
        context_topic=None,
    )

    assert thursday == pytest.approx(0.0075)
    assert saturday == 0.0
    assert sunday_memory == pytest.approx(0.0075)


def test_it_gives_no_context_boost_without_context():
    assert (
        context_boost(
            created_at=WEDNESDAY_MORNING,
            topic="work",
            context_hour=None,
            context_weekday=None,
            context_topic=None,
        )
        == 0.0
    )


def test_it_never_matches_blank_topics_or_other_buckets():
    boost = context_boost(
        created_at=WEDNESDAY_MORNING,
        topic="",
        context_hour=13,
        context_weekday=None,
        context_topic="",
    )

    assert boost == 0.0


@pytest.mark.parametrize(
    ("emotion", "boost"), [(0, 0.0), (2.5, 0.05), (-4, 0.08), (5, 0.10), (9, 0.10)]
)
def test_it_caps_the_emotion_tiebreak(emotion, boost):
    assert emotion_tiebreak(emotion) == pytest.approx(boost)


def test_it_rewards_widely_spaced_recalls():
    weekly = [WEDNESDAY_MORNING + timedelta(days=7 * i) for i in range(5)]
    daily = [WEDNESDAY_MORNING + timedelta(days=i) for i in range(5)]
    hourly = [WEDNESDAY_MORNING + timedelta(hours=i) for i in range(5)]

    assert spacing_multiplier(list(reversed(weekly))) == 1.3
    assert spacing_multiplier(daily) == 1.15
    assert spacing_multiplier(hourly) == 1.0
    assert spacing_multiplier(weekly[:1]) == 1.0
    assert spacing_multiplier([]) == 1.0


def test_it_only_looks_at_the_last_20_recalls():
    old_weekly = [WEDNESDAY_MORNING + timedelta(days=7 * i) for i in range(30)]
    start = old_weekly[-1] + timedelta(days=1)
    recent_hourly = [start + timedelta(hours=i) for i in range(20)]

    assert spacing_multiplier(old_weekly + recent_hourly) == 1.0


def test_it_penalises_full_text_hits_that_embeddings_did_not_confirm():
    assert cross_stage_penalty({"Sf"}, embeddings_available=True) == 0.5
    assert cross_stage_penalty({"Sf"}, embeddings_available=False) == 1.0
    assert cross_stage_penalty({"Sf", "Se"}, embeddings_available=True) == 1.0
    assert cross_stage_penalty({"Sf", "Ss"}, embeddings_available=True) == 1.0
    assert cross_stage_penalty({"Se"}, embeddings_available=True) == 1.0


def test_it_fuses_rankings_by_reciprocal_rank():
    fused = reciprocal_rank_fusion({"fts": [1, 2, 3], "embedding": [3, 1]})

    assert fused[1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[2] == pytest.approx(1 / 62)
    assert fused[3] == pytest.approx(1 / 63 + 1 / 61)
    assert list(fused) == [1, 3, 2]


def test_it_weights_rankings_and_ignores_repeats_within_one():
    fused = reciprocal_rank_fusion(
        {"fts": [1, 1, 2], "embedding": [2]}, k=10, weights={"embedding": 3.0}
    )

    assert fused == pytest.approx({1: 1 / 11, 2: 1 / 13 + 3 / 11})
    assert list(fused) == [2, 1]


# --- NaN and infinities are refused, not mapped to a plausible number (issue 13) -------

NOT_FINITE = [math.nan, math.inf, -math.inf]


@pytest.mark.parametrize(
    "field", ["bm25", "emotion_score", "relevance_score", "trust", "credibility", "age_days"]
)
@pytest.mark.parametrize("value", NOT_FINITE)
def test_it_refuses_a_non_finite_fts_input(field, value):
    # Before: a NaN age counted as brand new, a NaN credibility or relevance as no
    # factor, and the rest made the score itself NaN.
    with pytest.raises(ValueError, match=f"{field} must be a finite number"):
        fts_score(**{**BASE, field: value})


@pytest.mark.parametrize("value", NOT_FINITE)
def test_it_refuses_a_non_finite_emotion_tiebreak(value):
    # Before: min(0.10, NaN) gave the full 0.10 tie-break.
    with pytest.raises(ValueError, match="emotion_score must be a finite number"):
        emotion_tiebreak(value)


@pytest.mark.parametrize("field", ["decay_days", "decay_floor", "emotion_boost"])
@pytest.mark.parametrize("value", NOT_FINITE)
def test_it_refuses_a_non_finite_scoring_config(field, value):
    with pytest.raises(ValueError, match=f"{field} must be a finite number"):
        RecallScoringConfig(**{field: value})


@pytest.mark.parametrize("weight", NOT_FINITE)
def test_it_refuses_a_non_finite_fusion_weight(weight):
    with pytest.raises(ValueError, match=r"weights\['fts'\] must be a finite number"):
        reciprocal_rank_fusion({"fts": [1, 2]}, weights={"fts": weight})
