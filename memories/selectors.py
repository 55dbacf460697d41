"""Use-case reads of memories, each composed of MemoryQuerySet methods."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import QuerySet

from memories.auth import Scope
from memories.models import Memory

# The status filter's value for "every status, forgotten ones included".
ANY_STATUS = "any"
# Filters that keep the memories whose field equals the value.
EXACT_FILTERS = ("topic", "tier", "memory_type", "classification")


def memory_list(
    *, scope: Scope, filters: Mapping[str, Any], ordering: Sequence[str] = ()
) -> QuerySet[Memory]:
    """The memories of a list (API and dashboard): the scope's, filtered, namespace loaded.

    `filters` may hold namespace (a Namespace of the scope), status (a Memory.Status, or
    ANY_STATUS; absent: every status but forgotten), topic, tier, memory_type,
    classification, created_after, created_before and q (text the memory contains); other
    keys, such as paging parameters, are ignored. Without `ordering` the model's own order
    stands, for callers whose paginator sorts.
    """
    memories = scope.memories().select_related("namespace")
    if "namespace" in filters:
        memories = memories.in_namespace(filters["namespace"])
    status = filters.get("status")
    if status is None:
        memories = memories.exclude(status=Memory.Status.FORGOTTEN)
    elif status != ANY_STATUS:
        memories = memories.filter(status=status)
    for name in EXACT_FILTERS:
        if name in filters:
            memories = memories.filter(**{name: filters[name]})
    if "created_after" in filters:
        memories = memories.filter(created_at__gte=filters["created_after"])
    if "created_before" in filters:
        memories = memories.filter(created_at__lt=filters["created_before"])
    if filters.get("q"):
        memories = memories.containing(filters["q"])
    if ordering:
        memories = memories.order_by(*ordering)
    return memories
