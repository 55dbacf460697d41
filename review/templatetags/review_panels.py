"""Review's parts of memories' pages: a memory's schedule, the next-review column of the
memory list and the card counts of the namespace list. memories' templates load these tags,
so memories' Python never reads review's tables (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django import template
from django.db.models import Count
from django.urls import reverse

from memories.models import Memory, Namespace
from review.models import Card, ReviewLog
from review.selectors.browser import browser_deck_param
from review.selectors.fronts import card_front

register = template.Library()

GRADES_SHOWN = 20


@register.inclusion_tag("review/_memory_schedule.html", takes_context=True)
def memory_schedule(context: template.Context, memory: Memory, now: datetime) -> dict[str, Any]:
    """The memory's card, its state with bury and suspend buttons that come back to this
    page, and its latest grades (two queries)."""
    card = Card.objects.filter(memory=memory).first()
    reviews = (
        list(ReviewLog.objects.filter(card=card).select_related("user")[:GRADES_SHOWN])
        if card
        else []
    )
    request = context.get("request")
    return {
        "card": card,
        # The question review asks: its cue, else the namespace's kind of front.
        "front": card_front(memory, memory.namespace) if card else None,
        "reviews": reviews,
        "now": now,
        "csrf_token": context.get("csrf_token"),
        "next": request.get_full_path() if request is not None else "",
    }


@register.simple_tag
def cards_of(memories: Iterable[Memory]) -> dict[int, Card]:
    """The cards of a page of memories, by memory id, in one query."""
    ids = [memory.pk for memory in memories]
    return {card.memory_id: card for card in Card.objects.filter(memory_id__in=ids)}


@register.inclusion_tag("review/_next_review.html")
def next_review(cards: dict[int, Card], memory: Memory, now: datetime) -> dict[str, Any]:
    return {"card": cards.get(memory.pk), "now": now}


@register.simple_tag
def card_counts(namespaces: Iterable[Namespace]) -> dict[int, int]:
    """How many cards each namespace has, by namespace id, in one query: the cards review
    may show (Card.objects.reviewable), as the home page and the statistics count them."""
    ids = [namespace.pk for namespace in namespaces]
    rows = Card.objects.filter(namespace_id__in=ids).reviewable().values("namespace_id")
    return dict(rows.annotate(n=Count("id")).order_by().values_list("namespace_id", "n"))


@register.simple_tag
def card_count(counts: dict[int, int], namespace: Namespace) -> int:
    return counts.get(namespace.pk, 0)


@register.simple_tag
def deck_cards_url(namespace_slug: str, deck: str) -> str:
    """The card browser filtered to one deck of a namespace ("" is the "(no topic)" deck),
    as every deck list links it."""
    query = urlencode({"namespace": namespace_slug, "deck": browser_deck_param(deck)})
    return f"{reverse('card-browser')}?{query}"
