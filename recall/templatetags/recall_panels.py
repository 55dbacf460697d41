"""Recall's part of a memory's page: the recalls that returned it. memories' templates load
this tag, so memories' Python never reads recall's tables (docs/architecture.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import template

from memories.auth import Scope
from memories.models import Memory
from recall.models import RecallEvent

register = template.Library()

RECALLS_SHOWN = 20


@register.inclusion_tag("recall/_memory_recalls.html", takes_context=True)
def memory_recalls(context: template.Context, memory: Memory) -> dict[str, Any]:
    """The person's recall events that returned the memory, newest first."""
    stamps = []
    for stamp in memory.recall_timestamps or []:
        try:
            stamps.append(datetime.fromisoformat(stamp))
        except (TypeError, ValueError):
            continue
    recalls = []
    if stamps:
        # recall_run stamps the memory and its RecallEvent with the same `now`.
        scope = Scope.of(context["request"])
        recalls = list(
            RecallEvent.objects.filter(
                namespace_id__in=scope.namespace_ids, created_at__in=stamps
            ).select_related("token")[:RECALLS_SHOWN]
        )
    return {"memory": memory, "recalls": recalls, "recall_stamps": sorted(stamps, reverse=True)}
