"""The shapes of an export's lines, as the import validates them (memories.importer).

Each is the API's own rule where the API writes the same thing: a memory line is
MemoryCreateInput plus the fields only the server writes, a relation line RelationInput,
and so on; rows the API never takes (history, digests, and review.transfer's cards and
logs) are shaped from their models (ModelRecord): the model fields' rules and validators
and the bounds of the model's check constraints. Every field class is a strict one of
config.serializers.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from django.db import models
from django.db.backends.base.operations import BaseDatabaseOperations
from rest_framework import serializers

from config.serializers import (
    EmbeddingField,
    StrictBooleanField,
    StrictCharField,
    StrictDateTimeField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
)
from memories import serializers as s
from memories.models import SESSION_ID_LENGTH, Consolidation, Memory, MemoryEvent
from memories.tracking import SESSION_IDS_CAP


class JsonObjectField(serializers.Field):
    """A JSON object, kept as it came; with `shape`, its keys and values checked by it."""

    def __init__(self, shape: type[serializers.Serializer] | None = None, **kwargs: Any) -> None:
        self.shape = shape
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> dict:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        if self.shape is not None:
            checker = self.__dict__.get("_checker")
            if checker is None:
                checker = self.__dict__["_checker"] = self.shape()
            checker.run_validation(data)
        return data


def _bound(child: Any) -> list[tuple[str, str, Any]]:
    if isinstance(child, models.Q):
        return _check_bounds(child)
    if not isinstance(child, tuple) or len(child) != 2 or not isinstance(child[0], str):
        return []  # an expression: the database enforces it
    name, value = child
    column, _, lookup = name.rpartition("__")
    if lookup in ("gte", "lte") and isinstance(value, int | float) and not isinstance(value, bool):
        return [(column, lookup, value)]
    return []


def _check_bounds(condition: models.Q) -> list[tuple[str, str, Any]]:
    """(field, "gte" | "lte", limit) bounds a check constraint's condition sets on values:
    from a conjunction, and from "field IS NULL OR <bounds of field>"; other shapes
    (negations, other lookups, expressions) give none, and the database enforces them."""
    if condition.negated:
        return []
    if condition.connector == models.Q.AND:
        return [bound for child in condition.children for bound in _bound(child)]
    nullable = {
        child[0].removesuffix("__isnull")
        for child in condition.children
        if isinstance(child, tuple) and child[0].endswith("__isnull") and child[1] is True
    }
    others = [
        child
        for child in condition.children
        if not (isinstance(child, tuple) and child[0].removesuffix("__isnull") in nullable)
    ]
    if len(others) != 1:
        return []
    bounds = _bound(others[0])
    return bounds if bounds and {column for column, _, _ in bounds} <= nullable else []


# The range every engine stores for each integer field type (SQLite alone would take more).
_INTEGER_RANGES = BaseDatabaseOperations.integer_field_ranges
# Counters are incremented by reads (recall, grading) with no check: one imported at a
# 32-bit column's maximum made the next recall fail on PostgreSQL. A billion leaves room.
COUNTER_MAX = 10**9


def _integer_range(model_field: models.Field) -> tuple[int | None, int | None]:
    low, high = _INTEGER_RANGES.get(model_field.get_internal_type(), (None, None))
    if high is not None and high > COUNTER_MAX:
        high = COUNTER_MAX
    return low, high


class ModelRecord(StrictSerializer, serializers.ModelSerializer):
    """A row of an import shaped by its model: the model fields' rules and validators, its
    check constraints' bounds, with the strict field classes; integers within what every
    engine stores. Uniqueness is the importer's (it sees the whole file)."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: StrictCharField,
        models.TextField: StrictCharField,
        models.FloatField: StrictFloatField,
        models.IntegerField: StrictIntegerField,
        models.BigIntegerField: StrictIntegerField,
        models.SmallIntegerField: StrictIntegerField,
        models.PositiveIntegerField: StrictIntegerField,
        models.PositiveSmallIntegerField: StrictIntegerField,
        models.PositiveBigIntegerField: StrictIntegerField,
        models.DateTimeField: StrictDateTimeField,
        models.BooleanField: StrictBooleanField,
        models.JSONField: JsonObjectField,
    }

    def get_validators(self) -> list:
        return []

    def build_standard_field(self, field_name: str, model_field: models.Field) -> tuple:
        field_class, kwargs = super().build_standard_field(field_name, model_field)
        if issubclass(field_class, StrictCharField):
            kwargs["trim_whitespace"] = False  # an import restores text as it was
        if issubclass(field_class, JsonObjectField):
            kwargs.pop("encoder", None)
            kwargs.pop("decoder", None)
        if "choices" in kwargs:
            return field_class, kwargs
        low = high = None
        if isinstance(model_field, models.IntegerField):
            low, high = _integer_range(model_field)
        for constraint in self.Meta.model._meta.constraints:
            condition = getattr(constraint, "condition", None)
            if not isinstance(constraint, models.CheckConstraint) or condition is None:
                continue
            for column, lookup, limit in _check_bounds(condition):
                if column not in (model_field.name, model_field.attname):
                    continue
                if lookup == "gte":
                    low = limit if low is None else max(low, limit)
                else:
                    high = limit if high is None else min(high, limit)
        if low is not None:
            kwargs["min_value"] = max(kwargs.get("min_value", low), low)
        if high is not None:
            kwargs["max_value"] = min(kwargs.get("max_value", high), high)
        return field_class, kwargs


class MemoryRecord(s.MemoryCreateInput):
    """A memory line: the fields the API takes, by the API's rules (MemoryCreateInput), and
    what only the server writes, which an export carries, with the same field classes."""

    read_only_names = frozenset()

    id = StrictIntegerField(help_text="The exporter's id; the memory gets a new one.")
    storage = serializers.ChoiceField(choices=Memory.Storage.choices, required=False)
    status = serializers.ChoiceField(choices=Memory.Status.choices, required=False)
    status_changed_at = StrictDateTimeField(required=False, allow_null=True)
    promoted_at = StrictDateTimeField(required=False, allow_null=True)
    forgotten_at = StrictDateTimeField(required=False, allow_null=True)
    forgotten_reason = StrictCharField(required=False, allow_blank=True, max_length=200)
    forgotten_score = StrictFloatField(required=False, allow_null=True)
    stability = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    use_count = StrictIntegerField(min_value=0, max_value=COUNTER_MAX, required=False)
    last_used_at = StrictDateTimeField(required=False)
    access_count = StrictIntegerField(min_value=0, max_value=COUNTER_MAX, required=False)
    last_accessed_at = StrictDateTimeField(required=False, allow_null=True)
    recall_count = StrictIntegerField(min_value=0, max_value=COUNTER_MAX, required=False)
    last_recalled_at = StrictDateTimeField(required=False, allow_null=True)
    recall_timestamps = serializers.ListField(
        child=StrictDateTimeField(), max_length=Memory.RECALL_TIMESTAMPS_CAP, required=False
    )
    session_ids = serializers.ListField(
        child=StrictCharField(max_length=SESSION_ID_LENGTH),
        max_length=SESSION_IDS_CAP,
        required=False,
    )
    embedding = EmbeddingField(required=False, allow_null=True)
    embedding_model = StrictCharField(required=False, allow_blank=True, max_length=100)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        del self.fields["namespace"]  # the import's namespace, not the file's
        del self.fields["supersedes"]  # an export carries the links and valid_until instead

    def validate_recall_timestamps(self, value: list) -> list[str]:
        # Stored as text, in UTC, as recall writes them (the sweep compares them as text).
        for stamp in value:
            s.not_in_future(stamp)
        return [stamp.astimezone(UTC).isoformat() for stamp in value]

    # What happened to the memory cannot have happened later than now (a future last use
    # would keep it at full strength, never decaying, until it is next used).
    validate_status_changed_at = staticmethod(s.not_in_future)
    validate_promoted_at = staticmethod(s.not_in_future)
    validate_forgotten_at = staticmethod(s.not_in_future)
    validate_last_used_at = staticmethod(s.not_in_future)
    validate_last_accessed_at = staticmethod(s.not_in_future)
    validate_last_recalled_at = staticmethod(s.not_in_future)


class HeaderRecord(StrictSerializer):
    format = StrictCharField()
    version = StrictIntegerField()
    exported_at = StrictDateTimeField(required=False)
    namespace = JsonObjectField(required=False)


class EndRecord(StrictSerializer):
    lines = StrictIntegerField(min_value=1)


class AssociationRecord(s.AssociationInput):
    created_at = StrictDateTimeField(required=False)
    classification = s.ClassificationField(required=False)


class EntityRecord(s.EntityInput):
    display_name = StrictCharField(required=False, allow_blank=True, max_length=200)
    classification = s.ClassificationField(required=False)
    created_at = StrictDateTimeField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        del self.fields["namespace"]


class RelationRecord(s.RelationInput):
    classification = s.ClassificationField(required=False)
    created_at = StrictDateTimeField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        del self.fields["namespace"]


class ConsolidationRecord(ModelRecord):
    memory_ids = serializers.ListField(child=StrictIntegerField(min_value=1), required=False)
    classification = s.ClassificationField(required=False)

    class Meta:
        model = Consolidation
        fields = ["period", "period_start", "topic", "text", "memory_ids", "classification"]
        fields += ["created_at"]


class EventRecord(ModelRecord):
    memory = StrictIntegerField()
    classification = s.ClassificationField(required=False)

    class Meta:
        model = MemoryEvent
        fields = ["memory", "kind", "before", "after", "source", "classification", "created_at"]
