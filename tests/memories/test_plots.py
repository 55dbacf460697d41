"""memories.plots: inline SVG as pure functions of plain values (no database)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from datetime import date, timedelta

import pytest

from memories.decay import Thresholds
from memories.plots import (
    Threshold,
    decay_curve_svg,
    decay_histogram_svg,
    forecast_svg,
    nice_ceiling,
    reviews_per_day_svg,
)
from memories.scores import BANDS, band_of, score_bin, score_histogram

SVG = "{http://www.w3.org/2000/svg}"
THRESHOLDS = [
    Threshold(0.05, "forget", "forget"),
    Threshold(0.15, "review", "review"),
    Threshold(0.35, "review", "review"),
    Threshold(0.65, "promote", "promote"),
]
DAYS = [date(2025, 3, 1) + timedelta(days=n) for n in range(30)]


def histogram_of(scores: list[float]):
    """The histogram decay_histogram's query would return for these scores."""
    thresholds = Thresholds()
    return score_histogram(
        [(score_bin(s), BANDS.index(band_of(s, thresholds)), 1) for s in scores], thresholds
    )


def parse(markup: str) -> ET.Element:
    root = ET.fromstring(markup)
    assert root.tag == f"{SVG}svg"
    return root


def bars(root: ET.Element) -> list[ET.Element]:
    return [r for r in root.iter(f"{SVG}rect") if "plot-bar" in r.get("class", "")]


def thresholds(root: ET.Element) -> list[float]:
    return sorted(
        float(line.get("data-threshold"))
        for line in root.iter(f"{SVG}line")
        if line.get("data-threshold")
    )


@pytest.mark.parametrize(
    "markup",
    [
        reviews_per_day_svg([(day, n % 5) for n, day in enumerate(DAYS)]),
        forecast_svg([(day, 3) for day in DAYS[:14]]),
        decay_histogram_svg(histogram_of([0.02, 0.3, 0.7]), thresholds=THRESHOLDS),
        decay_curve_svg([(d / 4, 1.0 - d / 200) for d in range(121)], thresholds=THRESHOLDS),
    ],
    ids=["reviews", "forecast", "histogram", "curve"],
)
def test_every_plot_is_an_accessible_image(markup):
    root = parse(markup)
    assert root.get("role") == "img"
    assert root.get("aria-label")
    title = root.find(f"{SVG}title")
    assert title is not None and title.text
    assert root.get("viewBox")


def test_reviews_per_day_draws_one_bar_per_day_scaled_to_the_busiest():
    counts = [0] * 29 + [8]
    root = parse(reviews_per_day_svg(list(zip(DAYS, counts, strict=True))))
    drawn = bars(root)
    assert [int(bar.get("data-value")) for bar in drawn] == counts
    heights = [float(bar.get("height")) for bar in drawn]
    assert heights[-1] == max(heights) > 0 and heights[0] == 0
    assert "8 reviews in total" in root.get("aria-label")
    assert "Mar 30 with 8" in root.get("aria-label")


def test_an_empty_chart_says_so_and_divides_by_nothing():
    root = parse(reviews_per_day_svg([(day, 0) for day in DAYS]))
    assert "no reviews yet" in root.get("aria-label")
    assert all(float(bar.get("height")) == 0 for bar in bars(root))
    assert parse(decay_curve_svg([], thresholds=THRESHOLDS)).get("aria-label").endswith("no data.")


def test_the_forecast_marks_today():
    root = parse(forecast_svg([(day, n) for n, day in enumerate(DAYS[:14])]))
    drawn = bars(root)
    assert len(drawn) == 14
    assert "plot-bar-now" in drawn[0].get("class")
    assert "0 cards due today, 91 over the period" in root.get("aria-label")


def test_the_histogram_marks_every_threshold_and_the_review_zone():
    histogram = histogram_of([0.02] * 4 + [0.04] * 2 + [3.0] * 3)
    root = parse(decay_histogram_svg(histogram, thresholds=THRESHOLDS))
    assert thresholds(root) == [0.05, 0.15, 0.35, 0.65]
    assert [int(b.get("data-value")) for b in bars(root)] == [b.count for b in histogram.bins]
    zone = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "plot-zone"]
    assert len(zone) == 1
    label = root.get("aria-label")
    assert "9 memories (6 faint, 3 strong)" in label
    # The line of a threshold sits where its score falls on the (logarithmic) x axis.
    left = float(bars(root)[0].get("x")) - 1
    width = sum(float(b.get("width")) + 2 for b in bars(root))
    line = next(ln for ln in root.iter(f"{SVG}line") if ln.get("data-threshold") == "0.65")
    low, high = histogram.low_decade, histogram.high_decade
    position = (math.log10(0.65) - low) / (high - low)
    assert float(line.get("x1")) == pytest.approx(left + width * position, abs=0.2)


def test_the_decay_curve_crosses_its_thresholds_where_the_score_does():
    points = [(d / 4, 0.8 * 0.5 ** (d / 4 / 3)) for d in range(121)]
    root = parse(decay_curve_svg(points, thresholds=THRESHOLDS))
    assert thresholds(root) == [0.05, 0.15, 0.35, 0.65]
    polyline = root.find(f"{SVG}polyline")
    assert len(polyline.get("points").split()) == 121
    label = root.get("aria-label")
    assert label.startswith("Decay score over the next 30 days: 0.80 now")
    assert label.endswith(
        "falls below promote 0.65 after 1 day, review 0.35 after 3.75 days, "
        "review 0.15 after 7.25 days, forget 0.05 after 12.25 days."
    )


def test_text_is_escaped():
    markup = reviews_per_day_svg([(DAYS[0], 1)], title='<script>alert("x")</script> & co')
    assert "<script>" not in markup
    root = parse(markup)
    assert root.find(f"{SVG}title").text == '<script>alert("x")</script> & co'
    hostile = Threshold(0.5, '<b onload="x">', "review")
    markup = decay_curve_svg([(0, 1.0), (1, 0.4)], thresholds=[hostile])
    assert "<b " not in markup
    parse(markup)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 1.0), (1, 1.0), (3, 5.0), (7, 10.0), (12, 20.0), (0.3, 0.5), (240, 250.0)],
)
def test_nice_ceiling(value, expected):
    assert nice_ceiling(value) == expected


def test_a_strong_memory_runs_dotted_along_the_top_of_the_curve():
    points = [(d / 4, 4.0 * 0.5 ** (d / 4 / 3)) for d in range(121)]
    root = parse(decay_curve_svg(points, thresholds=THRESHOLDS))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "4.00 now, above the scale" in texts
    ys = [float(pair.split(",")[1]) for pair in root.find(f"{SVG}polyline").get("points").split()]
    assert min(ys) == ys[0]  # the line enters at the top, not off the chart
    # Above the scale (the 6 days it takes 4.00 to halve twice, to 1) it is a dotted line
    # along the top, not a solid one pretending the score stays at 1.
    over = next(ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "plot-line-over")
    assert float(over.get("y1")) == float(over.get("y2")) == ys[0]
    xs = [float(pair.split(",")[0]) for pair in root.find(f"{SVG}polyline").get("points").split()]
    assert float(over.get("x2")) == pytest.approx(xs[0])
    assert xs[0] == pytest.approx(40 + 506 * 6 / 30, abs=0.2)
    assert "falls below promote 0.65 after 8 days" in root.get("aria-label")
