"""Review's reactions to what memories does (memories.hooks), connected in ReviewConfig.ready().

- memories_created: every new memory of a personal namespace gets a card (seed 000's
  "people review what they keep"), in the creating transaction.
- memories_recalled: an agent's tracked recall of a due memory is an implicit review
  (issue 7), when the namespace setting allows it.
- Namespace export and import carry cards and review logs (review.transfer).
- The memory list's bulk actions on cards: suspend, unsuspend, bury, unbury, review now
  (review.bulk_actions).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memories import hooks
from memories.models import Memory
from review.bulk_actions import REVIEW_BULK_ACTIONS
from review.services import (
    cards_create_for_new_memories,
    cards_grade_implicit,
    implicit_review_settings,
)
from review.transfer import CardsTransferPart


def cards_for_created_memories(*, memories: list[Memory], **_: Any) -> None:
    cards_create_for_new_memories(memories=memories)


def implicit_reviews_for_recalled(
    *, memory_ids: list[int], token: Any, now: datetime, **_: Any
) -> None:
    """Seed 000 via issue 7: an agent's successful recall of a due memory is a review."""
    if token is None or not memory_ids or not implicit_review_settings().enabled:
        return
    cards_grade_implicit(memory_ids=memory_ids, now=now)


def connect() -> None:
    hooks.memories_created.connect(
        cards_for_created_memories, sender=Memory, dispatch_uid="review.cards_for_created"
    )
    hooks.memories_recalled.connect(
        implicit_reviews_for_recalled, sender=Memory, dispatch_uid="review.implicit_reviews"
    )
    hooks.transfer_part_register(CardsTransferPart())
    for action in REVIEW_BULK_ACTIONS:
        hooks.bulk_action_register(action)
