"""Fusion (seed 002): the memory stages' hits become candidates with one relevance in [0, 1].

Two methods (RECALL_FUSION, read by recall.pipeline.RecallConfig):
- penalty, the seed's: the best of a candidate's stage scores (Sf normalised by the top Sf
  score, Se the raw cosine, Ss the raw Hamming similarity), x0.5 for a hit found by full
  text alone when embeddings ran and could have confirmed it;
- rrf: reciprocal rank fusion of the stage lists, normalised by the top score.

Pure: plain values in, plain values out; no database, clock or settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from recall.scoring import (
    RecallScoringConfig,
    cross_stage_penalty,
    fts_score,
    reciprocal_rank_fusion,
)
from recall.stages import EMBEDDINGS, FULL_TEXT, SIGNATURES

PENALTY = "penalty"
RRF = "rrf"
METHODS = (PENALTY, RRF)


@dataclass
class Candidate:
    """A memory on its way to the results: its row, what found it and its scores so far.

    row holds the columns recall.rows.ROW_FIELDS names (times as Unix seconds).
    """

    memory_id: int
    row: dict[str, Any]
    stage_scores: dict[str, float] = field(default_factory=dict)
    sub: str = ""  # Sf's sub-query: stemmed, trigram or original
    relevance: float = 0.0
    associative: bool = False
    boosts: dict[str, float] = field(default_factory=dict)
    final: float = 0.0
    decay: float = 0.0


def score_full_text(
    hits: list[tuple[int, float, str]],
    rows: dict[int, dict[str, Any]],
    *,
    now: datetime,
    scoring: RecallScoringConfig,
) -> list[tuple[int, float, str]]:
    """Seed 002's FTS score per Sf hit (id, raw score, sub-query), best first.

    Trigram and original-language hits have a similarity in (0, 1], not a bm25; it is
    scaled by the weakest stemmed bm25 so a fuzzy hit ranks below every stemmed hit of
    equal standing. Hits without a row are dropped.
    """
    stemmed = [score for _id, score, sub in hits if sub == "stemmed" and score > 0]
    scale = min(stemmed) if stemmed else 1.0
    now_ts = now.timestamp()
    scored = []
    for memory_id, raw, sub in hits:
        row = rows.get(memory_id)
        if row is None:
            continue
        bm25 = max(raw, 0.0) if sub == "stemmed" else raw * scale
        score = fts_score(
            bm25=bm25,
            emotion_score=row["emotion_score"],
            recall_count=row["recall_count"],
            relevance_score=row["relevance_score"],
            trust=row["trust"],
            credibility=row["credibility"],
            tier=row["tier"],
            age_days=(now_ts - row["created_ts"]) / 86_400,
            config=scoring,
        )
        scored.append((memory_id, score, sub))
    scored.sort(key=lambda item: -item[1])
    return scored


def gather(
    full_text: list[tuple[int, float, str]],
    embeddings: list[tuple[int, float]],
    signatures: list[tuple[int, float]],
    rows: dict[int, dict[str, Any]],
) -> tuple[dict[int, Candidate], dict[str, list[int]]]:
    """Candidates from the scored Sf hits and the Se and Ss hits, and each stage's ranking.

    full_text is score_full_text's output; a Se or Ss hit without a row is dropped.
    """
    candidates: dict[int, Candidate] = {}
    for memory_id, score, sub in full_text:
        cand = candidates.setdefault(memory_id, Candidate(memory_id, rows[memory_id]))
        cand.stage_scores[FULL_TEXT] = score
        cand.sub = sub
    for stage, hits in ((EMBEDDINGS, embeddings), (SIGNATURES, signatures)):
        for memory_id, score in hits:
            if memory_id not in rows:
                continue
            cand = candidates.setdefault(memory_id, Candidate(memory_id, rows[memory_id]))
            cand.stage_scores[stage] = score
    rankings = {
        FULL_TEXT: [memory_id for memory_id, _score, _sub in full_text],
        EMBEDDINGS: [memory_id for memory_id, _score in embeddings if memory_id in candidates],
        SIGNATURES: [memory_id for memory_id, _score in signatures if memory_id in candidates],
    }
    return candidates, rankings


def fuse(
    candidates: dict[int, Candidate],
    rankings: dict[str, list[int]],
    *,
    method: str,
    rrf_k: int,
    embeddings_available: bool,
) -> None:
    """Set each candidate's relevance in [0, 1] by `method` ("rrf", else the penalty).

    The penalty, when it applies, is recorded in the candidate's boosts.
    """
    if not candidates:
        return
    if method == RRF:
        fused = reciprocal_rank_fusion({k: v for k, v in rankings.items() if v}, k=rrf_k)
        top = max(fused.values(), default=1.0) or 1.0
        for memory_id, cand in candidates.items():
            cand.relevance = fused.get(memory_id, 0.0) / top
        return
    sf_top = max((c.stage_scores.get(FULL_TEXT, 0.0) for c in candidates.values()), default=0.0)
    for cand in candidates.values():
        parts = []
        if FULL_TEXT in cand.stage_scores and sf_top > 0:
            parts.append(cand.stage_scores[FULL_TEXT] / sf_top)
        if EMBEDDINGS in cand.stage_scores:
            parts.append(cand.stage_scores[EMBEDDINGS])
        if SIGNATURES in cand.stage_scores:
            parts.append(cand.stage_scores[SIGNATURES])
        penalty = cross_stage_penalty(
            set(cand.stage_scores), embeddings_available=embeddings_available
        )
        if penalty != 1.0:
            cand.boosts["cross_stage_penalty"] = penalty
        cand.relevance = max(parts, default=0.0) * penalty
