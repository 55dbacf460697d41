"""Recall-pipeline scoring (seed 002): the FTS hit score and the post-processing boosts.

Pure functions of plain values; the recall service reads settings and rows and passes
them in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memories.decay import require_finite
from recall.stages import FULL_TEXT

TIER_CORE = "core"

HOUR_BOOST = 0.02
WEEKDAY_BOOST = 0.015
WEEK_PART_BOOST = WEEKDAY_BOOST / 2
TOPIC_BOOST = 0.03
SPACING_WINDOW = 20


@dataclass(frozen=True)
class RecallScoringConfig:
    """The defaults are RECALL_DECAY_DAYS', RECALL_DECAY_FLOOR's and RECALL_EMOTION_BOOST's
    (config/settings.py reads them from here)."""

    decay_days: float = 365.0
    decay_floor: float = 0.3
    emotion_boost: float = 0.1

    def __post_init__(self) -> None:
        for name in ("decay_days", "decay_floor", "emotion_boost"):
            require_finite(name, getattr(self, name))


def fts_score(
    *,
    bm25: float,
    emotion_score: float,
    recall_count: int,
    relevance_score: float,
    trust: float,
    credibility: float,
    tier: str,
    age_days: float,
    config: RecallScoringConfig,
) -> float:
    """Seed 002's score for a full-text hit, term by term.

    (bm25 + 0.5 ln(1 + |e|)) * (1 + 0.1 recalls) * (1 + 0.2 if relevant)
    * (0.5 + 0.5 trust / 3) * (1.25 if credibility <= 2) * (1.3 if core)
    * max(floor, 1 - age / decay_days) * (1 + |e| * emotion_boost)

    bm25 must be "higher is better": SQLite's bm25() returns negative numbers where more
    negative is more relevant, so the caller passes -bm25(). Negative ages (clock skew)
    count as 0. credibility is taken literally from the seed: <= 2 earns the 1.25 factor.
    """
    # NaN would otherwise pass as a default: no relevance boost, no credibility factor,
    # and an age of 0 (brand new). One sum checks them all on the hot path (NaN and the
    # infinities survive addition); only a failing hit pays to find the culprit's name.
    if not math.isfinite(bm25 + emotion_score + relevance_score + trust + credibility + age_days):
        for name, value in (
            ("bm25", bm25),
            ("emotion_score", emotion_score),
            ("relevance_score", relevance_score),
            ("trust", trust),
            ("credibility", credibility),
            ("age_days", age_days),
        ):
            require_finite(name, value)
        raise ValueError("fts_score inputs must be finite numbers whose sum is finite too")
    emotion = abs(emotion_score)
    emotion_term = 0.5 * math.log1p(emotion)
    recall_boost = 0.1 * recall_count
    relevance_boost = 0.2 if relevance_score > 0 else 0.0
    trust_factor = 0.5 + 0.5 * (trust / 3)
    credibility_factor = 1.25 if credibility <= 2 else 1.0
    tier_boost = 1.3 if tier == TIER_CORE else 1.0
    age_term = max(config.decay_floor, 1 - max(0.0, age_days) / config.decay_days)
    recency_factor = age_term * (1 + emotion * config.emotion_boost)
    return (
        (bm25 + emotion_term)
        * (1 + recall_boost)
        * (1 + relevance_boost)
        * trust_factor
        * credibility_factor
        * tier_boost
        * recency_factor
    )


def hour_bucket(hour: int) -> str:
    """morning 5-11, afternoon 12-16, evening 17-21, night 22-4 (inclusive hours)."""
    if not 0 <= hour <= 23:
        raise ValueError(f"hour must be 0-23, got {hour}")
    if 5 <= hour <= 11:
        return "morning"
    if 12 <= hour <= 16:
        return "afternoon"
    if 17 <= hour <= 21:
        return "evening"
    return "night"


def _is_weekend(weekday: int) -> bool:
    return weekday >= 5


def context_boost(
    *,
    created_at: datetime,
    topic: str,
    context_hour: int | None,
    context_weekday: int | None,
    context_topic: str | None,
) -> float:
    """Additive boost for a memory made in the same context as the current conversation.

    +0.02 same hour bucket; +0.015 same weekday, else +0.0075 when both are weekdays or
    both weekend days; +0.03 same topic (case-insensitive, blanks never match).
    Weekdays use Python's numbering (Monday 0 ... Sunday 6) and created_at is read in its
    own time zone, so the caller converts it to the user's zone first.
    """
    boost = 0.0
    if context_hour is not None and hour_bucket(created_at.hour) == hour_bucket(context_hour):
        boost += HOUR_BOOST
    if context_weekday is not None:
        weekday = created_at.weekday()
        if weekday == context_weekday:
            boost += WEEKDAY_BOOST
        elif _is_weekend(weekday) == _is_weekend(context_weekday):
            boost += WEEK_PART_BOOST
    if context_topic and topic and topic.strip().casefold() == context_topic.strip().casefold():
        boost += TOPIC_BOOST
    return boost


def emotion_tiebreak(emotion_score: float) -> float:
    """|e| * 0.02, at most 0.10: enough to break ties, never to beat a relevance gap."""
    return min(0.10, abs(require_finite("emotion_score", emotion_score)) * 0.02)


def spacing_multiplier(recall_timestamps: Iterable[datetime]) -> float:
    """1.3 when the last 20 recalls averaged >= 7 days apart, 1.15 for >= 1 day, else 1.0."""
    recent = sorted(recall_timestamps)[-SPACING_WINDOW:]
    if len(recent) < 2:
        return 1.0
    average_days = (recent[-1] - recent[0]).total_seconds() / 86_400 / (len(recent) - 1)
    if average_days >= 7:
        return 1.3
    if average_days >= 1:
        return 1.15
    return 1.0


def cross_stage_penalty(stages: set[str], *, embeddings_available: bool) -> float:
    """0.5 for a hit found by full text alone while embeddings could have confirmed it.

    Only a hit whose stages are exactly {"Sf"} is penalised; any second stage (Se, or
    the Ss signature) counts as confirmation. Without embeddings there is nothing to
    confirm with, so no penalty.
    """
    if embeddings_available and stages == {FULL_TEXT}:
        return 0.5
    return 1.0


def reciprocal_rank_fusion(
    rankings: dict[str, list[int]],
    *,
    k: int = 60,
    weights: dict[str, float] | None = None,
) -> dict[int, float]:
    """Fuse ranked id lists: score(id) = sum over lists of weight / (k + rank), rank from 1.

    A list's missing weight is 1.0; an id repeated within one list counts at its best
    rank only. The result is ordered best first, ties in order of first appearance.
    """
    weights = weights or {}
    fused: dict[int, float] = {}
    for name, ids in rankings.items():
        weight = require_finite(f"weights[{name!r}]", weights.get(name, 1.0))
        seen: set[int] = set()
        for rank, item in enumerate(ids, start=1):
            if item in seen:
                continue
            seen.add(item)
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    order = sorted(fused.items(), key=lambda pair: -pair[1])
    return dict(order)
