"""Enrichment of final results (seed 002): timelines per topic and interference warnings.

Pure functions over the hits; no database.

Contradiction detection is lexical, so it is cautious: two results interfere when they
talk about the same thing (Jaccard similarity of their content words, stop words and
negations left out, at least 0.5; 0.35 when they share a non-blank topic) and either
  - one is negated and the other is not ("uses PostgreSQL" / "does not use PostgreSQL"),
  - or they state different numbers about it ("deadline is May 5" / "deadline is May 12").
Both results get a warning naming the other and which of the two is newer (created later;
the larger id when they were created at the same instant), and the same as data in `conflicts`,
so the dashboard can offer to supersede the older with the newer.
"""

from __future__ import annotations

import re
from datetime import datetime
from itertools import combinations

from memories.text import words
from recall.mmr import jaccard
from recall.pipeline import RecallHit
from recall.stages.query import STOP_WORDS

_NEGATIONS = (
    "not no never none nobody nothing neither nor cannot without isn aren wasn weren don "
    "doesn didn won wouldn shouldn couldn hasn haven hadn stopped quit"
)
NEGATIONS = frozenset(_NEGATIONS.split())
SAME_SUBJECT = 0.5
SAME_SUBJECT_IN_TOPIC = 0.35
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")


def _content_words(text: str) -> tuple[set[str], bool, set[str]]:
    tokens = words(text)
    # "don't" folds to "don" + "t": the bare "t" marks the contraction.
    negated = any(t in NEGATIONS for t in tokens) or "t" in tokens
    numbers = {t for t in tokens if _NUMBER.match(t)}
    content = {
        t
        for t in tokens
        if t not in STOP_WORDS and t not in NEGATIONS and t not in numbers and len(t) > 1
    }
    return content, negated, numbers


def interference(hits: list[RecallHit]) -> None:
    """Add a conflict warning to each pair of results that look contradictory."""
    parsed = [_content_words(hit.content) for hit in hits]
    for (i, a), (j, b) in combinations(enumerate(hits), 2):
        words_a, neg_a, num_a = parsed[i]
        words_b, neg_b, num_b = parsed[j]
        same_topic = bool(a.metadata.get("topic")) and a.metadata.get("topic") == b.metadata.get(
            "topic"
        )
        needed = SAME_SUBJECT_IN_TOPIC if same_topic else SAME_SUBJECT
        if jaccard(words_a, words_b) < needed:
            continue
        reason = ""
        if neg_a != neg_b:
            reason = "one negates the other"
        elif num_a and num_b and num_a != num_b:
            reason = "different numbers"
        if reason:
            newer = _newer(a, b)
            for hit, other in ((a, b), (b, a)):
                age = "newer" if other is newer else "older"
                hit.warnings.append(
                    f"⚠️ Conflicts with another result (memory {other.memory_id}, {age}): {reason}"
                )
                hit.conflicts.append(
                    {"memory_id": other.memory_id, "newer_id": newer.memory_id, "reason": reason}
                )


def _created(hit: RecallHit) -> datetime | None:
    value = hit.metadata.get("created_at")
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(value) if value else None
    except (TypeError, ValueError):
        return None


def _newer(a: RecallHit, b: RecallHit) -> RecallHit:
    """The later created of two results; the larger id on a tie or a missing date."""
    created_a, created_b = _created(a), _created(b)
    if created_a is not None and created_b is not None and created_a != created_b:
        return a if created_a > created_b else b
    return a if a.memory_id > b.memory_id else b


def timelines(hits: list[RecallHit]) -> None:
    """For results sharing a topic, the chronological run of those results on each of them."""
    by_topic: dict[str, list[RecallHit]] = {}
    for hit in hits:
        topic = (hit.metadata.get("topic") or "").strip()
        if topic:
            by_topic.setdefault(topic.casefold(), []).append(hit)
    for group in by_topic.values():
        if len(group) < 2:
            continue
        ordered = sorted(group, key=lambda h: (h.metadata.get("created_at") or "", h.memory_id))
        line = [
            {
                "memory_id": hit.memory_id,
                "created_at": hit.metadata.get("created_at"),
                "excerpt": hit.content[:80],
            }
            for hit in ordered
        ]
        for position, hit in enumerate(ordered):
            hit.timeline = [
                {**entry, "position": n, "current": n == position} for n, entry in enumerate(line)
            ]


def enrich(hits: list[RecallHit]) -> None:
    timelines(hits)
    interference(hits)
