"""Seed 002's recall pipeline: stages, short-circuit, fusion, ranking, MMR, review blend.

Order of work for one query (docs/recall.md has the why of each step):

1. Se's query embedding starts in a thread (it overlaps Sf; discarded if Sf fills the limit).
2. Sf full text; if it returns >= limit hits, Se and Ss are skipped (short-circuit).
3. Se cosine search, Ss signature search; S6 digests and S8 relations always run.
4. Fusion of Sf/Se/Ss into one relevance in [0, 1]: the seed's cross-stage penalty or
   reciprocal rank fusion (RECALL_FUSION).
5. Relevance boosts from the candidates themselves: keyword field match, association
   spreading (neighbours of hits join as associative results) and episode coherence.
6. The namespace mode's weights (similarity, recency = decay score, utility, confidence),
   then context boost, emotion tie-breaker and spacing multiplier.
7. MMR (lambda 0.7, Jaccard on words), then the review blend (a share of the slots for
   memories in the decay danger zone).

Nothing here writes: tracking and the RecallEvent belong to recall.services.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import math
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.utils import timezone

from memories.decay import DecayParams, Thresholds, decay_score_after, in_danger_zone
from memories.models import Association, Memory, Namespace
from memories.text import words
from recall import stages
from recall.embeddings import EmbeddingUnavailable, embed_texts, get_provider
from recall.mmr import mmr_rerank
from recall.scoring import (
    RecallScoringConfig,
    context_boost,
    cross_stage_penalty,
    emotion_tiebreak,
    fts_score,
    reciprocal_rank_fusion,
    spacing_multiplier,
)

ALL_STAGES = ("Sf", "Se", "Ss", "S6", "S8")
MEMORY_STAGES = ("Sf", "Se", "Ss")
ASSOCIATION = "association"
REVIEW_MIN_RELEVANCE = 0.25  # a review-blend pick must still be about the query
MMR_POOL_MIN = 30
# Columns read for every candidate; JSON columns are decoded by _decode, times are epochs.
ROW_FIELDS = (
    "id",
    "namespace_id",
    "content",
    "keywords",
    "topic",
    "tier",
    "storage",
    "classification",
    "emotion_score",
    "confidence",
    "utility",
    "strength",
    "use_count",
    "last_used_ts",
    "recall_count",
    "recall_timestamps",
    "trust",
    "credibility",
    "relevance_score",
    "created_ts",
    "emotion_tags",
    "importance_flags",
)
_JSON_FIELDS = ("keywords", "recall_timestamps", "emotion_tags", "importance_flags")
# Times are read as Unix seconds: decoding a few hundred timestamps per query into aware
# datetimes cost more than any ranking step; the results' created_at is made from them.
_EPOCH_SQL = {
    "postgresql": "date_part('epoch', m.{})",
    # Whole seconds of the first 19 characters (strftime would round .9995 and up to the
    # next second), plus the ".ffffff" Django writes when there are microseconds: exact to
    # the microsecond, where julianday() would be off by tens of them.
    "sqlite": (
        "(CAST(strftime('%%s', substr(m.{0}, 1, 19)) AS INTEGER) + CAST(substr(m.{0}, 20) AS REAL))"
    ),
}
_EPOCH_FIELDS = {"last_used_ts": "last_used_at", "created_ts": "created_at"}


def _select_list() -> str:
    epoch = _EPOCH_SQL[connection.vendor]
    return ", ".join(
        epoch.format(_EPOCH_FIELDS[name]) if name in _EPOCH_FIELDS else f"m.{name}"
        for name in ROW_FIELDS
    )


_EXECUTOR = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="engram-se")


@dataclass(frozen=True)
class RecallConfig:
    """Everything the pipeline reads from settings, as plain values (see from_settings)."""

    fusion: str = "penalty"
    rrf_k: int = 60
    candidate_cap: int = 200
    match_budget: int = 2000
    mmr_lambda: float = 0.7
    keyword_boost: float = 0.3
    association_spread: float = 0.5
    episode_boost: float = 0.3
    episode_window_minutes: float = 30.0
    review_blend: float = 0.3
    thresholds: Thresholds = field(default_factory=Thresholds)
    scoring: RecallScoringConfig = field(default_factory=RecallScoringConfig)
    search_mode: str = "hybrid"
    embedding_enabled: bool = False
    embedding_provider: str = "local"
    embedding_threshold: float = 0.5
    embedding_budget_s: float = 0.25
    vector_rerank: int = 30
    signature_bits: int = 256
    signature_threshold: float = 0.65
    signature_cap: int = 5
    signature_scan_cap: int = 5_000
    # Seed 002's short-circuit; off only to measure what Se and Ss would add (eval_recall).
    short_circuit: bool = True

    @classmethod
    def from_settings(cls, **overrides: Any) -> RecallConfig:
        from django.conf import settings as s

        values = {
            "fusion": s.RECALL_FUSION,
            "rrf_k": s.RECALL_RRF_K,
            "candidate_cap": s.RECALL_CANDIDATE_CAP,
            "match_budget": s.RECALL_MATCH_BUDGET,
            "mmr_lambda": s.RECALL_MMR_LAMBDA,
            "keyword_boost": s.RECALL_KEYWORD_BOOST,
            "association_spread": s.RECALL_ASSOCIATION_SPREAD,
            "episode_boost": s.RECALL_EPISODE_BOOST,
            "episode_window_minutes": s.RECALL_EPISODE_WINDOW_MINUTES,
            "review_blend": s.REVIEW_BLEND_RATIO,
            "thresholds": Thresholds(
                forget=s.FORGET_THRESHOLD,
                danger_min=s.REVIEW_DANGER_ZONE_MIN,
                danger_max=s.REVIEW_DANGER_ZONE_MAX,
                promote=s.PROMOTE_THRESHOLD,
                promote_use_count=s.PROMOTE_USE_COUNT,
                promote_window_days=s.PROMOTE_TIME_WINDOW_DAYS,
            ),
            "scoring": RecallScoringConfig(
                decay_days=s.RECALL_DECAY_DAYS,
                decay_floor=s.RECALL_DECAY_FLOOR,
                emotion_boost=s.RECALL_EMOTION_BOOST,
            ),
            "search_mode": s.MEMORY_SEARCH_MODE,
            "embedding_enabled": s.EMBEDDING_ENABLED,
            "embedding_provider": s.EMBEDDING_PROVIDER,
            "embedding_threshold": s.EMBEDDING_SIMILARITY_THRESHOLD,
            "embedding_budget_s": s.EMBEDDING_QUERY_BUDGET_MS / 1000,
            "vector_rerank": s.RECALL_VECTOR_RERANK,
            "signature_bits": s.SIGNATURE_BITS,
            "signature_threshold": s.RECALL_SIGNATURE_THRESHOLD,
            "signature_cap": s.RECALL_SIGNATURE_CAP,
            "signature_scan_cap": s.RECALL_SIGNATURE_SCAN_CAP,
        }
        values.update(overrides)
        return cls(**values)


@dataclass
class RecallHit:
    """One memory in the results, with the explanation of how it got there."""

    memory_id: int
    namespace: str
    content: str
    score: float
    raw_score: float
    stages: list[str]
    stage_scores: dict[str, float]
    boosts: dict[str, float]
    metadata: dict[str, Any]
    associative: bool = False
    review: bool = False
    timeline: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cold: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "memory",
            "memory_id": self.memory_id,
            "namespace": self.namespace,
            "content": self.content,
            "score": round(self.score, 6),
            "raw_score": round(self.raw_score, 6),
            "stages": self.stages,
            "associative": self.associative,
            "review": self.review,
            "metadata": self.metadata,
            "timeline": self.timeline,
            "warnings": self.warnings,
            "explanation": {
                "stages": self.stages,
                "stage_scores": {k: round(v, 6) for k, v in self.stage_scores.items()},
                "raw_score": round(self.raw_score, 6),
                "final_score": round(self.score, 6),
                "boosts": {k: round(v, 6) for k, v in self.boosts.items()},
            },
        }


@dataclass
class RecallResult:
    query: str
    results: list[RecallHit]
    digests: list[stages.DigestHit]
    relations: list[stages.RelationHit]
    stage_timings: dict[str, dict[str, Any]]
    warnings: list[str]
    candidates: int = 0
    duration_ms: float = 0.0
    event_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "results": [hit.to_dict() for hit in self.results],
            "digests": [hit.to_dict() for hit in self.digests],
            "relations": [hit.to_dict() for hit in self.relations],
            "stage_timings": self.stage_timings,
            "warnings": self.warnings,
            "candidates": self.candidates,
            "duration_ms": round(self.duration_ms, 3),
            "event_id": self.event_id,
        }


@dataclass
class _Candidate:
    memory_id: int
    row: dict[str, Any]
    stage_scores: dict[str, float] = field(default_factory=dict)
    sub: str = ""
    relevance: float = 0.0
    associative: bool = False
    boosts: dict[str, float] = field(default_factory=dict)
    final: float = 0.0
    decay: float = 0.0


def _timing(
    ms: float = 0.0, hits: int = 0, *, skipped: bool = False, reason: str = "", detail: str = ""
) -> dict[str, Any]:
    return {
        "ms": round(ms, 3),
        "hits": hits,
        "skipped": skipped,
        "reason": reason,
        "detail": detail,
    }


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def active_stages(requested: list[str] | None, config: RecallConfig) -> list[str]:
    chosen = list(ALL_STAGES) if not requested else [s for s in ALL_STAGES if s in requested]
    if config.search_mode == "lexical":
        chosen = [s for s in chosen if s != "Se"]
    elif config.search_mode == "semantic":
        chosen = [s for s in chosen if s != "Sf"]
    return chosen


def run_pipeline(
    *,
    namespaces: list[Namespace],
    filters: stages.RecallFilters,
    query: str,
    limit: int,
    context: dict[str, Any] | None,
    requested_stages: list[str] | None,
    config: RecallConfig,
) -> RecallResult:
    """Run every stage and the ranking; returns results without writing anything."""
    started = time.perf_counter()
    now = filters.now
    terms = stages.analyse_query(query)
    wanted = active_stages(requested_stages, config)
    timings: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    ns_by_id = {ns.pk: ns for ns in namespaces}

    # Se starts first so the query embedding overlaps Sf.
    embed_future: concurrent.futures.Future | None = None
    provider = None
    se_started = time.perf_counter()
    if "Se" in wanted and config.embedding_enabled and query.strip():
        try:
            provider = get_provider(config.embedding_provider)
            embed_future = _EXECUTOR.submit(
                embed_texts,
                [query],
                kind="query",
                provider=provider,
                timeout=config.embedding_budget_s,
            )
        except EmbeddingUnavailable as exc:
            warnings.append(f"Se skipped: {exc}")
            timings["Se"] = _timing(skipped=True, reason=str(exc))

    # Sf
    full = stages.FullTextResult()
    if "Sf" in wanted:
        t0 = time.perf_counter()
        full = stages.full_text(
            terms,
            filters,
            limit=limit,
            candidate_cap=config.candidate_cap,
            match_budget=config.match_budget,
        )
        detail = ""
        if full.matched_terms:
            detail = "FTS matches on " + ", ".join(f'"{t}"' for t in full.matched_terms)
        if full.dropped_terms:
            detail += "; too common to match on: " + ", ".join(full.dropped_terms)
        if full.note:
            detail = full.note
        timings["Sf"] = _timing(_ms(t0), len(full.hits), detail=detail)
        if full.note == "only common words":
            warnings.append("The query has only common words; full-text search skipped them.")
    else:
        timings["Sf"] = _timing(skipped=True, reason="not requested")

    short_circuit = config.short_circuit and len(full.hits) >= limit
    candidates: dict[int, _Candidate] = {}
    sf_ids = [memory_id for memory_id, _score, _sub in full.hits]
    rows = _load_rows(sf_ids)

    # Se
    se_hits: list[tuple[int, float]] = []
    embeddings_available = False
    if "Se" not in wanted:
        timings.setdefault("Se", _timing(skipped=True, reason="not requested"))
    elif not config.embedding_enabled:
        timings["Se"] = _timing(skipped=True, reason="embeddings disabled")
    elif embed_future is not None and short_circuit:
        embed_future.cancel()  # discarded without awaiting
        timings["Se"] = _timing(skipped=True, reason="Sf filled limit")
    elif embed_future is not None:
        remaining = config.embedding_budget_s - (time.perf_counter() - se_started)
        try:
            vector = embed_future.result(timeout=max(0.0, remaining))[0]
            se_hits = stages.embedding_search(
                vector,
                filters,
                model=provider.model,
                threshold=config.embedding_threshold,
                limit=limit * 3,
                rerank=config.vector_rerank,
            )
            embeddings_available = True
            timings["Se"] = _timing(
                _ms(se_started), len(se_hits), detail="cosine similarity to query embedding"
            )
        except concurrent.futures.TimeoutError:
            embed_future.cancel()
            reason = f"embedding slower than {config.embedding_budget_s * 1000:.0f} ms"
            warnings.append(f"Se skipped: {reason}")
            timings["Se"] = _timing(_ms(se_started), skipped=True, reason=reason)
        except (EmbeddingUnavailable, ImportError) as exc:
            warnings.append(f"Se skipped: {exc}")
            timings["Se"] = _timing(_ms(se_started), skipped=True, reason=str(exc))

    # Ss
    ss_hits: list[tuple[int, float]] = []
    if "Ss" not in wanted:
        timings["Ss"] = _timing(skipped=True, reason="not requested")
    elif short_circuit:
        timings["Ss"] = _timing(skipped=True, reason="Sf filled limit")
    else:
        t0 = time.perf_counter()
        ss_hits = stages.signature_search(
            query,
            filters,
            bits=config.signature_bits,
            threshold=config.signature_threshold,
            cap=config.signature_cap,
            scan_cap=config.signature_scan_cap,
        )
        timings["Ss"] = _timing(_ms(t0), len(ss_hits), detail="SimHash Hamming similarity")

    extra_ids = [i for i, _ in se_hits + ss_hits if i not in rows]
    if extra_ids:
        rows.update(_load_rows(extra_ids))

    # Stage scores.
    sf_ranked = _score_full_text(full.hits, rows, now, config)
    for memory_id, score, sub in sf_ranked:
        cand = candidates.setdefault(memory_id, _Candidate(memory_id, rows[memory_id]))
        cand.stage_scores["Sf"] = score
        cand.sub = sub
    for stage_name, hits in (("Se", se_hits), ("Ss", ss_hits)):
        for memory_id, score in hits:
            if memory_id not in rows:
                continue
            cand = candidates.setdefault(memory_id, _Candidate(memory_id, rows[memory_id]))
            cand.stage_scores[stage_name] = score

    rankings = {
        "Sf": [memory_id for memory_id, _s, _sub in sf_ranked],
        "Se": [memory_id for memory_id, _s in se_hits if memory_id in candidates],
        "Ss": [memory_id for memory_id, _s in ss_hits if memory_id in candidates],
    }
    _fuse(candidates, rankings, config, embeddings_available=embeddings_available)
    _keyword_boost(candidates, terms.terms, config.keyword_boost)
    _associate(candidates, filters, config.association_spread)
    _episode_boost(candidates, config.episode_boost, config.episode_window_minutes)
    _normalise(candidates)
    _final_scores(candidates, ns_by_id, context or {}, now, config)

    ordered = _rank(candidates, limit, config)

    # S6 and S8 always run.
    digests: list[stages.DigestHit] = []
    if "S6" in wanted:
        t0 = time.perf_counter()
        rare_first = sorted(
            terms.terms, key=lambda t: full.document_frequency.get(t, 0) or math.inf
        )
        digests = stages.consolidation_search(terms, filters, rare_first=rare_first, limit=limit)
        detail = f'consolidation mentions "{digests[0].text[:60]}"' if digests else ""
        timings["S6"] = _timing(_ms(t0), len(digests), detail=detail)
    else:
        timings["S6"] = _timing(skipped=True, reason="not requested")
    relations: list[stages.RelationHit] = []
    if "S8" in wanted:
        t0 = time.perf_counter()
        entity, relations = stages.entity_search(terms, filters)
        detail = f"entity {entity}" if entity else "no entity match"
        timings["S8"] = _timing(_ms(t0), len(relations), detail=detail)
    else:
        timings["S8"] = _timing(skipped=True, reason="not requested")

    hits = [_to_hit(candidates[i], ns_by_id, config) for i in ordered]
    result = RecallResult(
        query=query,
        results=hits,
        digests=digests,
        relations=relations,
        stage_timings={name: timings[name] for name in ALL_STAGES if name in timings},
        warnings=warnings,
        candidates=len(candidates) + len(digests) + len(relations),
    )
    result.duration_ms = _ms(started)
    return result


def _load_rows(
    ids: list[int], filters: stages.RecallFilters | None = None
) -> dict[int, dict[str, Any]]:
    """Candidate rows by id in one raw query (optionally re-applying the filters, cold allowed).

    Raw SQL rather than .values(): on a few hundred candidates per query the ORM's
    per-value converters cost more than the search itself.
    """
    if not ids:
        return {}
    in_ids, params = stages.in_list("m.id", ids)
    sql = f"SELECT {_select_list()} FROM memories_memory m "
    sql += f"WHERE {in_ids}"
    if filters is not None:
        where, extra = filters.sql("m", cold=True)
        sql += f" AND {where}"
        params += extra
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    rows = {}
    for values in fetched:
        row = dict(zip(ROW_FIELDS, values, strict=True))
        _decode(row)
        rows[row["id"]] = row
    return rows


def _decode(row: dict[str, Any]) -> None:
    for name in _JSON_FIELDS:
        value = row[name]
        if isinstance(value, str | bytes):
            try:
                row[name] = json.loads(value) if value not in ("[]", b"[]") else []
            except ValueError:
                row[name] = []
        elif value is None:
            row[name] = []


def _datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _age_days(row: dict[str, Any], now: datetime) -> float:
    return (now.timestamp() - row["created_ts"]) / 86_400


def _score_full_text(
    hits: list[tuple[int, float, str]],
    rows: dict[int, dict[str, Any]],
    now: datetime,
    config: RecallConfig,
) -> list[tuple[int, float, str]]:
    """Seed 002's FTS score per hit, best first.

    Trigram and original-language hits have a similarity in (0, 1], not a bm25; it is
    scaled by the weakest stemmed bm25 so a fuzzy hit ranks below every stemmed hit of
    equal standing.
    """
    stemmed = [score for _id, score, sub in hits if sub == "stemmed" and score > 0]
    scale = min(stemmed) if stemmed else 1.0
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
            age_days=_age_days(row, now),
            config=config.scoring,
        )
        scored.append((memory_id, score, sub))
    scored.sort(key=lambda item: -item[1])
    return scored


def _fuse(
    candidates: dict[int, _Candidate],
    rankings: dict[str, list[int]],
    config: RecallConfig,
    *,
    embeddings_available: bool,
) -> None:
    """One relevance per candidate in [0, 1].

    penalty (seed 002): the best of the stage scores, Sf normalised by its top score, Se
    the raw cosine, Ss the raw Hamming similarity; x0.5 for Sf-only hits when Se ran.
    rrf: sum of 1 / (k + rank) over the stage lists, normalised by the top score.
    """
    if not candidates:
        return
    if config.fusion == "rrf":
        fused = reciprocal_rank_fusion({k: v for k, v in rankings.items() if v}, k=config.rrf_k)
        top = max(fused.values(), default=1.0) or 1.0
        for memory_id, cand in candidates.items():
            cand.relevance = fused.get(memory_id, 0.0) / top
        return
    sf_top = max((c.stage_scores.get("Sf", 0.0) for c in candidates.values()), default=0.0)
    for cand in candidates.values():
        parts = []
        if "Sf" in cand.stage_scores and sf_top > 0:
            parts.append(cand.stage_scores["Sf"] / sf_top)
        if "Se" in cand.stage_scores:
            parts.append(cand.stage_scores["Se"])
        if "Ss" in cand.stage_scores:
            parts.append(cand.stage_scores["Ss"])
        penalty = cross_stage_penalty(
            set(cand.stage_scores), embeddings_available=embeddings_available
        )
        if penalty != 1.0:
            cand.boosts["cross_stage_penalty"] = penalty
        cand.relevance = max(parts, default=0.0) * penalty


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@functools.lru_cache(maxsize=4096)
def _keyword_words(keyword: str) -> frozenset[str]:
    """A keyword's folded, singular words (keywords repeat across memories: cached)."""
    return frozenset(_singular(w) for w in words(keyword))


def _keyword_boost(candidates: dict[int, _Candidate], terms: list[str], boost: float) -> None:
    """x(1 + boost) for a memory whose keywords name a query word: keywords say what it is about."""
    if not boost or not terms:
        return
    wanted = {_singular(t) for t in terms}
    for cand in candidates.values():
        keywords = cand.row["keywords"] or []
        if not isinstance(keywords, list):
            continue
        if any(not wanted.isdisjoint(_keyword_words(k)) for k in keywords if isinstance(k, str)):
            gain = cand.relevance * boost
            cand.relevance += gain
            cand.boosts["keyword"] = gain


def _associate(
    candidates: dict[int, _Candidate], filters: stages.RecallFilters, spread: float
) -> None:
    """Spread relevance along association links (either direction), one hop.

    A hit gains spread x max(weight x neighbour's relevance) over its linked hits; a
    linked memory that no stage found joins as an associative result with that score,
    provided it passes every filter (cold storage allowed: it is reactivated if returned).
    """
    if not spread or not candidates:
        return
    links = _links(list(candidates), filters.namespace_ids)
    support: dict[int, float] = {}
    for source, target, weight in links:
        for here, there in ((source, target), (target, source)):
            origin = candidates.get(there)
            if origin is None or origin.associative:
                continue
            gain = spread * weight * origin.relevance
            if gain > support.get(here, 0.0):
                support[here] = gain
    new_ids = [i for i in support if i not in candidates]
    if new_ids:
        for row in _load_rows(new_ids, filters).values():
            candidates[row["id"]] = _Candidate(row["id"], row, associative=True)
    for memory_id, gain in support.items():
        cand = candidates.get(memory_id)
        if cand is None or gain <= 0:
            continue
        cand.relevance += gain
        cand.boosts["association"] = gain


def _links(ids: list[int], namespace_ids: tuple[int, ...]) -> list[tuple[int, int, float]]:
    """(source, target, weight) of the links touching ids: two index range scans in one
    statement (an OR of the two columns would make the planner combine bitmaps)."""
    table = connection.ops.quote_name(Association._meta.db_table)
    sources, source_params = stages.in_list("source_id", ids)
    targets, target_params = stages.in_list("target_id", ids)
    namespaces, ns_params = stages.in_list("namespace_id", list(namespace_ids))
    sql = (
        f"SELECT source_id, target_id, weight FROM {table} WHERE {sources} AND {namespaces} "
        "UNION ALL "
        f"SELECT source_id, target_id, weight FROM {table} "
        f"WHERE {targets} AND NOT {sources} AND {namespaces}"
    )
    params = [*source_params, *ns_params, *target_params, *source_params, *ns_params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _episode_boost(candidates: dict[int, _Candidate], boost: float, window_minutes: float) -> None:
    """+ boost x the best relevance among candidates written within the window of this one.

    Memories written in the same sitting (one conversation, one work session) tend to be
    about the same thing: a strong hit lends its episode some of its weight. Computed
    with two sliding-window maxima over the candidates sorted by time, O(n).
    """
    if not boost or not candidates:
        return
    window = window_minutes * 60
    by_namespace: dict[int, list[_Candidate]] = {}
    for cand in candidates.values():
        by_namespace.setdefault(cand.row["namespace_id"], []).append(cand)
    gains: list[tuple[_Candidate, float]] = []
    for group in by_namespace.values():
        group.sort(key=lambda c: c.row["created_ts"])
        times = [c.row["created_ts"] for c in group]
        before = _window_max(times, [c.relevance for c in group], window)
        after = _window_max(
            [-t for t in reversed(times)], [c.relevance for c in reversed(group)], window
        )[::-1]
        for cand, left, right in zip(group, before, after, strict=True):
            gains.append((cand, boost * max(left, right)))
    for cand, gain in gains:
        if gain > 0:
            cand.relevance += gain
            cand.boosts["episode"] = gain


def _window_max(times: list[float], values: list[float], window: float) -> list[float]:
    """Per i (times ascending): max(values[j]) over j <= i with times[i] - times[j] <= window."""
    out: list[float] = []
    queue: deque[int] = deque()
    for i, value in enumerate(values):
        while queue and values[queue[-1]] <= value:
            queue.pop()
        queue.append(i)
        while times[i] - times[queue[0]] > window:
            queue.popleft()
        out.append(values[queue[0]])
    return out


def _normalise(candidates: dict[int, _Candidate]) -> None:
    top = max((c.relevance for c in candidates.values()), default=0.0)
    if top > 0:
        for cand in candidates.values():
            cand.relevance /= top


def _final_scores(
    candidates: dict[int, _Candidate],
    ns_by_id: dict[int, Namespace],
    context: dict[str, Any],
    now: datetime,
    config: RecallConfig,
) -> None:
    weights_by_ns = {pk: ns.ranking_weights() for pk, ns in ns_by_id.items()}
    params_by_ns: dict[int, DecayParams] = {pk: ns.decay_params() for pk, ns in ns_by_id.items()}
    hour = context.get("hour")
    weekday = context.get("weekday")
    topic = context.get("topic")
    now_ts = now.timestamp()
    for cand in candidates.values():
        row = cand.row
        weights = weights_by_ns[row["namespace_id"]]
        cand.decay = decay_score_after(
            use_count=row["use_count"],
            dt_seconds=now_ts - row["last_used_ts"],
            strength=row["strength"],
            params=params_by_ns[row["namespace_id"]],
        )
        recency = min(1.0, cand.decay)
        base = (
            weights["similarity"] * cand.relevance
            + weights["recency"] * recency
            + weights["utility"] * row["utility"]
            + weights["confidence"] * row["confidence"]
        )
        ctx = 0.0
        if hour is not None or weekday is not None or topic:
            ctx = context_boost(
                created_at=timezone.localtime(_datetime(row["created_ts"])),
                topic=row["topic"],
                context_hour=hour,
                context_weekday=weekday,
                context_topic=topic,
            )
        emotion = emotion_tiebreak(row["emotion_score"])
        spacing = spacing_multiplier(_timestamps(row["recall_timestamps"]))
        cand.final = (base + ctx + emotion) * spacing
        if ctx:
            cand.boosts["context"] = ctx
        if emotion:
            cand.boosts["emotion"] = emotion
        if spacing != 1.0:
            cand.boosts["spacing"] = spacing


def _timestamps(values) -> list[datetime]:
    out = []
    for value in values or []:
        try:
            stamp = datetime.fromisoformat(value)
        except (TypeError, ValueError):
            continue
        if timezone.is_naive(stamp):
            stamp = timezone.make_aware(stamp, timezone.utc)
        out.append(stamp)
    return out


def _rank(candidates: dict[int, _Candidate], limit: int, config: RecallConfig) -> list[int]:
    """MMR over the best candidates, then the review blend; ids of the returned results."""
    if not candidates or limit <= 0:
        return []
    by_final = sorted(candidates.values(), key=lambda c: (-c.final, c.memory_id))
    pool = by_final[: max(3 * limit, MMR_POOL_MIN)]
    top = pool[0].final or 1.0
    order = mmr_rerank(
        [(c.memory_id, c.final / top, c.row["content"]) for c in pool], lam=config.mmr_lambda
    )
    order += [c.memory_id for c in by_final[len(pool) :]]
    n_review = math.floor(config.review_blend * limit + 1e-9)
    main = order[: limit - n_review]
    rest = order[limit - n_review :]
    reviews = [
        i
        for i in rest
        if in_danger_zone(candidates[i].decay, config.thresholds)
        and candidates[i].relevance >= REVIEW_MIN_RELEVANCE
    ][:n_review]
    room = limit - len(main) - len(reviews)
    others = [i for i in rest if i not in reviews][: max(0, room)]
    position = {i: n for n, i in enumerate(rest)}
    return main + sorted(reviews + others, key=position.__getitem__)


def _to_hit(
    cand: _Candidate,
    ns_by_id: dict[int, Namespace],
    config: RecallConfig,
) -> RecallHit:
    row = cand.row
    found_by = [s for s in MEMORY_STAGES if s in cand.stage_scores]
    if cand.associative:
        found_by.append(ASSOCIATION)
    created = _datetime(row["created_ts"])
    return RecallHit(
        memory_id=cand.memory_id,
        namespace=ns_by_id[row["namespace_id"]].slug,
        content=row["content"],
        score=cand.final,
        raw_score=cand.relevance,
        stages=found_by,
        stage_scores=dict(cand.stage_scores),
        boosts=dict(cand.boosts),
        metadata={
            "topic": row["topic"],
            "emotion_tags": row["emotion_tags"],
            "importance_flags": row["importance_flags"],
            "confidence": row["confidence"],
            "created_at": created.isoformat() if created else None,
            "tier": row["tier"],
            "classification": row["classification"],
            "decay_score": round(cand.decay, 6),
            "keywords": row["keywords"],
        },
        associative=cand.associative,
        review=in_danger_zone(cand.decay, config.thresholds),
        cold=row["storage"] == Memory.Storage.COLD,
    )
