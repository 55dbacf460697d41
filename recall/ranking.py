"""Ranking (seed 002): from fused relevance to the ordered results.

1. Relevance boosts from the candidates themselves: keyword field match, association
   spreading (the pipeline reads the links; association_support computes the gains) and
   episode coherence; then relevance is normalised to a top of 1.
2. The namespace mode's weights (similarity, recency = decay score, utility, confidence),
   then context boost, emotion tie-breaker and spacing multiplier: the final score.
3. MMR (lambda 0.7, Jaccard on words) over the best candidates, then the review blend (a
   share of the slots for memories in the decay danger zone).

Pure: plain values in, plain values out; no database, clock or settings (the caller
passes `now`, the time zone and each namespace's weights and decay parameters).
"""

from __future__ import annotations

import functools
import heapq
import math
from collections import deque
from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo
from typing import Any

import numpy as np

from memories.decay import DecayParams, Thresholds, decay_score_after, in_danger_zone
from memories.near_duplicates import Shape, shape, similarity
from memories.text import words
from recall.fusion import Candidate
from recall.mmr import mmr_rerank
from recall.scoring import context_boost, emotion_tiebreak, spacing_multiplier
from recall.temporal import TemporalQuery

REVIEW_MIN_RELEVANCE = 0.25  # a review-blend pick must still be about the query
MMR_POOL_MIN = 30


# --- Relevance boosts ----------------------------------------------------------------------


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


def keyword_boost(candidates: dict[int, Candidate], terms: list[str], boost: float) -> None:
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


def association_support(
    candidates: dict[int, Candidate],
    links: Iterable[tuple[int, int, float]],
    spread: float,
) -> dict[int, float]:
    """What each memory gains from its linked candidates (links in either direction).

    A memory gains spread x max(weight x neighbour's relevance) over its linked
    non-associative candidates; a memory that is no candidate yet gets a gain too (the
    caller may add it as an associative result).
    """
    support: dict[int, float] = {}
    for source, target, weight in links:
        for here, there in ((source, target), (target, source)):
            origin = candidates.get(there)
            if origin is None or origin.associative:
                continue
            gain = spread * weight * origin.relevance
            if gain > support.get(here, 0.0):
                support[here] = gain
    return support


def add_association_support(candidates: dict[int, Candidate], support: dict[int, float]) -> None:
    """Add each candidate's positive association gain to its relevance."""
    for memory_id, gain in support.items():
        cand = candidates.get(memory_id)
        if cand is None or gain <= 0:
            continue
        cand.relevance += gain
        cand.boosts["association"] = gain


def temporal_boost(
    candidates: dict[int, Candidate], when: TemporalQuery, boost: float, tz: tzinfo
) -> None:
    """x(1 + boost) for a memory written within a time the query names (recall.temporal):
    "what did Maria donate in December 2023?" is about what was written then."""
    if not boost or not when:
        return
    for cand in candidates.values():
        if when.contains(cand.row["created_ts"], tz):
            gain = cand.relevance * boost
            cand.relevance += gain
            cand.boosts["temporal"] = gain


def episode_boost(candidates: dict[int, Candidate], boost: float, window_minutes: float) -> None:
    """+ boost x the best relevance among the candidates of this one's episode.

    Memories written in the same sitting (one conversation, one work session) tend to be
    about the same thing: a strong hit lends its episode some of its weight. A memory
    written in a session (session_id) shares it with the candidates of that session, in its
    namespace; one without a session, with the candidates without a session written within
    the window of it (two sliding-window maxima over them sorted by time, O(n)).
    """
    if not boost or not candidates:
        return
    window = window_minutes * 60
    sessions: dict[tuple[int, str], list[Candidate]] = {}
    by_namespace: dict[int, list[Candidate]] = {}
    for cand in candidates.values():
        session = cand.row.get("session_id") or ""
        if session:
            sessions.setdefault((cand.row["namespace_id"], session), []).append(cand)
        else:
            by_namespace.setdefault(cand.row["namespace_id"], []).append(cand)
    gains: list[tuple[Candidate, float]] = []
    for group in sessions.values():
        best = max(c.relevance for c in group)
        gains += [(cand, boost * best) for cand in group]
    for group in by_namespace.values():
        group.sort(key=lambda c: c.row["created_ts"])
        times = [c.row["created_ts"] for c in group]
        before = window_max(times, [c.relevance for c in group], window)
        after = window_max(
            [-t for t in reversed(times)], [c.relevance for c in reversed(group)], window
        )[::-1]
        for cand, left, right in zip(group, before, after, strict=True):
            gains.append((cand, boost * max(left, right)))
    for cand, gain in gains:
        if gain > 0:
            cand.relevance += gain
            cand.boosts["episode"] = gain


def window_max(times: list[float], values: list[float], window: float) -> list[float]:
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


def normalise(candidates: dict[int, Candidate]) -> None:
    """Scale relevance so the best candidate's is 1 (unchanged when all are 0)."""
    top = max((c.relevance for c in candidates.values()), default=0.0)
    if top > 0:
        for cand in candidates.values():
            cand.relevance /= top


# --- Final scores --------------------------------------------------------------------------


def final_scores(
    candidates: dict[int, Candidate],
    *,
    weights: dict[int, dict[str, float]],
    decay_params: dict[int, DecayParams],
    context: dict[str, Any],
    now: datetime,
    tz: tzinfo,
) -> None:
    """Each candidate's decay score and final score; weights and decay_params by namespace id.

    final = (mode-weighted relevance, recency, utility and confidence + context boost
    + emotion tie-breaker) x spacing multiplier. The context's hour and weekday are read
    in `tz`, the user's time zone.
    """
    hour = context.get("hour")
    weekday = context.get("weekday")
    topic = context.get("topic")
    now_ts = now.timestamp()
    for cand in candidates.values():
        row = cand.row
        namespace_weights = weights[row["namespace_id"]]
        cand.decay = decay_score_after(
            use_count=row["use_count"],
            dt_seconds=now_ts - row["last_used_ts"],
            strength=row["strength"],
            params=decay_params[row["namespace_id"]],
        )
        recency = min(1.0, cand.decay)
        base = (
            namespace_weights["similarity"] * cand.relevance
            + namespace_weights["recency"] * recency
            + namespace_weights["utility"] * row["utility"]
            + namespace_weights["confidence"] * row["confidence"]
        )
        ctx = 0.0
        if hour is not None or weekday is not None or topic:
            ctx = context_boost(
                created_at=datetime.fromtimestamp(row["created_ts"], UTC).astimezone(tz),
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
    """ISO timestamps as aware datetimes (naive ones read as UTC); unreadable ones skipped."""
    out = []
    for value in values or []:
        try:
            stamp = datetime.fromisoformat(value)
        except (TypeError, ValueError):
            continue
        if stamp.utcoffset() is None:
            stamp = stamp.replace(tzinfo=UTC)
        out.append(stamp)
    return out


# --- Near-duplicates -------------------------------------------------------------------------


NEAR_DUPLICATE_POOL = 60  # the best candidates whose texts are compared with each other


def text_near_duplicates(
    candidates: dict[int, Candidate],
    *,
    namespaces: Iterable[int],
    trigram_threshold: float,
    signature_threshold: float,
    pool: int = NEAR_DUPLICATE_POOL,
) -> list[tuple[int, int]]:
    """Pairs of near-duplicates (memories.near_duplicates' rule) among the `pool` best
    candidates (final score) of the same namespace, for namespaces in `namespaces`: what
    the write path's links do not hold yet (the worker links a new memory a moment after
    it is written). Signatures are compared first, every pair at once; only the few pairs
    that agree have their texts' trigrams compared."""
    comparing = set(namespaces)
    best = heapq.nsmallest(
        pool,
        (c for c in candidates.values() if c.row["namespace_id"] in comparing),
        key=lambda c: (-c.final, c.memory_id),
    )
    signed = [c for c in best if c.row.get("signature")]
    width = max((len(c.row["signature"]) for c in signed), default=0)  # SIGNATURE_BITS / 8
    signed = [c for c in signed if len(c.row["signature"]) == width and width % 8 == 0]
    if len(signed) < 2:
        return []
    words = np.frombuffer(
        b"".join(bytes(c.row["signature"]) for c in signed), dtype=np.uint64
    ).reshape(len(signed), -1)
    differing = np.bitwise_count(words[:, None, :] ^ words[None, :, :]).sum(axis=2)
    agree = 1.0 - differing / (64 * words.shape[1])
    pairs = []
    shapes: dict[int, Shape] = {}
    for a, b in zip(*np.nonzero(np.triu(agree >= signature_threshold, k=1)), strict=True):
        first, second = signed[a], signed[b]
        if first.row["namespace_id"] != second.row["namespace_id"]:
            continue
        for c in (first, second):
            if c.memory_id not in shapes:
                shapes[c.memory_id] = shape(c.row["content"])
        if (
            similarity(
                shapes[first.memory_id],
                shapes[second.memory_id],
                None,
                None,
                trigram_threshold=trigram_threshold,
                signature_threshold=signature_threshold,
            )
            is not None
        ):
            pairs.append((first.memory_id, second.memory_id))
    return pairs


def collapse_near_duplicates(
    candidates: dict[int, Candidate],
    links: Iterable[tuple[int, int]],
    visible: Iterable[int] = (),
) -> dict[int, list[int]]:
    """One candidate per group of near-duplicates: the groups are the connected parts of
    the near_duplicate links among the candidates and the `visible` memories linked to
    them (outside the candidates, but within the caller's reach). The best candidate of
    each group (highest final score, then lowest id) stays; the group's other candidates
    are removed from `candidates`. Returns {kept id: the group's other ids, sorted}."""
    members = set(candidates) | set(visible)
    parent = {i: i for i in members}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in links:
        if a in parent and b in parent:
            parent[root(a)] = root(b)
    groups: dict[int, list[int]] = {}
    for i in members:
        groups.setdefault(root(i), []).append(i)
    duplicates: dict[int, list[int]] = {}
    for group in groups.values():
        present = [candidates[i] for i in group if i in candidates]
        if len(group) < 2 or not present:
            continue
        best = min(present, key=lambda c: (-c.final, c.memory_id)).memory_id
        duplicates[best] = sorted(i for i in group if i != best)
        for i in duplicates[best]:
            candidates.pop(i, None)
    return duplicates


# --- Order -----------------------------------------------------------------------------------


def rank(
    candidates: dict[int, Candidate],
    limit: int,
    *,
    mmr_lambda: float,
    review_blend: float,
    thresholds: Thresholds,
) -> list[int]:
    """MMR over the best candidates, then the review blend; ids of the returned results."""
    if not candidates or limit <= 0:
        return []
    by_final = sorted(candidates.values(), key=lambda c: (-c.final, c.memory_id))
    pool = by_final[: max(3 * limit, MMR_POOL_MIN)]
    top = pool[0].final or 1.0
    order = mmr_rerank(
        [(c.memory_id, c.final / top, c.row["content"]) for c in pool], lam=mmr_lambda
    )
    order += [c.memory_id for c in by_final[len(pool) :]]
    n_review = math.floor(review_blend * limit + 1e-9)
    main = order[: limit - n_review]
    rest = order[limit - n_review :]
    reviews = [
        i
        for i in rest
        if in_danger_zone(candidates[i].decay, thresholds)
        and candidates[i].relevance >= REVIEW_MIN_RELEVANCE
    ][:n_review]
    room = limit - len(main) - len(reviews)
    others = [i for i in rest if i not in reviews][: max(0, room)]
    position = {i: n for n, i in enumerate(rest)}
    return main + sorted(reviews + others, key=position.__getitem__)
