"""Inline SVG plots for the dashboard, drawn on the server (no chart library, no CDN).

Pure functions over plain values returning SVG markup strings: no ORM, no settings, no
clock. Every plot is an <svg role="img"> with a <title> and an aria-label that says in
words what the picture shows, so a screen reader gets the figure too. Colours come from
CSS classes (static/css/engram.css), with presentation attributes as a fallback.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from html import escape

WIDTH = 560
HEIGHT = 240
LEFT, RIGHT, TOP, BOTTOM = 40, 14, 16, 34
PLOT_W = WIDTH - LEFT - RIGHT
PLOT_H = HEIGHT - TOP - BOTTOM
ACCENT = "#3558d6"
MUTED = "#5b6475"


@dataclass(frozen=True)
class Threshold:
    """A lifecycle threshold to mark on a decay plot: its score, a short name and a kind
    (forget, review, promote) that picks its colour."""

    value: float
    label: str
    kind: str


def _n(value: float) -> str:
    """A coordinate with one decimal, without a trailing .0."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _score(value: float) -> str:
    return f"{value:.2f}"


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k that is at least value (1 for empty plots)."""
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        candidate = step * 10**exponent
        if candidate >= value - 1e-12:
            return candidate
    return 10.0 ** (exponent + 1)


def _svg(kind: str, title: str, label: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot plot-{escape(kind)}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}" '
        f'preserveAspectRatio="xMidYMid meet">'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )


def _y_axis(top_value: float, *, integer: bool) -> list[str]:
    """Grid lines and labels at 0, half and the top of the scale."""
    parts = []
    for fraction in (0.0, 0.5, 1.0):
        value = top_value * fraction
        y = TOP + PLOT_H * (1 - fraction)
        text = f"{value:g}" if not integer else f"{round(value):d}"
        if integer and fraction == 0.5 and value != round(value):
            continue
        parts.append(
            f'<line class="plot-grid" x1="{LEFT}" y1="{_n(y)}" x2="{WIDTH - RIGHT}" '
            f'y2="{_n(y)}" stroke="#e3e6ec" stroke-width="1"/>'
        )
        parts.append(
            f'<text class="plot-label" x="{LEFT - 6}" y="{_n(y + 4)}" text-anchor="end" '
            f'font-size="12" fill="{MUTED}">{escape(text)}</text>'
        )
    return parts


def _day_label(day: date) -> str:
    return f"{day:%b} {day.day}"


def _bars(
    values: Sequence[tuple[str, int, str]],  # (axis label, value, tooltip)
    *,
    label_every: int,
    highlight_first: bool = False,
) -> list[str]:
    """Axis labels go every `label_every` bars, counted from the first bar when it is
    highlighted (today, in a forecast), else back from the last one (the newest day)."""
    top_value = nice_ceiling(max((value for _, value, _ in values), default=0))
    parts = _y_axis(top_value, integer=True)
    count = max(len(values), 1)
    band = PLOT_W / count
    bar_w = max(band * 0.72, 1.0)
    for index, (axis_label, value, tooltip) in enumerate(values):
        x = LEFT + band * index + (band - bar_w) / 2
        height = PLOT_H * value / top_value
        y = TOP + PLOT_H - height
        css = "plot-bar plot-bar-now" if highlight_first and index == 0 else "plot-bar"
        parts.append(
            f'<rect class="{css}" x="{_n(x)}" y="{_n(y)}" width="{_n(bar_w)}" '
            f'height="{_n(height)}" rx="2" fill="{ACCENT}" data-value="{value}">'
            f"<title>{escape(tooltip)}</title></rect>"
        )
        step = index if highlight_first else count - 1 - index
        if step % label_every == 0:
            parts.append(
                f'<text class="plot-label" x="{_n(LEFT + band * index + band / 2)}" '
                f'y="{HEIGHT - 10}" text-anchor="middle" font-size="12" fill="{MUTED}">'
                f"{escape(axis_label)}</text>"
            )
    parts.append(
        f'<line class="plot-axis" x1="{LEFT}" y1="{TOP + PLOT_H}" x2="{WIDTH - RIGHT}" '
        f'y2="{TOP + PLOT_H}" stroke="{MUTED}" stroke-width="1"/>'
    )
    return parts


def _plural(count: int, word: str, plural: str = "") -> str:
    return f"{count} {word}" if count == 1 else f"{count} {plural or word + 's'}"


def reviews_per_day_svg(
    days: Sequence[tuple[date, int]], *, title: str = "Reviews per day, last 30 days"
) -> str:
    """Bar chart of grades per day, oldest first (review_statistics().reviews_per_day)."""
    total = sum(n for _, n in days)
    if total:
        busiest_day, busiest = max(days, key=lambda pair: (pair[1], pair[0]))
        summary = (
            f"{title}: {_plural(total, 'review')} in total; the busiest day was "
            f"{_day_label(busiest_day)} with {busiest}."
        )
    else:
        summary = f"{title}: no reviews yet."
    bars = [(_day_label(day), n, f"{_day_label(day)}: {_plural(n, 'review')}") for day, n in days]
    return _svg("reviews", title, summary, _bars(bars, label_every=7))


def forecast_svg(
    days: Sequence[tuple[date, int]], *, title: str = "Cards due per day, next 14 days"
) -> str:
    """Bar chart of cards due on each coming day, today first (review_statistics().forecast)."""
    total = sum(n for _, n in days)
    today = days[0][1] if days else 0
    summary = f"{title}: {_plural(today, 'card')} due today, {total} over the period."
    bars = [
        (
            "today" if index == 0 else _day_label(day),
            n,
            f"{'Today' if index == 0 else _day_label(day)}: {_plural(n, 'card')} due",
        )
        for index, (day, n) in enumerate(days)
    ]
    return _svg("forecast", title, summary, _bars(bars, label_every=3, highlight_first=True))


def _threshold_class(kind: str) -> str:
    return f"plot-threshold plot-threshold-{escape(kind)}"


THRESHOLD_COLOURS = {"forget": "#b3261e", "review": "#b25e00", "promote": "#1e7d32"}


def decay_histogram_svg(
    counts: Sequence[int],
    *,
    bin_width: float,
    thresholds: Sequence[Threshold],
    title: str = "Memories by decay score",
) -> str:
    """Histogram of memories by decay score with the lifecycle thresholds as vertical lines.

    counts[i] holds the memories scoring in [i * bin_width, (i + 1) * bin_width); the last
    bin also holds every higher score (scores above 1 come from uses and strength).
    """
    bins = max(len(counts), 1)
    x_max = bins * bin_width
    total = sum(counts)
    top_value = nice_ceiling(max(counts, default=0))
    parts = _y_axis(top_value, integer=True)

    def x_of(score: float) -> float:
        return LEFT + PLOT_W * min(max(score, 0.0), x_max) / x_max

    zone = [t for t in thresholds if t.kind == "review"]
    if len(zone) >= 2:
        low, high = min(t.value for t in zone), max(t.value for t in zone)
        parts.append(
            f'<rect class="plot-zone" x="{_n(x_of(low))}" y="{TOP}" '
            f'width="{_n(x_of(high) - x_of(low))}" height="{PLOT_H}" fill="#fff4e0"/>'
        )
    band = PLOT_W / bins
    for index, count in enumerate(counts):
        low = index * bin_width
        last = index == len(counts) - 1
        span = f"{_score(low)} or more" if last else f"{_score(low)} to {_score(low + bin_width)}"
        height = PLOT_H * count / top_value
        tooltip = f"Score {span}: {_plural(count, 'memory', 'memories')}"
        parts.append(
            f'<rect class="plot-bar" x="{_n(LEFT + band * index + 1)}" '
            f'y="{_n(TOP + PLOT_H - height)}" width="{_n(max(band - 2, 1.0))}" '
            f'height="{_n(height)}" fill="{ACCENT}" data-value="{count}">'
            f"<title>{escape(tooltip)}</title>"
            "</rect>"
        )
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        if tick > x_max:
            continue
        parts.append(
            f'<text class="plot-label" x="{_n(x_of(tick))}" y="{HEIGHT - 10}" '
            f'text-anchor="middle" font-size="12" fill="{MUTED}">{tick:g}</text>'
        )
    parts.append(
        f'<line class="plot-axis" x1="{LEFT}" y1="{TOP + PLOT_H}" x2="{WIDTH - RIGHT}" '
        f'y2="{TOP + PLOT_H}" stroke="{MUTED}" stroke-width="1"/>'
    )
    for offset, threshold in enumerate(sorted(thresholds, key=lambda t: t.value)):
        x = x_of(threshold.value)
        colour = THRESHOLD_COLOURS.get(threshold.kind, MUTED)
        parts.append(
            f'<line class="{_threshold_class(threshold.kind)}" x1="{_n(x)}" y1="{TOP}" '
            f'x2="{_n(x)}" y2="{TOP + PLOT_H}" stroke="{colour}" stroke-width="1.5" '
            f'stroke-dasharray="4 3" data-threshold="{threshold.value:g}">'
            f"<title>{escape(threshold.label)} threshold {threshold.value:g}</title></line>"
        )
        parts.append(
            f'<text class="plot-threshold-label" x="{_n(x + 3)}" y="{TOP + 10 + 12 * offset}" '
            f'font-size="11" fill="{colour}">{escape(threshold.label)} {threshold.value:g}'
            "</text>"
        )
    marks = ", ".join(f"{t.label} {t.value:g}" for t in sorted(thresholds, key=lambda t: t.value))
    if total:
        below = _below_share(counts, bin_width, thresholds)
        summary = f"{title}: {_plural(total, 'memory', 'memories')}{below}; "
        summary += f"thresholds marked: {marks}."
    else:
        summary = f"{title}: no live memories; thresholds marked: {marks}."
    return _svg("histogram", title, summary, parts)


def _below_share(counts: Sequence[int], bin_width: float, thresholds: Sequence[Threshold]) -> str:
    """', N below the forget threshold' when a bin edge falls on that threshold."""
    forget = next((t for t in thresholds if t.kind == "forget"), None)
    if forget is None:
        return ""
    edge = forget.value / bin_width
    if abs(edge - round(edge)) > 1e-9:
        return ""
    below = sum(counts[: round(edge)])
    return f", {below} below the {forget.label} threshold"


def decay_curve_svg(
    points: Sequence[tuple[float, float]],
    *,
    thresholds: Sequence[Threshold],
    title: str = "Decay score over the next 30 days",
) -> str:
    """Line chart of (days from now, score) with the thresholds as horizontal lines.

    Days run along x, the score up y from 0 to 1 (higher scores run along the top); the
    danger zone between the review thresholds is shaded, the current score is a dot at 0.
    """
    days = max((x for x, _ in points), default=0.0) or 1.0
    # The scale stops at 1: every threshold lies below it, and a well-used memory (score
    # 4 or more) would otherwise squash them all into the bottom few pixels.
    top_value = 1.0
    parts = _y_axis(top_value, integer=False)

    def x_of(day: float) -> float:
        return LEFT + PLOT_W * day / days

    def y_of(score: float) -> float:
        return TOP + PLOT_H * (1 - min(max(score, 0.0), top_value) / top_value)

    zone = [t for t in thresholds if t.kind == "review"]
    if len(zone) >= 2:
        low, high = min(t.value for t in zone), max(t.value for t in zone)
        parts.append(
            f'<rect class="plot-zone" x="{LEFT}" y="{_n(y_of(high))}" width="{PLOT_W}" '
            f'height="{_n(y_of(low) - y_of(high))}" fill="#fff4e0"/>'
        )
    for index, threshold in enumerate(sorted(thresholds, key=lambda t: t.value)):
        y = y_of(threshold.value)
        colour = THRESHOLD_COLOURS.get(threshold.kind, MUTED)
        # Alternate label ends, so close thresholds (0.05, 0.15) do not overprint.
        label_x, anchor = (WIDTH - RIGHT - 2, "end") if index % 2 == 0 else (LEFT + 4, "start")
        parts.append(
            f'<line class="{_threshold_class(threshold.kind)}" x1="{LEFT}" y1="{_n(y)}" '
            f'x2="{WIDTH - RIGHT}" y2="{_n(y)}" stroke="{colour}" stroke-width="1.5" '
            f'stroke-dasharray="4 3" data-threshold="{threshold.value:g}">'
            f"<title>{escape(threshold.label)} threshold {threshold.value:g}</title></line>"
        )
        parts.append(
            f'<text class="plot-threshold-label" x="{label_x}" y="{_n(y - 3)}" '
            f'text-anchor="{anchor}" font-size="11" fill="{colour}">'
            f"{escape(threshold.label)} {threshold.value:g}</text>"
        )
    for tick in (0.0, days / 2, days):
        parts.append(
            f'<text class="plot-label" x="{_n(x_of(tick))}" y="{HEIGHT - 10}" '
            f'text-anchor="middle" font-size="12" fill="{MUTED}">'
            f"{'now' if tick == 0 else f'{tick:g} d'}</text>"
        )
    parts.append(
        f'<line class="plot-axis" x1="{LEFT}" y1="{TOP + PLOT_H}" x2="{WIDTH - RIGHT}" '
        f'y2="{TOP + PLOT_H}" stroke="{MUTED}" stroke-width="1"/>'
    )
    if points:
        line = " ".join(f"{_n(x_of(x))},{_n(y_of(y))}" for x, y in points)
        parts.append(
            f'<polyline class="plot-line" points="{line}" fill="none" stroke="{ACCENT}" '
            'stroke-width="2.5" stroke-linejoin="round"/>'
        )
        x0, y0 = points[0]
        parts.append(
            f'<circle class="plot-dot" cx="{_n(x_of(x0))}" cy="{_n(y_of(y0))}" r="4" '
            f'fill="{ACCENT}"><title>Now: {_score(y0)}</title></circle>'
        )
        if y0 > top_value:
            parts.append(
                f'<text class="plot-label" x="{_n(x_of(x0) + 8)}" y="{TOP + 12}" '
                f'font-size="12" fill="{MUTED}">{_score(y0)} now, above the scale</text>'
            )
    return _svg("curve", title, _curve_summary(title, points, thresholds), parts)


def _curve_summary(
    title: str, points: Sequence[tuple[float, float]], thresholds: Sequence[Threshold]
) -> str:
    if not points:
        return f"{title}: no data."
    start, end = points[0][1], points[-1][1]
    text = f"{title}: {_score(start)} now, {_score(end)} in {points[-1][0]:g} days"
    crossings = []
    for threshold in sorted(thresholds, key=lambda t: -t.value):
        if start < threshold.value:
            continue
        crossing = next((x for x, y in points if y < threshold.value), None)
        if crossing is not None:
            unit = "day" if crossing == 1 else "days"
            crossings.append(f"{threshold.label} {threshold.value:g} after {crossing:g} {unit}")
    if crossings:
        text += "; falls below " + ", ".join(crossings)
    return text + "."
