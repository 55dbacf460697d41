"""Small statistics shared by the benchmarks."""

from __future__ import annotations


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile of a list of numbers (0 for an empty list)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]
