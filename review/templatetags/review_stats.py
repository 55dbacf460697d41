"""Review statistics for people: answer times as "8.2 s" or "3 min 10 s", and "—" when no
answer was timed (memories.plots.duration_text, the one rule the plots' tooltips use too)."""

from __future__ import annotations

import math
from typing import Any

from django import template

from memories.plots import duration_text

register = template.Library()


@register.filter
def answer_time(ms: Any) -> str:
    """`{{ stats.average_answer_ms|answer_time }}`: milliseconds for people; "—" for none."""
    try:
        value = float(ms)
    except (TypeError, ValueError):
        return duration_text(None)
    return duration_text(value if math.isfinite(value) and value >= 0 else None)
