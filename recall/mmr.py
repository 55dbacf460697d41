"""Maximal Marginal Relevance reranking (seed 002): relevant results, but not five copies of one.

Similarity is the Jaccard coefficient of folded word sets (memories.text.words).
"""

from __future__ import annotations

from memories.decay import require_finite
from memories.text import words


def jaccard(a: set[str], b: set[str]) -> float:
    """|a & b| / |a | b|; two empty sets share nothing we can see, so 0.0 rather than 1.0."""
    shared = len(a & b)
    union = len(a) + len(b) - shared
    return shared / union if union else 0.0


def mmr_rerank(
    items: list[tuple[int, float, str]],
    *,
    lam: float = 0.7,
    limit: int | None = None,
) -> list[int]:
    """Ids of (id, score, text) items in MMR order.

    First the highest score; then repeatedly the item maximising
    lam * score - (1 - lam) * max Jaccard similarity to the items already picked.
    Ties go to the item that came first in the input. Scores are used as given: on a
    scale much wider than [0, 1] the diversity term barely matters, so callers mixing
    stages should pass normalised scores.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")
    # A NaN lam or score compares False with everything, so max() would keep whichever
    # item it met first and the order would be arbitrary rather than an error.
    require_finite("lam", lam)
    for item_id, score, _text in items:
        require_finite(f"score of item {item_id}", score)
    count = len(items) if limit is None else min(limit, len(items))
    tokens = [set(words(text)) for _id, _score, text in items]
    remaining = list(range(len(items)))
    # Highest similarity of each candidate to anything selected so far, kept up to date
    # as items are picked: O(n * picks) Jaccards instead of O(n * picks^2).
    max_similarity = [0.0] * len(items)
    selected: list[int] = []
    while len(selected) < count:
        if selected:
            best = max(
                remaining,
                key=lambda i: (lam * items[i][1] - (1 - lam) * max_similarity[i], -i),
            )
        else:
            best = max(remaining, key=lambda i: (items[i][1], -i))
        remaining.remove(best)
        selected.append(best)
        for i in remaining:
            similarity = jaccard(tokens[best], tokens[i])
            if similarity > max_similarity[i]:
                max_similarity[i] = similarity
    return [items[i][0] for i in selected]
