"""Seed 002's recall pipeline: runs the stages, then fusion and ranking, without writing.

Order of work for one query (docs/recall.md has the why of each step):

1. Se's query embedding starts in a thread (it overlaps Sf; discarded if Sf fills the limit).
2. Sf full text; if it returns >= limit hits, Se and Ss are skipped (short-circuit).
3. Se cosine search, Ss signature search (the stages are recall.stages.*).
4. Fusion of Sf/Se/Ss into one relevance in [0, 1] (recall.fusion).
5. Boosts, mode weights, MMR and the review blend (recall.ranking); association
   spreading reads its links and the linked memories' rows here.
6. S6 digests and S8 relations always run; each result gets its explanation.

Nothing here writes: tracking and the RecallEvent belong to recall.services.
"""

from __future__ import annotations

import concurrent.futures
import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from config.metrics import observe_recall
from memories.decay import Thresholds, in_danger_zone
from memories.models import Namespace
from memories.services import NEAR_DUPLICATE
from recall import fusion, ranking
from recall.embeddings import EmbeddingUnavailable, embed_texts, get_provider
from recall.fusion import Candidate
from recall.rows import association_links, association_links_with_rows, json_list, load_rows
from recall.scoring import RecallScoringConfig
from recall.stages import (
    ALL_STAGES,
    DIGESTS,
    EMBEDDINGS,
    ENTITY_GRAPH,
    FULL_TEXT,
    MEMORY_STAGES,
    SIGNATURES,
)
from recall.stages.digests import DigestHit, consolidation_search
from recall.stages.embeddings import embedding_search
from recall.stages.entity_graph import RelationHit, entity_search
from recall.stages.filters import RecallFilters
from recall.stages.full_text import FullTextResult, full_text
from recall.stages.query import QueryTerms, analyse_query, prefix_term
from recall.stages.signatures import signature_search

ASSOCIATION = "association"  # the stage label of a result no stage found, reached by a link


# Computes query embeddings while Sf runs.
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
    temporal_boost: float = 2.0
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
        values = {
            "fusion": settings.RECALL_FUSION,
            "rrf_k": settings.RECALL_RRF_K,
            "candidate_cap": settings.RECALL_CANDIDATE_CAP,
            "match_budget": settings.RECALL_MATCH_BUDGET,
            "mmr_lambda": settings.RECALL_MMR_LAMBDA,
            "keyword_boost": settings.RECALL_KEYWORD_BOOST,
            "association_spread": settings.RECALL_ASSOCIATION_SPREAD,
            "episode_boost": settings.RECALL_EPISODE_BOOST,
            "temporal_boost": settings.RECALL_TEMPORAL_BOOST,
            "episode_window_minutes": settings.RECALL_EPISODE_WINDOW_MINUTES,
            "review_blend": settings.REVIEW_BLEND_RATIO,
            "thresholds": Thresholds(
                forget=settings.FORGET_THRESHOLD,
                danger_min=settings.REVIEW_DANGER_ZONE_MIN,
                danger_max=settings.REVIEW_DANGER_ZONE_MAX,
                promote=settings.PROMOTE_THRESHOLD,
                promote_use_count=settings.PROMOTE_USE_COUNT,
                promote_window_days=settings.PROMOTE_TIME_WINDOW_DAYS,
            ),
            "scoring": RecallScoringConfig(
                decay_days=settings.RECALL_DECAY_DAYS,
                decay_floor=settings.RECALL_DECAY_FLOOR,
                emotion_boost=settings.RECALL_EMOTION_BOOST,
            ),
            "search_mode": settings.MEMORY_SEARCH_MODE,
            "embedding_enabled": settings.EMBEDDING_ENABLED,
            "embedding_provider": settings.EMBEDDING_PROVIDER,
            "embedding_threshold": settings.EMBEDDING_SIMILARITY_THRESHOLD,
            "embedding_budget_s": settings.EMBEDDING_QUERY_BUDGET_MS / 1000,
            "vector_rerank": settings.RECALL_VECTOR_RERANK,
            "signature_bits": settings.SIGNATURE_BITS,
            "signature_threshold": settings.RECALL_SIGNATURE_THRESHOLD,
            "signature_cap": settings.RECALL_SIGNATURE_CAP,
            "signature_scan_cap": settings.RECALL_SIGNATURE_SCAN_CAP,
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
    # Each result it contradicts (enrichment.interference): memory_id, newer_id, reason.
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    # The ids of its near-duplicates the caller may see (shown once, as this result).
    duplicates: list[int] = field(default_factory=list)

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
            "conflicts": self.conflicts,
            "duplicates": self.duplicates,
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
    digests: list[DigestHit]
    relations: list[RelationHit]
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
        chosen = [s for s in chosen if s != EMBEDDINGS]
    elif config.search_mode == "semantic":
        chosen = [s for s in chosen if s != FULL_TEXT]
    return chosen


@dataclass
class _StageLog:
    """Each stage's timing entry (stage_timings) and the warnings for the caller."""

    timings: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _PendingEmbedding:
    """The query embedding being computed in _EXECUTOR, and when Se started."""

    future: concurrent.futures.Future
    model: str
    started: float


def run_pipeline(
    *,
    namespaces: list[Namespace],
    filters: RecallFilters,
    query: str,
    limit: int,
    context: dict[str, Any] | None,
    requested_stages: list[str] | None,
    config: RecallConfig,
) -> RecallResult:
    """Run every stage and the ranking; returns results without writing anything."""
    started = time.perf_counter()
    terms = analyse_query(query, now=filters.now, tz=timezone.get_current_timezone())
    wanted = active_stages(requested_stages, config)
    log = _StageLog()
    ns_by_id = {ns.pk: ns for ns in namespaces}

    pending = _start_query_embedding(query, wanted, config, log)
    full = _run_full_text(terms, filters, limit, wanted, config, log)
    short_circuit = config.short_circuit and len(full.hits) >= limit
    rows = full.rows | load_rows([i for i, _score, _sub in full.hits if i not in full.rows])
    se_hits, embeddings_ran = _run_embeddings(
        pending, filters, limit, wanted, short_circuit, config, log
    )
    ss_hits = _run_signatures(query, filters, wanted, short_circuit, config, log)
    rows.update(load_rows([i for i, _ in se_hits + ss_hits if i not in rows]))

    candidates = _fuse(full, se_hits, ss_hits, rows, filters.now, config, embeddings_ran)
    ordered, duplicates = _rank(candidates, terms, filters, ns_by_id, context or {}, limit, config)

    digests = _run_digests(terms, full, filters, limit, wanted, log)
    relations = _run_entity_graph(terms, filters, wanted, log)
    result = RecallResult(
        query=query,
        results=[
            _explain(candidates[i], ns_by_id, config, filters.now, duplicates.get(i, []))
            for i in ordered
        ],
        digests=digests,
        relations=relations,
        stage_timings={name: log.timings[name] for name in ALL_STAGES if name in log.timings},
        warnings=log.warnings,
        candidates=len(candidates) + len(digests) + len(relations),
    )
    result.duration_ms = _ms(started)
    observe_recall(result.stage_timings, result.candidates, result.duration_ms)
    return result


# --- Stages ----------------------------------------------------------------------------------


def _start_query_embedding(
    query: str, wanted: list[str], config: RecallConfig, log: _StageLog
) -> _PendingEmbedding | None:
    """Se's first step, started before Sf so the query embedding overlaps it."""
    if EMBEDDINGS not in wanted or not config.embedding_enabled or not query.strip():
        return None
    started = time.perf_counter()
    try:
        provider = get_provider(config.embedding_provider)
        future = _EXECUTOR.submit(
            embed_texts,
            [query],
            kind="query",
            provider=provider,
            timeout=config.embedding_budget_s,
        )
    except EmbeddingUnavailable as exc:
        log.warnings.append(f"Se skipped: {exc}")
        log.timings[EMBEDDINGS] = _timing(skipped=True, reason=str(exc))
        return None
    return _PendingEmbedding(future=future, model=provider.model, started=started)


def _run_full_text(
    terms: QueryTerms,
    filters: RecallFilters,
    limit: int,
    wanted: list[str],
    config: RecallConfig,
    log: _StageLog,
) -> FullTextResult:
    """Sf, with its timing: which terms it matched on and which were too common."""
    if FULL_TEXT not in wanted:
        log.timings[FULL_TEXT] = _timing(skipped=True, reason="not requested")
        return FullTextResult()
    t0 = time.perf_counter()
    full = full_text(
        terms,
        filters,
        limit=limit,
        candidate_cap=config.candidate_cap,
        match_budget=config.match_budget,
    )
    detail = ""
    if full.matched_terms:
        detail = "FTS matches on " + ", ".join(f'"{t}"{_star(t)}' for t in full.matched_terms)
    if full.dropped_terms:
        detail += "; too common to match on: " + ", ".join(
            f"{t}{_star(t)}" for t in full.dropped_terms
        )
    if full.note:
        detail = full.note
    log.timings[FULL_TEXT] = _timing(_ms(t0), len(full.hits), detail=detail)
    if full.note == "only common words":
        log.warnings.append("The query has only common words; full-text search skipped them.")
    return full


def _star(term: str) -> str:
    """A prefix term's mark in the stage detail, as FTS5 writes one: "猫"* matches any CJK
    token starting with 猫, not the word 猫."""
    return "*" if prefix_term(term) else ""


def _run_embeddings(
    pending: _PendingEmbedding | None,
    filters: RecallFilters,
    limit: int,
    wanted: list[str],
    short_circuit: bool,
    config: RecallConfig,
    log: _StageLog,
) -> tuple[list[tuple[int, float]], bool]:
    """Se's hits, and whether Se ran (only then can it confirm Sf's hits: the penalty).

    Waits for the query embedding at most what is left of the budget.
    """
    if EMBEDDINGS not in wanted:
        log.timings.setdefault(EMBEDDINGS, _timing(skipped=True, reason="not requested"))
        return [], False
    if not config.embedding_enabled:
        log.timings[EMBEDDINGS] = _timing(skipped=True, reason="embeddings disabled")
        return [], False
    if pending is None:  # the provider was unavailable (logged) or the query blank
        return [], False
    if short_circuit:
        pending.future.cancel()  # discarded without awaiting
        log.timings[EMBEDDINGS] = _timing(skipped=True, reason="Sf filled limit")
        return [], False
    remaining = config.embedding_budget_s - (time.perf_counter() - pending.started)
    try:
        vector = pending.future.result(timeout=max(0.0, remaining))[0]
        hits = embedding_search(
            vector,
            filters,
            model=pending.model,
            threshold=config.embedding_threshold,
            limit=limit * 3,
            rerank=config.vector_rerank,
        )
    except concurrent.futures.TimeoutError:
        pending.future.cancel()
        reason = f"embedding slower than {config.embedding_budget_s * 1000:.0f} ms"
        log.warnings.append(f"Se skipped: {reason}")
        log.timings[EMBEDDINGS] = _timing(_ms(pending.started), skipped=True, reason=reason)
        return [], False
    except (EmbeddingUnavailable, ImportError) as exc:
        log.warnings.append(f"Se skipped: {exc}")
        log.timings[EMBEDDINGS] = _timing(_ms(pending.started), skipped=True, reason=str(exc))
        return [], False
    log.timings[EMBEDDINGS] = _timing(
        _ms(pending.started), len(hits), detail="cosine similarity to query embedding"
    )
    return hits, True


def _run_signatures(
    query: str,
    filters: RecallFilters,
    wanted: list[str],
    short_circuit: bool,
    config: RecallConfig,
    log: _StageLog,
) -> list[tuple[int, float]]:
    """Ss's hits, unless Sf filled the limit."""
    if SIGNATURES not in wanted:
        log.timings[SIGNATURES] = _timing(skipped=True, reason="not requested")
        return []
    if short_circuit:
        log.timings[SIGNATURES] = _timing(skipped=True, reason="Sf filled limit")
        return []
    t0 = time.perf_counter()
    hits = signature_search(
        query,
        filters,
        bits=config.signature_bits,
        threshold=config.signature_threshold,
        cap=config.signature_cap,
        scan_cap=config.signature_scan_cap,
    )
    log.timings[SIGNATURES] = _timing(_ms(t0), len(hits), detail="SimHash Hamming similarity")
    return hits


def _run_digests(
    terms: QueryTerms,
    full: FullTextResult,
    filters: RecallFilters,
    limit: int,
    wanted: list[str],
    log: _StageLog,
) -> list[DigestHit]:
    """S6, searching the query's rarest words first (Sf counted them)."""
    if DIGESTS not in wanted:
        log.timings[DIGESTS] = _timing(skipped=True, reason="not requested")
        return []
    t0 = time.perf_counter()
    rare_first = sorted(terms.terms, key=lambda t: full.document_frequency.get(t, 0) or math.inf)
    digests = consolidation_search(terms, filters, rare_first=rare_first, limit=limit)
    detail = f'consolidation mentions "{digests[0].text[:60]}"' if digests else ""
    log.timings[DIGESTS] = _timing(_ms(t0), len(digests), detail=detail)
    return digests


def _run_entity_graph(
    terms: QueryTerms, filters: RecallFilters, wanted: list[str], log: _StageLog
) -> list[RelationHit]:
    """S8: the relations of the first entity the query names."""
    if ENTITY_GRAPH not in wanted:
        log.timings[ENTITY_GRAPH] = _timing(skipped=True, reason="not requested")
        return []
    t0 = time.perf_counter()
    entity, relations = entity_search(terms, filters)
    detail = f"entity {entity}" if entity else "no entity match"
    log.timings[ENTITY_GRAPH] = _timing(_ms(t0), len(relations), detail=detail)
    return relations


# --- Fusion and ranking ----------------------------------------------------------------------


def _fuse(
    full: FullTextResult,
    se_hits: list[tuple[int, float]],
    ss_hits: list[tuple[int, float]],
    rows: dict[int, dict[str, Any]],
    now: datetime,
    config: RecallConfig,
    embeddings_ran: bool,
) -> dict[int, Candidate]:
    """The memory stages' hits as candidates, each with its fused relevance."""
    sf_scored = fusion.score_full_text(full.hits, rows, now=now, scoring=config.scoring)
    candidates, rankings = fusion.gather(sf_scored, se_hits, ss_hits, rows)
    fusion.fuse(
        candidates,
        rankings,
        method=config.fusion,
        rrf_k=config.rrf_k,
        embeddings_available=embeddings_ran,
    )
    return candidates


def _rank(
    candidates: dict[int, Candidate],
    terms: QueryTerms,
    filters: RecallFilters,
    ns_by_id: dict[int, Namespace],
    context: dict[str, Any],
    limit: int,
    config: RecallConfig,
) -> tuple[list[int], dict[int, list[int]]]:
    """Boosts, final scores, near-duplicates shown once, MMR and the review blend: ids of
    the results in order, and each kept result's near-duplicates."""
    ranking.keyword_boost(candidates, terms.terms, config.keyword_boost)
    ranking.temporal_boost(
        candidates, terms.when, config.temporal_boost, timezone.get_current_timezone()
    )
    near_links = _spread_associations(candidates, filters, config.association_spread)
    ranking.episode_boost(candidates, config.episode_boost, config.episode_window_minutes)
    ranking.normalise(candidates)
    ranking.final_scores(
        candidates,
        weights={pk: ns.ranking_weights() for pk, ns in ns_by_id.items()},
        decay_params={pk: ns.decay_params() for pk, ns in ns_by_id.items()},
        context=context,
        now=filters.now,
        tz=timezone.get_current_timezone(),
    )
    duplicates = _collapse_near_duplicates(candidates, filters, ns_by_id, near_links)
    ordered = ranking.rank(
        candidates,
        limit,
        mmr_lambda=config.mmr_lambda,
        review_blend=config.review_blend,
        thresholds=config.thresholds,
    )
    return ordered, duplicates


def _collapse_near_duplicates(
    candidates: dict[int, Candidate],
    filters: RecallFilters,
    ns_by_id: dict[int, Namespace],
    near_links: set[tuple[int, int]] | None = None,
) -> dict[int, list[int]]:
    """Keep one candidate per group of near-duplicates (ranking.collapse_near_duplicates):
    groups by the write path's links, and by the best candidates' own texts in namespaces
    that compare (a memory written a moment ago is not linked yet); linked memories outside
    the candidates count only if they pass every filter, so a result never names a memory
    the caller could not have been given. near_links: the near-duplicate links association
    spreading read along with its own (a superset of the candidates'); None reads them."""
    if not candidates:
        return {}
    if near_links is None:
        links = [
            (source, target)
            for source, target, _weight in association_links(
                list(candidates), filters.namespace_ids, filters.ceiling, kind=NEAR_DUPLICATE
            )
        ]
    else:
        links = sorted(
            (source, target)
            for source, target in near_links
            if source in candidates or target in candidates
        )
    links += ranking.text_near_duplicates(
        candidates,
        namespaces=[pk for pk, ns in ns_by_id.items() if ns.dedupe != Namespace.Dedupe.OFF],
        trigram_threshold=settings.NEAR_DUPLICATE_TRIGRAM,
        signature_threshold=settings.NEAR_DUPLICATE_SIGNATURE,
    )
    if not links:
        return {}
    outside = {i for link in links for i in link if i not in candidates}
    visible = load_rows(sorted(outside), filters) if outside else {}
    return ranking.collapse_near_duplicates(candidates, links, visible)


def _spread_associations(
    candidates: dict[int, Candidate], filters: RecallFilters, spread: float
) -> set[tuple[int, int]] | None:
    """Spread relevance along association links (either direction), one hop.

    A linked memory that no stage found joins as an associative result, provided it
    passes every filter (cold storage allowed: it is reactivated if returned). Returns the
    near-duplicate links the same statement read (None when spreading is off), for
    _collapse_near_duplicates.
    """
    if not spread or not candidates:
        return None
    links, linked, near_links = association_links_with_rows(
        list(candidates), filters, near_duplicate=NEAR_DUPLICATE
    )
    support = ranking.association_support(candidates, links, spread)
    # In id order, as a separate load of the new ids read them (ties keep their order).
    for memory_id in sorted(i for i in support if i not in candidates and i in linked):
        candidates[memory_id] = Candidate(memory_id, linked[memory_id], associative=True)
    ranking.add_association_support(candidates, support)
    return near_links


def _datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _explain(
    cand: Candidate,
    ns_by_id: dict[int, Namespace],
    config: RecallConfig,
    now: datetime,
    duplicates: list[int],
) -> RecallHit:
    """The result for one candidate: its stages, scores, boosts and metadata."""
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
            "emotion_tags": json_list(row["emotion_tags"]),
            "importance_flags": json_list(row["importance_flags"]),
            "confidence": row["confidence"],
            "created_at": created.isoformat() if created else None,
            "tier": row["tier"],
            "classification": row["classification"],
            "decay_score": round(cand.decay, 6),
            "keywords": row["keywords"],
            "superseded": row.get("valid_until_ts") is not None
            and row["valid_until_ts"] <= now.timestamp(),
        },
        associative=cand.associative,
        review=in_danger_zone(cand.decay, config.thresholds),
        duplicates=duplicates,
    )
