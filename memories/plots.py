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
from datetime import date, timedelta
from html import escape

from memories.scores import ScoreHistogram

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


def duration_text(ms: float | None) -> str:
    """An answer time or a day's review time for people: 850 ms, 8.2 s, 3 min 10 s,
    1 h 5 min; "—" for none (no timed answer)."""
    if ms is None:
        return "—"
    if ms < 1000:
        return f"{round(ms)} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{round(seconds)} s"
    minutes, seconds = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def reviews_per_day_svg(
    days: Sequence[tuple[date, int]],
    *,
    times: Sequence[tuple[date, int | None]] = (),
    title: str = "Reviews per day, last 30 days",
) -> str:
    """Bar chart of grades per day, oldest first (review_statistics().reviews_per_day); with
    `times` (the day's total answer time in ms, review_statistics().time_per_day) each bar's
    tooltip gives it too."""
    spent = dict(times)
    total = sum(n for _, n in days)
    if total:
        busiest_day, busiest = max(days, key=lambda pair: (pair[1], pair[0]))
        summary = (
            f"{title}: {_plural(total, 'review')} in total; the busiest day was "
            f"{_day_label(busiest_day)} with {busiest}."
        )
    else:
        summary = f"{title}: no reviews yet."
    bars = [
        (
            _day_label(day),
            n,
            f"{_day_label(day)}: {_plural(n, 'review')}"
            + (f", {duration_text(spent[day])}" if spent.get(day) is not None else ""),
        )
        for day, n in days
    ]
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


def _bound(value: float) -> str:
    """A bin edge: three significant digits (0.0464, 0.316, 1.47, 10)."""
    return f"{value:.3g}"


def decay_histogram_svg(
    histogram: ScoreHistogram,
    *,
    thresholds: Sequence[Threshold],
    title: str = "Memories by decay score",
) -> str:
    """Histogram of memories by decay score on a logarithmic axis (memories.scores picks
    its decades from the data), with the lifecycle thresholds as vertical lines.

    Every bin spans the same factor (a sixth of a decade), so the bars are equally wide and
    their heights compare; scores under the axis, if any, are one bar on the left that
    says so ("below 0.001"), apart from the axis.
    """
    bins = histogram.bins
    count = max(len(bins), 1)
    band = PLOT_W / count
    log_left = LEFT + (band if histogram.underflow else 0.0)
    low, high = histogram.low_decade, histogram.high_decade
    top_value = nice_ceiling(max((b.count for b in bins), default=0))
    parts = _y_axis(top_value, integer=True)

    def x_of(score: float) -> float:
        if score <= 0:
            return log_left
        position = (math.log10(score) - low) / (high - low)
        return log_left + (LEFT + PLOT_W - log_left) * min(max(position, 0.0), 1.0)

    zone = [t for t in thresholds if t.kind == "review"]
    if len(zone) >= 2:
        zone_low, zone_high = min(t.value for t in zone), max(t.value for t in zone)
        parts.append(
            f'<rect class="plot-zone" x="{_n(x_of(zone_low))}" y="{TOP}" '
            f'width="{_n(x_of(zone_high) - x_of(zone_low))}" height="{PLOT_H}" fill="#fff4e0"/>'
        )
    for index, item in enumerate(bins):
        if item.low is None:
            span, css = f"below {_bound(item.high)}", "plot-bar plot-bar-under"
        else:
            span, css = f"{_bound(item.low)} to {_bound(item.high)}", "plot-bar"
        height = PLOT_H * item.count / top_value
        tooltip = f"Score {span}: {_plural(item.count, 'memory', 'memories')}"
        parts.append(
            f'<rect class="{css}" x="{_n(LEFT + band * index + 1)}" '
            f'y="{_n(TOP + PLOT_H - height)}" width="{_n(max(band - 2, 1.0))}" '
            f'height="{_n(height)}" fill="{ACCENT}" data-value="{item.count}" '
            f'data-low="{"" if item.low is None else _bound(item.low)}" '
            f'data-high="{_bound(item.high)}"><title>{escape(tooltip)}</title></rect>'
        )
    if histogram.underflow:
        parts.append(
            f'<text class="plot-label" x="{_n(LEFT + band / 2)}" y="{HEIGHT - 10}" '
            f'text-anchor="middle" font-size="12" fill="{MUTED}">'
            f"&lt;{_bound(histogram.underflow.high)}</text>"
        )
    for decade in range(low, high + 1):
        tick = 10.0**decade
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
    return _svg("histogram", title, _histogram_summary(title, histogram, thresholds), parts)


def _histogram_summary(
    title: str, histogram: ScoreHistogram, thresholds: Sequence[Threshold]
) -> str:
    marks = ", ".join(f"{t.label} {t.value:g}" for t in sorted(thresholds, key=lambda t: t.value))
    scale = (
        f"logarithmic scale from {10.0**histogram.low_decade:g} to "
        f"{10.0**histogram.high_decade:g}, each step a factor of 10"
    )
    total = histogram.total
    if not total:
        return f"{title}: no live memories; {scale}; thresholds marked: {marks}."
    bands = ", ".join(f"{n} {name}" for name, n in histogram.bands.items() if n)
    busiest = max(histogram.bins, key=lambda b: b.count)
    span = (
        f"below {_bound(busiest.high)}"
        if busiest.low is None
        else f"from {_bound(busiest.low)} to {_bound(busiest.high)}"
    )
    return (
        f"{title}: {_plural(total, 'memory', 'memories')} ({bands}); the most, "
        f"{busiest.count}, score {span}; {scale}; thresholds marked: {marks}."
    )


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
        over, inside = _split_at_top(points, top_value)
        if inside:
            line = " ".join(f"{_n(x_of(x))},{_n(y_of(y))}" for x, y in inside)
            parts.append(
                f'<polyline class="plot-line" points="{line}" fill="none" stroke="{ACCENT}" '
                'stroke-width="2.5" stroke-linejoin="round"/>'
            )
        if over:
            # Above the scale the curve is not drawn as if it stayed at the top: a dotted
            # line along the edge says "higher than this" for as long as it is.
            end = inside[0][0] if inside else over[-1][0]
            parts.append(
                f'<line class="plot-line-over" x1="{_n(x_of(over[0][0]))}" y1="{TOP}" '
                f'x2="{_n(x_of(end))}" y2="{TOP}" stroke="{ACCENT}" stroke-width="2.5" '
                'stroke-dasharray="2 4"/>'
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


def _split_at_top(
    points: Sequence[tuple[float, float]], top: float
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """The points above `top`, and the rest starting where the curve comes down to `top`
    (interpolated between the two points around it). A decay curve only falls."""
    first = next((i for i, (_, y) in enumerate(points) if y <= top), len(points))
    over, inside = list(points[:first]), list(points[first:])
    if over and inside:
        (xa, ya), (xb, yb) = over[-1], inside[0]
        inside.insert(0, (xa + (xb - xa) * (ya - top) / (ya - yb), top))
    return over, inside


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


# --- The year's heatmap ------------------------------------------------------------------

HEAT_CELL, HEAT_STEP = 11, 13
HEAT_LEFT, HEAT_TOP, HEAT_BOTTOM = 30, 18, 26
HEAT_COLOURS = ("#ebedf0", "#c6d2f5", "#8ea5eb", "#5677dc", "#2643ad")
WEEKDAY_LABELS = {0: "Mon", 2: "Wed", 4: "Fri"}


@dataclass(frozen=True)
class HeatCell:
    """One day of the heatmap: its week column, weekday row (Monday 0) and colour level
    (0 for no review, else 1-4 by its share of the busiest day)."""

    day: date
    count: int
    column: int
    row: int
    level: int


def heat_level(count: int, busiest: int) -> int:
    """0 for none, else 1-4: a quarter of the busiest day's reviews per level."""
    return 0 if count <= 0 or busiest <= 0 else max(1, min(4, math.ceil(4 * count / busiest)))


def heatmap_cells(days: Sequence[tuple[date, int]]) -> list[HeatCell]:
    """The days (oldest first, consecutive) laid out in weeks: a column per week from the
    Monday on or before the first day, a row per weekday."""
    if not days:
        return []
    monday = days[0][0] - timedelta(days=days[0][0].weekday())
    busiest = max(n for _, n in days)
    return [
        HeatCell(day, n, (day - monday).days // 7, day.weekday(), heat_level(n, busiest))
        for day, n in days
    ]


def longest_streak(days: Sequence[tuple[date, int]]) -> int:
    """The most consecutive days with a review among `days` (oldest first, consecutive)."""
    best = run = 0
    for _, n in days:
        run = run + 1 if n else 0
        best = max(best, run)
    return best


def heatmap_summary(days: Sequence[tuple[date, int]], *, period: str = "the last year") -> str:
    """'214 reviews on 61 days in the last year, longest streak 9 days'."""
    total = sum(n for _, n in days)
    if not total:
        return f"No reviews in {period}"
    active = sum(1 for _, n in days if n)
    return (
        f"{_plural(total, 'review')} on {_plural(active, 'day')} in {period}, "
        f"longest streak {_plural(longest_streak(days), 'day')}"
    )


def heatmap_svg(
    days: Sequence[tuple[date, int]], *, title: str = "Reviews per day, last 365 days"
) -> str:
    """A GitHub-style calendar of reviews per day: a square per day, a column per week,
    darker for more reviews, each with its date and count as a tooltip; months along the
    top, Mon/Wed/Fri down the side, a Less-More legend below. Drawn at its natural size
    (the page scrolls it sideways inside its card on a phone)."""
    cells = heatmap_cells(days)
    columns = (cells[-1].column + 1) if cells else 1
    width = HEAT_LEFT + columns * HEAT_STEP + 4
    height = HEAT_TOP + 7 * HEAT_STEP + HEAT_BOTTOM
    summary = heatmap_summary(days)
    parts = [f"<desc>{escape(summary)}.</desc>"]
    for row, name in WEEKDAY_LABELS.items():
        parts.append(
            f'<text class="plot-label" x="{HEAT_LEFT - 4}" '
            f'y="{HEAT_TOP + row * HEAT_STEP + HEAT_CELL - 1}" text-anchor="end" '
            f'font-size="10" fill="{MUTED}">{name}</text>'
        )
    last_month_column = -3
    for cell in cells:
        # A month's name above the week holding its 1st (the first partial month too when
        # it has room), never closer than three weeks to the previous name.
        starts = cell.day.day == 1 or cell is cells[0]
        if starts and cell.column - last_month_column >= 3 and cell.column < columns - 1:
            parts.append(
                f'<text class="plot-label" x="{HEAT_LEFT + cell.column * HEAT_STEP}" '
                f'y="{HEAT_TOP - 6}" font-size="10" fill="{MUTED}">{cell.day:%b}</text>'
            )
            last_month_column = cell.column
        tooltip = f"{cell.day:%a} {_day_label(cell.day)}, {cell.day.year}: "
        tooltip += _plural(cell.count, "review") if cell.count else "no reviews"
        parts.append(
            f'<rect class="heat heat-{cell.level}" x="{HEAT_LEFT + cell.column * HEAT_STEP}" '
            f'y="{HEAT_TOP + cell.row * HEAT_STEP}" width="{HEAT_CELL}" height="{HEAT_CELL}" '
            f'rx="2" fill="{HEAT_COLOURS[cell.level]}" data-date="{cell.day.isoformat()}" '
            f'data-count="{cell.count}"><title>{escape(tooltip)}</title></rect>'
        )
    legend_y = HEAT_TOP + 7 * HEAT_STEP + 8
    legend_x = width - 4 - 5 * HEAT_STEP - 30
    parts.append(
        f'<text class="plot-label" x="{legend_x - 4}" y="{legend_y + HEAT_CELL - 1}" '
        f'text-anchor="end" font-size="10" fill="{MUTED}">Less</text>'
    )
    for level, colour in enumerate(HEAT_COLOURS):
        parts.append(
            f'<rect class="heat heat-{level}" x="{legend_x + level * HEAT_STEP}" '
            f'y="{legend_y}" width="{HEAT_CELL}" height="{HEAT_CELL}" rx="2" fill="{colour}"/>'
        )
    parts.append(
        f'<text class="plot-label" x="{legend_x + 5 * HEAT_STEP + 2}" '
        f'y="{legend_y + HEAT_CELL - 1}" font-size="10" fill="{MUTED}">More</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot plot-heatmap" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}: {escape(summary)}.">'
        f"<title>{escape(title)}</title>" + "".join(parts) + "</svg>"
    )
