"""recall.fusion without a database: stage hits to candidates, and the two fusion methods.

The candidates below are built so that the methods disagree: A is the top full-text hit
that no other stage found, B a weaker full-text hit that embeddings confirmed. The seed's
penalty keeps A first (half of the best score still beats B's cosine); reciprocal rank
fusion puts B first (two lists beat one). Each test fails under the other method.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recall.fusion import PENALTY, RRF, Candidate, fuse, gather, score_full_text
from recall.scoring import RecallScoringConfig

A, B = 1, 2
NOW = datetime(2025, 3, 5, 9, 30, tzinfo=UTC)


def neutral_row(**fields) -> dict:
    """A row whose FTS score is its bm25: fresh, trusted, no emotion, no recalls."""
    row = {
        "emotion_score": 0.0,
        "recall_count": 0,
        "relevance_score": 0.0,
        "trust": 3.0,
        "credibility": 3.0,
        "tier": "long_term",
        "created_ts": NOW.timestamp(),
    }
    return row | fields


def disagreeing() -> tuple[dict[int, Candidate], dict[str, list[int]]]:
    rows = {A: neutral_row(), B: neutral_row()}
    return gather([(A, 10.0, "stemmed"), (B, 1.0, "stemmed")], [(B, 0.3)], [], rows)


def by_relevance(candidates: dict[int, Candidate]) -> list[int]:
    return sorted(candidates, key=lambda i: -candidates[i].relevance)


# --- gather -------------------------------------------------------------------------------


def test_it_gathers_each_memory_once_with_the_scores_of_every_stage_that_found_it():
    rows = {A: neutral_row(), B: neutral_row(), 3: neutral_row()}
    candidates, rankings = gather(
        [(A, 4.0, "stemmed"), (B, 1.0, "trigram")], [(B, 0.8), (99, 0.9)], [(3, 0.7)], rows
    )
    assert {i: c.stage_scores for i, c in candidates.items()} == {
        A: {"Sf": 4.0},
        B: {"Sf": 1.0, "Se": 0.8},
        3: {"Ss": 0.7},
    }
    assert candidates[B].sub == "trigram"
    # 99 has no row (filtered out when rows were loaded): it is no candidate.
    assert rankings == {"Sf": [A, B], "Se": [B], "Ss": [3]}


# --- score_full_text ----------------------------------------------------------------------


def test_it_scales_fuzzy_hits_by_the_weakest_stemmed_score():
    rows = {i: neutral_row() for i in (1, 2, 3, 4)}
    hits = [(1, 4.0, "stemmed"), (2, 2.0, "stemmed"), (3, 0.5, "trigram"), (4, 1.0, "original")]
    scored = score_full_text(hits, rows, now=NOW, scoring=RecallScoringConfig())
    assert scored == [
        (1, pytest.approx(4.0), "stemmed"),
        (2, pytest.approx(2.0), "stemmed"),
        (4, pytest.approx(2.0), "original"),  # a full fuzzy match ties the weakest stemmed
        (3, pytest.approx(1.0), "trigram"),
    ]


def test_it_drops_full_text_hits_without_a_row_and_applies_the_seed_score():
    old = NOW.timestamp() - 73 * 86_400  # a fifth of RECALL_DECAY_DAYS: age factor 0.8
    rows = {1: neutral_row(created_ts=old, tier="core")}
    scored = score_full_text(
        [(1, 2.0, "stemmed"), (2, 5.0, "stemmed")], rows, now=NOW, scoring=RecallScoringConfig()
    )
    assert scored == [(1, pytest.approx(2.0 * 1.3 * 0.8), "stemmed")]


# --- fuse -----------------------------------------------------------------------------------


def test_penalty_fusion_keeps_a_lone_top_full_text_hit_above_a_weak_confirmed_one():
    candidates, rankings = disagreeing()
    fuse(candidates, rankings, method=PENALTY, rrf_k=60, embeddings_available=True)
    # A: 10/10 (Sf normalised by its top) x 0.5; B: max(1/10, cosine 0.3).
    assert candidates[A].relevance == pytest.approx(0.5)
    assert candidates[B].relevance == pytest.approx(0.3)
    assert candidates[A].boosts == {"cross_stage_penalty": 0.5}
    assert candidates[B].boosts == {}
    assert by_relevance(candidates) == [A, B]


def test_penalty_fusion_does_not_penalise_when_embeddings_did_not_run():
    candidates, rankings = disagreeing()
    fuse(candidates, rankings, method=PENALTY, rrf_k=60, embeddings_available=False)
    assert candidates[A].relevance == pytest.approx(1.0)
    assert candidates[A].boosts == {}


def test_rrf_fusion_puts_the_hit_found_by_two_stages_first():
    candidates, rankings = disagreeing()
    fuse(candidates, rankings, method=RRF, rrf_k=60, embeddings_available=True)
    # A: 1/61 (first in Sf); B: 1/62 + 1/61 (second in Sf, first in Se); B is the top.
    assert candidates[B].relevance == pytest.approx(1.0)
    assert candidates[A].relevance == pytest.approx((1 / 61) / (1 / 62 + 1 / 61))
    assert candidates[A].boosts == candidates[B].boosts == {}
    assert by_relevance(candidates) == [B, A]


def test_rrf_fusion_uses_its_k():
    candidates, rankings = disagreeing()
    fuse(candidates, rankings, method=RRF, rrf_k=1, embeddings_available=True)
    assert candidates[A].relevance == pytest.approx((1 / 2) / (1 / 3 + 1 / 2))


def test_fusion_of_no_candidates_does_nothing():
    for method in (PENALTY, RRF):
        fuse({}, {"Sf": [], "Se": [], "Ss": []}, method=method, rrf_k=60, embeddings_available=True)
