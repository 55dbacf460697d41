"""The growth plot of `manage.py bench --plot`: figures against corpus size, one SVG.

Every `manage.py bench` run saves its table as JSON (var/bench/<engine>-<size>-<ns>.json);
this module reads those files and draws small multiples (recall latency, due queue,
decay sweep, size per 1,000 memories) with a logarithmic size axis and one line per
engine, so how the cost grows from 10,000 to 1,000,000 memories is seen at a glance.
Pure: plain values in, SVG text out (no ORM, no settings).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from html import escape
from pathlib import Path
from typing import Any

# (panel title, section, measure, which of "p50 / p95 / p99" or None, unit)
PANELS = (
    ("Recall over HTTP, p95", "recall", "HTTP POST /recall p50 / p95 / p99", 1, "ms"),
    ("Recall in process, p50", "recall", "in process p50 / p95 / p99", 0, "ms"),
    ("Due queue, p50", "due queue", "review_queue(limit 50) p50 / p95 / p99", 0, "ms"),
    ("Decay sweep (dry run)", "decay sweep", "dry run, corpus namespace", None, "s"),
    ("Database per 1,000 memories", "size", "per 1,000 memories: whole database", None, "MiB"),
)
COLOURS = {"postgresql": "#3558d6", "sqlite": "#c2571a"}
PANEL_W, PANEL_H = 300, 190
LEFT, RIGHT, TOP, BOTTOM = 46, 34, 28, 34


def load_runs(directory: Path) -> list[dict[str, Any]]:
    """Every saved run in directory (ignoring files that are not bench runs)."""
    runs = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and {"engine", "size", "rows"} <= set(data):
            runs.append(data)
    return runs


def figure(run: dict[str, Any], section: str, measure: str, part: int | None) -> float | None:
    """One number of a saved run's table, or None when that row is absent or not a number."""
    for row_section, row_measure, value, _unit in run["rows"]:
        if row_section == section and row_measure == measure:
            pieces = str(value).replace(",", "").split(" / ")
            try:
                return float(pieces[part if part is not None else 0])
            except (ValueError, IndexError):
                return None
    return None


def series(
    runs: Iterable[dict[str, Any]], section: str, measure: str, part: int | None
) -> dict[str, list[tuple[int, float]]]:
    """{engine: [(size, value)] sorted by size}, one-namespace corpora only."""
    out: dict[str, dict[int, float]] = {}
    for run in runs:
        if run.get("namespaces", 1) != 1:
            continue
        value = figure(run, section, measure, part)
        if value is not None:
            out.setdefault(run["engine"], {})[int(run["size"])] = value
    return {engine: sorted(points.items()) for engine, points in out.items()}


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.2g}" if value < 1 else f"{value:.3g}"


def _panel(x0: int, y0: int, title: str, unit: str, data: dict[str, list[tuple[int, float]]]):
    plot_w, plot_h = PANEL_W - LEFT - RIGHT, PANEL_H - TOP - BOTTOM
    parts = [
        f'<text x="{x0 + LEFT}" y="{y0 + 16}" font-size="13" font-weight="600">'
        f"{escape(title)} ({escape(unit)})</text>"
    ]
    points = [p for line in data.values() for p in line]
    if not points:
        parts.append(
            f'<text x="{x0 + LEFT}" y="{y0 + TOP + plot_h / 2}" font-size="12" '
            'fill="#5b6475">not measured</text>'
        )
        return parts
    sizes = [size for size, _ in points]
    low, high = math.log10(min(sizes)), math.log10(max(sizes))
    if high - low < 1:
        low, high = low - 0.5, high + 0.5
    top = max(value for _, value in points) * 1.1 or 1.0

    def x(size: float) -> float:
        return x0 + LEFT + (math.log10(size) - low) / (high - low) * plot_w

    def y(value: float) -> float:
        return y0 + TOP + plot_h - value / top * plot_h

    base = y0 + TOP + plot_h
    parts.append(
        f'<line x1="{x0 + LEFT}" y1="{base}" x2="{x0 + LEFT + plot_w}" y2="{base}" '
        'stroke="#5b6475"/>'
    )
    parts.append(
        f'<line x1="{x0 + LEFT}" y1="{y0 + TOP}" x2="{x0 + LEFT}" y2="{base}" stroke="#5b6475"/>'
    )
    for fraction in (0.5, 1.0):
        value = top / 1.1 * fraction
        parts.append(
            f'<text x="{x0 + LEFT - 4}" y="{y(value) + 4:.1f}" font-size="10" '
            f'text-anchor="end">{_fmt(value)}</text>'
        )
    for exponent in range(math.ceil(low), math.floor(high) + 1):
        size = 10**exponent
        label = f"{size // 1000:,}k" if size < 1_000_000 else f"{size // 1_000_000}M"
        parts.append(
            f'<text x="{x(size):.1f}" y="{base + 14}" font-size="10" '
            f'text-anchor="middle">{label}</text>'
        )
    # At each size the larger value's label goes above its point and the others' below,
    # so the labels of two close points move apart instead of onto each other.
    highest: dict[float, float] = {}
    for line in data.values():
        for size, value in line:
            highest[size] = max(highest.get(size, value), value)
    for engine, line in sorted(data.items()):
        colour = COLOURS.get(engine, "#333333")
        path = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in line)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for size, value in line:
            label_dy = -5 if value >= highest[size] else 13
            parts.append(
                f'<circle cx="{x(size):.1f}" cy="{y(value):.1f}" r="3" fill="{colour}">'
                f"<title>{escape(engine)}, {size:,} memories: {_fmt(value)} {escape(unit)}"
                "</title></circle>"
            )
            parts.append(
                f'<text x="{x(size) + 4:.1f}" y="{y(value) + label_dy:.1f}" font-size="9" '
                f'fill="{colour}">{_fmt(value)}</text>'
            )
    return parts


def growth_svg(runs: list[dict[str, Any]]) -> str:
    """Small multiples of PANELS against the number of memories, one line per engine."""
    columns = 3
    rows = math.ceil(len(PANELS) / columns)
    width, height = columns * PANEL_W, rows * PANEL_H + 30
    body: list[str] = []
    for index, (title, section, measure, part, unit) in enumerate(PANELS):
        x0, y0 = (index % columns) * PANEL_W, (index // columns) * PANEL_H
        body += _panel(x0, y0, title, unit, series(runs, section, measure, part))
    legend_y = rows * PANEL_H + 18
    for offset, (engine, colour) in enumerate(sorted(COLOURS.items())):
        x = 46 + offset * 140
        body.append(
            f'<rect x="{x}" y="{legend_y - 9}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{x + 18}" y="{legend_y + 1}" font-size="12">{engine}</text>'
        )
    body.append(
        f'<text x="{width - 10}" y="{legend_y + 1}" font-size="11" text-anchor="end" '
        'fill="#5b6475">memories in the measured namespace (log scale)</text>'
    )
    summary = "How recall latency, the due queue, the decay sweep and the database size grow"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" '
        f'aria-label="{summary}"><title>{summary}</title>'
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>' + "".join(body) + "</svg>\n"
    )
