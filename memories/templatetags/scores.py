"""The decay score as people read it, on every page: `{% vitality score %}` shows where the
score stands between the forget and the promote thresholds (memories.scores.vitality), with
its band, the raw score for the tooltip and screen readers; `detail=True` adds the sentence
that explains it (docs/dashboard.md, "Scores"). The thresholds are the settings'."""

from __future__ import annotations

import math
from typing import Any

from django import template

from memories.decay import Thresholds
from memories.scores import vitality as vitality_of
from memories.sweep import thresholds_from_settings

register = template.Library()


@register.inclusion_tag("memories/_vitality.html")
def vitality(score: Any, detail: bool = False) -> dict[str, Any]:
    """The vitality meter of a decay score; a dash for no score (None, not a number)."""
    try:
        value = float(score)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        return {"vitality": None}
    return {"vitality": vitality_of(value, thresholds_from_settings()), "detail": detail}


@register.simple_tag
def score_thresholds() -> Thresholds:
    """The lifecycle thresholds, for captions that name them: `{% score_thresholds as t %}`."""
    return thresholds_from_settings()
