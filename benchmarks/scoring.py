"""Microbenchmark of the pure scoring functions (`manage.py bench_scoring`); no database."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

from memories.decay import DecayParams, decay_score
from memories.signatures import hamming_similarity, simhash
from recall.mmr import mmr_rerank
from recall.scoring import RecallScoringConfig, fts_score
from review.schedulers import FSRSScheduler
from review.sm2 import SM2Config, SM2State, priority_score, sm2_update

TEXT_200 = (
    "The deployment pipeline builds the container, runs the migrations against a copy "
    "of production, and only then swaps traffic over; rollbacks reuse the previous image "
    "tag."
)
WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa")


def time_per_call(function: Callable[[], object], iterations: int) -> float:
    """Mean microseconds per call over `iterations` calls, after one warm-up call."""
    function()
    start = time.perf_counter()
    for _ in range(iterations):
        function()
    return (time.perf_counter() - start) / iterations * 1e6


def calls() -> dict[str, Callable[[], object]]:
    """Name -> zero-argument callable, each exercising one function on realistic input."""
    now = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    decay_params = DecayParams()
    sm2_config = SM2Config()
    sm2_state = SM2State(
        easiness=2.3, interval_days=6, repetitions=2, next_review=now - timedelta(days=3)
    )
    signature_a = simhash(TEXT_200)
    signature_b = simhash(TEXT_200.replace("rollbacks", "releases"))
    recall_config = RecallScoringConfig()
    items = [
        (i, 1.0 - i / 100, " ".join(WORDS[(i + j) % len(WORDS)] for j in range(12)))
        for i in range(50)
    ]
    fsrs = FSRSScheduler()
    reviewed = fsrs.grade(fsrs.initial_state(), 4, now=now)
    reviewed = fsrs.grade(reviewed, 4, now=reviewed.next_review)
    return {
        "decay_score": lambda: decay_score(
            use_count=3,
            last_used_at=now - timedelta(days=1),
            strength=1.5,
            now=now,
            params=decay_params,
        ),
        "sm2_update": lambda: sm2_update(sm2_state, 4, now=now, config=sm2_config),
        "priority_score": lambda: priority_score(sm2_state, now, config=sm2_config),
        "simhash (200 chars)": lambda: simhash(TEXT_200),
        "hamming_similarity": lambda: hamming_similarity(signature_a, signature_b),
        "fts_score": lambda: fts_score(
            bm25=4.2,
            emotion_score=1.5,
            recall_count=3,
            relevance_score=0.4,
            trust=2.0,
            credibility=2.0,
            tier="core",
            age_days=40.0,
            config=recall_config,
        ),
        "mmr_rerank (50 items)": lambda: mmr_rerank(items),
        "fsrs grade": lambda: fsrs.grade(reviewed, 4, now=reviewed.next_review),
    }


def measure(iterations: int) -> Iterator[tuple[str, float, int]]:
    """(name, microseconds per call, calls) of each function in turn, as it is measured;
    mmr_rerank is called a tenth as often."""
    for name, function in calls().items():
        runs = max(1, iterations // 10) if name.startswith("mmr") else iterations
        yield name, time_per_call(function, runs), runs
