"""How a person reads a decay score: its vitality against the lifecycle thresholds, and the
bins of the score histogram (issue 17, item 9; docs/dashboard.md, "Scores").

A decay score has no upper bound (uses count as (n+1)^beta, strength multiplies), while
the thresholds that decide a memory's fate sit between 0.05 and 0.65. Printed as it is,
2.04 next to a threshold of 0.65 tells a person nothing. So every page shows the score as
its *vitality*: where it stands between the forget threshold (0 %) and the promote
threshold (100 %), with the band it falls in, and keeps the raw score for the tooltip.
The histogram bins scores on a logarithmic scale (BINS_PER_DECADE bins per factor of 10)
over the decades the data spans, so a few well-used memories at 5 no longer squeeze the
rest into one bin. Pure: no ORM, no settings; memories.selectors.decay_histogram counts
the bins in SQL with bin_sql, the twin of score_bin.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from memories.decay import Thresholds, require_finite

# Bands, weakest first; the thresholds decide which one a score is in (band_of).
FAINT, WEAK, FADING, STEADY, STRONG = "faint", "weak", "fading", "steady", "strong"
BANDS: tuple[str, ...] = (FAINT, WEAK, FADING, STEADY, STRONG)

WHAT_IT_IS = (
    "The decay score grows with uses and strength and falls with the time since the last "
    "use; it has no upper limit, and the thresholds are on the same scale."
)


def score_text(score: float) -> str:
    """The raw score for people: two decimals, three significant digits below 0.01."""
    require_finite("score", score)
    if score == 0:
        return "0"
    if abs(score) < 0.01:
        return f"{score:.3g}"
    return f"{score:.2f}"


def band_of(score: float, thresholds: Thresholds) -> str:
    """The band a score is in. The edges follow the sweep's rules: forgetting is strictly
    below `forget`, the review zone includes both ends (decay.in_danger_zone), promotion
    starts at `promote`."""
    require_finite("score", score)
    if score < thresholds.forget:
        return FAINT
    if score < thresholds.danger_min:
        return WEAK
    if score <= thresholds.danger_max:
        return FADING
    if score < thresholds.promote:
        return STEADY
    return STRONG


def band_explanation(band: str, thresholds: Thresholds) -> str:
    """What a band means for the memory, in one sentence naming its thresholds."""
    t = thresholds
    zone = f"{t.danger_min:g} to {t.danger_max:g}"
    return {
        FAINT: f"Below the forget threshold {t.forget:g}: the sweep forgets a short-term "
        "memory this faint (longer-lived ones go cold).",
        WEAK: f"Between the forget threshold {t.forget:g} and the review zone {zone}: "
        "close to being forgotten.",
        FADING: f"In the review zone {zone}: reviewing or using it now helps most.",
        STEADY: f"Above the review zone {zone}, below the promote threshold {t.promote:g}.",
        STRONG: f"At or above the promote threshold {t.promote:g}: a short-term memory used "
        "at least once is promoted.",
    }[band]


@dataclass(frozen=True)
class Vitality:
    """A decay score as a person reads it (docs/dashboard.md, "Scores")."""

    score: float
    percent: int
    band: str
    explanation: str
    scale: str

    @property
    def score_text(self) -> str:
        return score_text(self.score)

    @property
    def text(self) -> str:
        """'52 % · steady': what the page prints."""
        return f"{self.percent} % · {self.band}"

    @property
    def tooltip(self) -> str:
        """Everything in one line: the raw score, the band, the scale and what a score is."""
        return f"Decay score {self.score_text}. {self.explanation} {self.scale} {WHAT_IT_IS}"


def vitality(score: float, thresholds: Thresholds) -> Vitality:
    """Where `score` stands between the forget threshold (0 %) and the promote threshold
    (100 %), linearly, clamped to 0-100.

    Rounded down, so 100 % always means "at or above promote" and 0 % "at or below forget".
    """
    band = band_of(score, thresholds)
    span = thresholds.promote - thresholds.forget
    fraction = (score - thresholds.forget) / span
    percent = 100 if band == STRONG else max(0, min(99, math.floor(fraction * 100)))
    return Vitality(
        score=score,
        percent=percent,
        band=band,
        explanation=band_explanation(band, thresholds),
        scale=f"0 % is the forget threshold {thresholds.forget:g}, 100 % the promote "
        f"threshold {thresholds.promote:g}.",
    )


# --- The histogram -----------------------------------------------------------------------

BINS_PER_DECADE = 6
# Bin edges are 10^(k / BINS_PER_DECADE); the epsilon keeps a score on an edge (0.1) in the
# bin that starts there despite log10's rounding, identically in Python and in SQL.
EDGE_EPSILON = 1e-9
# The lowest decade the histogram draws (0.001): lower scores, and 0, share one bar that
# says so ("below 0.001"); they are all far under any forget threshold.
LOWEST_DECADE = -3


def score_bin(score: float) -> int | None:
    """The index k of the bin [10^(k/B), 10^((k+1)/B)) holding score; None for 0 or less."""
    require_finite("score", score)
    if score <= 0:
        return None
    return math.floor(math.log10(score) * BINS_PER_DECADE + EDGE_EPSILON)


def bin_sql(column: str) -> str:
    """score_bin in SQL (PostgreSQL and SQLite: LN and FLOOR), NULL for 0 or less."""
    return (
        f"CASE WHEN {column} > 0 THEN CAST(FLOOR(LN({column}) / LN(10.0) * "
        f"{BINS_PER_DECADE} + {EDGE_EPSILON!r}) AS INTEGER) END"
    )


def band_sql(column: str, thresholds: Thresholds) -> tuple[str, list[float]]:
    """band_of in SQL: the index of the score's band in BANDS, and the query parameters."""
    sql = (
        f"CASE WHEN {column} < %s THEN 0 WHEN {column} < %s THEN 1 "
        f"WHEN {column} <= %s THEN 2 WHEN {column} < %s THEN 3 ELSE 4 END"
    )
    t = thresholds
    return sql, [t.forget, t.danger_min, t.danger_max, t.promote]


def bin_edge(index: int) -> float:
    return 10 ** (index / BINS_PER_DECADE)


@dataclass(frozen=True)
class HistogramBin:
    """Memories scoring in [low, high); low is None for the bar of everything below `high`."""

    low: float | None
    high: float
    count: int


@dataclass(frozen=True)
class ScoreHistogram:
    """Live memories by decay score: log-scale bins over the decades [10^low_decade,
    10^high_decade), an optional bar of lower scores first, and exact counts per band."""

    bins: tuple[HistogramBin, ...]
    low_decade: int
    high_decade: int
    bands: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(b.count for b in self.bins)

    @property
    def underflow(self) -> HistogramBin | None:
        return self.bins[0] if self.bins and self.bins[0].low is None else None


def score_histogram(
    rows: Iterable[tuple[int | None, int, int]], thresholds: Thresholds
) -> ScoreHistogram:
    """The histogram of (bin index or None, band index, count) rows, as decay_histogram's
    query returns them.

    The scale is chosen from the data: from the decade of the lowest score (never above
    the forget threshold's, never below LOWEST_DECADE) to the decade above the highest
    (never below the promote threshold's), so every threshold is on it and no bin holds
    more than its own range. Scores under the lowest decade share one bar, drawn only
    when it holds some.
    """
    per_bin: dict[int | None, int] = {}
    bands = dict.fromkeys(BANDS, 0)
    for index, band, count in rows:
        per_bin[index] = per_bin.get(index, 0) + count
        bands[BANDS[band]] += count
    scored = [k for k, n in per_bin.items() if k is not None and n]
    low = math.floor(math.log10(thresholds.forget))
    high = math.floor(math.log10(thresholds.promote)) + 1
    if scored:
        low = min(low, math.floor(min(scored) / BINS_PER_DECADE))
        high = max(high, math.floor(max(scored) / BINS_PER_DECADE) + 1)
    low = max(low, LOWEST_DECADE)
    first, last = low * BINS_PER_DECADE, high * BINS_PER_DECADE
    below = sum(n for k, n in per_bin.items() if k is None or k < first)
    bins = [HistogramBin(None, bin_edge(first), below)] if below else []
    bins += [
        HistogramBin(bin_edge(k), bin_edge(k + 1), per_bin.get(k, 0)) for k in range(first, last)
    ]
    return ScoreHistogram(bins=tuple(bins), low_decade=low, high_decade=high, bands=bands)
