"""Reads the search page needs beside recall's own: what recall's hits do not carry."""

from __future__ import annotations

from collections.abc import Collection

from django.db.models import Q

from memories.models import Association, Memory


def links_between(
    ids: Collection[int], others: Collection[int], namespace_ids: Collection[int]
) -> list[tuple[int, int, float, str]]:
    """(source, target, weight, kind) of the association links joining a memory of `ids` to
    one of `others`, either way round: why an associative result is there. One query."""
    if not ids or not others:
        return []
    return list(
        Association.objects.filter(namespace_id__in=namespace_ids)
        .filter(
            Q(source_id__in=ids, target_id__in=others) | Q(source_id__in=others, target_id__in=ids)
        )
        .order_by("id")
        .values_list("source_id", "target_id", "weight", "kind")
    )


def original_texts(ids: Collection[int]) -> dict[int, str]:
    """The original-language text of those of the memories that have one (recall's trigram
    step also matches it, and the page must be able to say so). One query."""
    if not ids:
        return {}
    return dict(
        Memory.objects.filter(pk__in=ids)
        .exclude(content_original="")
        .values_list("id", "content_original")
    )
