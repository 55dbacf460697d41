"""Cards and review logs in a namespace's export and import (a memories.hooks transfer part).

Export writes a "card" record per card of a visible memory and a "review_log" record per
log, after the memories' own records; import validates each against its model
(memories.import_records.ModelRecord: the fields' rules and the check constraints' bounds)
and writes them in batches once the memories they name are written. A memory line the
import deduplicated (another memory holds its text) keeps that memory's card: the line's
card and review logs are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django.db.models import QuerySet
from rest_framework import serializers

from config.serializers import (
    StrictDateTimeField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
)
from memories.hooks import ImportContext
from memories.import_records import JsonObjectField, ModelRecord
from memories.models import Classification, Memory
from memories.serializers import ClassificationField
from memories.transfer import BATCH
from review.models import CARD_STATE_FIELDS, Card, ReviewLog
from review.schedulers import fsrs_state_problem

# A card line: its state (version is local to this database) and when it was made.
CARD_FIELDS = (*(name for name in CARD_STATE_FIELDS if name != "version"), "created_at")
LOG_FIELDS = (
    "grade",
    "source",
    "mode",
    "state_before",
    "state_after",
    "reviewed_at",
    "duration_ms",
    "undone_at",
)


class FsrsState(StrictSerializer):
    """Card.fsrs_state as review.schedulers writes it (and reads it back, key by key)."""

    stability = StrictFloatField(allow_null=True)
    difficulty = StrictFloatField(allow_null=True)
    state = StrictIntegerField(min_value=1, max_value=3)  # fsrs.State
    step = StrictIntegerField(min_value=0, max_value=1000, allow_null=True)
    due = StrictDateTimeField()
    last_review = StrictDateTimeField(allow_null=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # The fields' types above, then what fsrs needs of them together (the same rule a
        # read applies: review.schedulers.fsrs_state_problem).
        stored = {
            **attrs,
            "due": attrs["due"].isoformat(),
            "last_review": attrs["last_review"].isoformat() if attrs["last_review"] else None,
        }
        problem = fsrs_state_problem(stored)
        if problem is not None:
            key, message = problem
            raise serializers.ValidationError({key: message})
        return attrs


class CardRecord(ModelRecord):
    memory = StrictIntegerField()
    fsrs_state = JsonObjectField(FsrsState, required=False, allow_null=True)

    class Meta:
        model = Card
        fields = ["memory", *CARD_FIELDS]


class CardSnapshot(CardRecord):
    """A review log's state_before / state_after: what card_undo restores."""

    utility = StrictFloatField(min_value=0.0, max_value=1.0, required=False)

    class Meta:
        model = Card
        fields = [*CARD_STATE_FIELDS, "utility"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("partial", True)
        super().__init__(*args, **kwargs)


class ReviewLogRecord(ModelRecord):
    memory = StrictIntegerField()
    # The level the grade was given at (absent in files of older versions: the memory's).
    classification = ClassificationField(required=False)
    state_before = JsonObjectField(CardSnapshot, required=False)
    state_after = JsonObjectField(CardSnapshot, required=False)

    class Meta:
        model = ReviewLog
        fields = ["memory", *LOG_FIELDS, "classification"]


class _CardsImport:
    def __init__(self, context: ImportContext) -> None:
        self.context = context
        self.cards: list[tuple[int, int, Card]] = []  # (line, old memory id, card)
        self.card_of: dict[int, Card] = {}
        self.logs: list[tuple[int, int, dict[str, Any]]] = []  # (line, old memory id, log)

    def read(self, kind: str, record: dict[str, Any]) -> None:
        if kind == "card":
            self._card(record)
        else:
            self._review_log(record)

    def _card(self, record: dict[str, Any]) -> None:
        ctx = self.context
        data = ctx.valid(CardRecord, record)
        old = data.pop("memory")
        ctx.seen(old)
        if old in self.card_of:
            raise ctx.refuse(f"memory: Memory {old} has a card earlier in the file.")
        card = Card(namespace=ctx.namespace, **data)
        self.card_of[old] = card
        self.cards.append((ctx.line, old, card))
        if len(self.cards) >= BATCH:
            self.flush_cards()

    def _review_log(self, record: dict[str, Any]) -> None:
        ctx = self.context
        data = ctx.valid(ReviewLogRecord, record)
        old = data.pop("memory")
        level = ctx.seen(old)
        # Never below its memory's level, as the grading service writes it.
        data["classification"] = max(ctx.level(data, level), level)
        if old not in self.card_of:
            raise ctx.refuse("memory: Its card is not earlier in the file.")
        data["card"] = self.card_of[old]
        self.logs.append((ctx.line, old, data))
        if len(self.logs) >= BATCH:
            self.flush_logs()

    def flush_cards(self) -> None:
        ctx = self.context
        ctx.flush_memories()
        rows = []
        for line, old, card in self.cards:
            if old not in ctx.deduplicated:
                card.memory_id = ctx.new_ids[old]
                rows.append((line, card))
        ctx.not_written("card", len(self.cards) - len(rows))
        ctx.write(rows, ids=True)
        self.cards = []

    def flush_logs(self) -> None:
        self.flush_cards()
        ctx = self.context
        rows = [
            (line, ReviewLog(namespace=ctx.namespace, **data))
            for line, old, data in self.logs
            if old not in ctx.deduplicated
        ]
        ctx.not_written("review_log", len(self.logs) - len(rows))
        ctx.write(rows)
        self.logs = []

    def finish(self) -> None:
        self.flush_cards()
        self.flush_logs()


class CardsTransferPart:
    record_types = ("card", "review_log")

    def export(
        self, *, memories: QuerySet[Memory], ceiling: int, encode: Callable[[Any], Any]
    ) -> Iterator[dict[str, Any]]:
        cards = Card.objects.filter(memory__in=memories).order_by("pk")
        for card in cards.iterator(chunk_size=BATCH):
            yield {
                "type": "card",
                "memory": card.memory_id,
                **{name: encode(getattr(card, name)) for name in CARD_FIELDS},
            }
        # A grade given while its memory was above the ceiling stays out, declassified since
        # or not (its level is the memory's then).
        logs = ReviewLog.objects.filter(
            card__memory__in=memories, classification__lte=ceiling
        ).select_related("card")
        for log in logs.order_by("pk").iterator(chunk_size=BATCH):
            yield {
                "type": "review_log",
                "memory": log.card.memory_id,
                **{name: encode(getattr(log, name)) for name in LOG_FIELDS},
                "classification": Classification(log.classification).label,
            }

    def start_import(self, context: ImportContext) -> _CardsImport:
        return _CardsImport(context)
