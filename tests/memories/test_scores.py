"""memories.scores: a decay score as people read it, and the histogram's bins (pure, no
database; issue 17, item 9)."""

from __future__ import annotations

import math

import pytest

from memories.decay import Thresholds
from memories.scores import (
    BANDS,
    LOWEST_DECADE,
    band_of,
    score_bin,
    score_histogram,
    score_text,
    vitality,
)

SEED = Thresholds()  # seed 003's: forget 0.05, review zone 0.15-0.35, promote 0.65


def rows_of(scores: list[float], thresholds: Thresholds = SEED) -> list[tuple]:
    """What decay_histogram's grouped query returns for these scores (one row each)."""
    return [(score_bin(s), BANDS.index(band_of(s, thresholds)), 1) for s in scores]


@pytest.mark.parametrize(
    ("score", "percent", "band"),
    [
        (0.0, 0, "faint"),
        (0.049, 0, "faint"),
        (0.05, 0, "weak"),  # forgetting is strictly below the threshold
        (0.149, 16, "weak"),
        (0.15, 16, "fading"),  # the review zone includes both ends
        (0.25, 33, "fading"),
        (0.35, 50, "fading"),
        (0.351, 50, "steady"),
        (0.649, 99, "steady"),  # rounded down: 100 % is kept for "at or above promote"
        (0.65, 100, "strong"),
        (7.31, 100, "strong"),
    ],
)
def test_vitality_places_the_score_between_forget_and_promote(score, percent, band):
    shown = vitality(score, SEED)
    assert (shown.percent, shown.band) == (percent, band)
    assert shown.text == f"{percent} % · {band}"


def test_the_scores_of_the_complaint_read_as_strong_with_the_raw_score_on_hover():
    # "lists show 2.04, 4.74, 7.31 while thresholds and plots run from 0 to 1"
    for score in (2.04, 4.74, 7.31):
        shown = vitality(score, SEED)
        assert shown.text == "100 % · strong"
        assert shown.tooltip.startswith(f"Decay score {score:.2f}. At or above the promote")
        assert "0 % is the forget threshold 0.05, 100 % the promote threshold 0.65." in (
            shown.tooltip
        )
        assert "no upper limit" in shown.tooltip


def test_each_band_explains_itself_with_its_thresholds():
    assert vitality(0.02, SEED).explanation.startswith("Below the forget threshold 0.05")
    assert "review zone 0.15 to 0.35" in vitality(0.1, SEED).explanation
    assert vitality(0.2, SEED).explanation.startswith("In the review zone 0.15 to 0.35")
    assert "below the promote threshold 0.65" in vitality(0.5, SEED).explanation


def test_vitality_follows_other_thresholds():
    custom = Thresholds(forget=0.1, danger_min=0.2, danger_max=0.4, promote=0.9)
    shown = vitality(0.5, custom)
    assert (shown.percent, shown.band) == (50, "steady")
    assert shown.scale == "0 % is the forget threshold 0.1, 100 % the promote threshold 0.9."
    assert vitality(0.09, custom).band == "faint"


@pytest.mark.parametrize(
    ("score", "text"),
    [(0, "0"), (2.04, "2.04"), (0.355, "0.35"), (0.05, "0.05"), (0.001234, "0.00123")],
)
def test_the_raw_score_is_printed_for_people(score, text):
    assert score_text(score) == text


def test_a_score_that_is_not_a_number_is_refused():
    with pytest.raises(ValueError, match="score"):
        vitality(math.nan, SEED)


@pytest.mark.parametrize(
    ("score", "index"),
    [(1.0, 0), (10.0, 6), (0.1, -6), (0.0999, -7), (0.65, -2), (0.682, -1), (0.0, None)],
)
def test_a_score_falls_in_the_log_bin_that_starts_at_or_below_it(score, index):
    assert score_bin(score) == index


def test_a_skewed_distribution_spreads_over_its_bins_instead_of_piling_up():
    # Most memories well used (scores 1-8), a few fading: the old bins of 0.05 up to 1 put
    # 11 of these 13 in their top bin.
    scores = [2.04, 4.74, 7.31, 1.05, 2.13, 3.3, 5.5, 6.1, 1.2, 1.9, 2.5, 0.6, 0.3]
    histogram = score_histogram(rows_of(scores), SEED)
    assert histogram.total == 13
    assert (histogram.low_decade, histogram.high_decade) == (-2, 1)  # 0.01 to 10
    assert histogram.underflow is None
    assert len(histogram.bins) == 18  # six a decade
    assert max(b.count for b in histogram.bins) <= 3
    assert histogram.bins[-1].count == 1  # 7.31 alone in 6.81-10
    for score in scores:  # each score counted once, in the bin whose range holds it
        holding = [b for b in histogram.bins if b.low <= score < b.high]
        assert len(holding) == 1 and holding[0].count >= 1
    assert histogram.bands == {"faint": 0, "weak": 0, "fading": 1, "steady": 1, "strong": 11}


def test_the_scale_reaches_every_threshold_even_without_memories_there():
    histogram = score_histogram(rows_of([0.3, 0.4]), SEED)
    assert 10.0**histogram.low_decade <= SEED.forget
    assert 10.0**histogram.high_decade > SEED.promote
    empty = score_histogram([], SEED)
    assert (empty.low_decade, empty.high_decade, empty.total) == (-2, 0, 0)
    assert len(empty.bins) == 12


def test_the_scale_widens_to_the_data_and_says_what_it_leaves_below():
    histogram = score_histogram(rows_of([0.0, 1e-9, 0.004, 0.5, 20.0]), SEED)
    assert (histogram.low_decade, histogram.high_decade) == (LOWEST_DECADE, 2)
    under = histogram.underflow
    assert under is not None and (under.low, under.high, under.count) == (None, 0.001, 2)
    assert histogram.bins[1].low == pytest.approx(0.001)
    assert sum(b.count for b in histogram.bins[1:]) == 3
    assert histogram.bands["faint"] == 3
