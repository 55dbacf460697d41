"""The table of `manage.py bench`: its rows, a run saved as JSON, the saved runs drawn.

Every part of the run (benchmarks.service in process, benchmarks.service_http over HTTP)
returns rows of this table; `--save-dir` keeps a run's rows in one JSON file per engine,
corpus size and namespace count, and `--plot` draws the saved runs against corpus size
(benchmarks.plot).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError
from django.utils import timezone

from benchmarks.plot import growth_svg, load_runs
from config.db import vendor

Row = tuple[str, str, str, str]  # section, measure, value, unit
Progress = Callable[[str], None]


def save(save_dir: str, size: int, namespaces: int, rows: list[Row]) -> Path:
    """Write the run's table as JSON in save_dir (<engine>-<size>-<namespaces>.json)."""
    directory = Path(save_dir)
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{vendor()}-{size}-{namespaces}.json"
    previous: dict[str, Any] = {}
    path = directory / name
    if path.exists():
        try:
            previous = json.loads(path.read_text())
        except ValueError:
            previous = {}
    # Rows of parts not run this time are kept from the previous run of the same corpus.
    measured = {(row[0], row[1]) for row in rows}
    kept = [row for row in previous.get("rows", []) if (row[0], row[1]) not in measured]
    path.write_text(
        json.dumps(
            {
                "engine": vendor(),
                "size": size,
                "namespaces": namespaces,
                "saved_at": timezone.now().isoformat(),
                "rows": [list(row) for row in rows] + kept,
            },
            indent=1,
        )
    )
    return path


def plot(save_dir: str, target: str) -> int:
    """Draw the runs saved in save_dir into target (SVG); how many runs it drew."""
    if not save_dir:
        raise CommandError("--plot draws the runs saved in --save-dir; give one.")
    runs = load_runs(Path(save_dir))
    Path(target).write_text(growth_svg(runs))
    return len(runs)
