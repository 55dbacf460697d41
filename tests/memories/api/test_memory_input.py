"""The memory inputs validate exactly as DRF's own Serializer.to_internal_value does, values
and errors alike (StrictSerializer only adds the refusal of unknown keys), and hold every
rule of the model fields."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from config.bounds import validate_datetime, validate_finite
from config.serializers import StrictDateTimeField, StrictFloatField, StrictIntegerField
from memories import serializers as s

VALUES: dict[str, list[Any]] = {
    "namespace": ["work", "bad slug!", "", None, 7],
    "content": ["x", "  padded  ", "", "   ", 5, 2.5, True, None, [], "a\x00b", "\ud800z", "é" * 9],
    "content_original": ["", "Original", None, "a\udfffb"],
    "language": ["en", "", "x" * 17, 3],
    "keywords": [[], ["a"], ["a", ""], ["a" * 101], "notalist", None, [1, 2], ["\x00"], ["a"] * 51],
    "topic": ["t", "t" * 101, "", None, 3, " spaced "],
    "cue": ["Why?", "", "q" * 301],
    "memory_type": ["episodic", "semantic", "nope", "", None, 1],
    "tier": ["core", "short_term", "CORE"],
    "classification": ["public", "restricted", "secret", 2, None],
    "strength": [0, 1, 2, 2.5, -0.1, "1.5", "abc", True, None, 1e308],
    "utility": [0.5, 1.0001, "0.2"],
    "credibility": [1, 5, 6, 0, 3.0, 3.5, "4", True],
    "emotion_tags": [["joy"], ["x" * 51], [None]],
    "relevance_score": [-1e6, 1e7, 0],
    "expires_at": ["2030-01-01T00:00:00Z", "not a date", None, 5],
    "created_at": ["2020-01-01T00:00:00+02:00", "2999-01-01T00:00:00Z", "bad"],
    "status": ["active"],
    "bogus": [1],
}


class _Reference(s.MemoryCreateInput):
    """MemoryCreateInput validated by DRF's own Serializer.to_internal_value."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = set(data) - {n for n, f in self.fields.items() if not f.read_only}
            if unknown:
                return super().to_internal_value(data)  # the same unknown-field error
        return serializers.Serializer.to_internal_value(self, data)


class _PartialReference(s.MemoryUpdateInput):
    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = set(data) - {n for n, f in self.fields.items() if not f.read_only}
            if unknown:
                return super().to_internal_value(data)
        return serializers.Serializer.to_internal_value(self, data)


def _outcome(serializer: serializers.Serializer, data: dict) -> tuple[str, Any]:
    try:
        return "ok", dict(serializer.run_validation(data))
    except serializers.ValidationError as exc:
        return "error", exc.detail


_ITEMS = st.dictionaries(
    st.sampled_from(sorted(VALUES)), st.integers(min_value=0, max_value=20), max_size=8
).map(lambda picks: {k: VALUES[k][i % len(VALUES[k])] for k, i in picks.items()})


@settings(max_examples=400, deadline=None)
@given(data=_ITEMS)
def test_create_input_validates_as_drf_does(data):
    fast = s.MemoryCreateInput()
    assert _outcome(fast, data) == _outcome(_Reference(), data)
    assert _outcome(fast, data) == _outcome(_Reference(), data)  # the instance is reusable


@settings(max_examples=200, deadline=None)
@given(data=_ITEMS)
def test_update_input_validates_as_drf_does(data):
    data.pop("namespace", None)
    data.pop("created_at", None)
    assert _outcome(s.MemoryUpdateInput(), data) == _outcome(_PartialReference(), data)


@pytest.mark.parametrize(
    "data",
    [
        {"namespace": "work", "content": "Plain"},
        {"namespace": "work", "content": "  Trim me  ", "keywords": [" a ", "b"], "topic": "t"},
        {"namespace": "work", "content": "x", "classification": "confidential", "credibility": 2},
        {"namespace": "work", "content": "Surrogate \ud83d here"},
        {"content": "No namespace"},
        ["not", "a", "dict"],
    ],
)
def test_examples_validate_as_drf_does(data):
    assert _outcome(s.MemoryCreateInput(), data) == _outcome(_Reference(), data)


def test_the_api_input_holds_every_rule_of_the_model_fields():
    """The API passes prevalidated=True and skips model field validation: every rule a
    Memory field enforces must be enforced (as strictly or more) by MemoryCreateInput."""
    from django.core.validators import MaxLengthValidator, MaxValueValidator, MinValueValidator
    from django.db import models

    from memories.models import Classification, Memory
    from memories.services import EDITABLE_FIELDS

    api_fields = s.MemoryCreateInput().fields
    for name in (*EDITABLE_FIELDS, "created_at"):
        model_field = Memory._meta.get_field(name)
        api_field = api_fields[name]
        assert not api_field.read_only, name
        if not model_field.null:
            assert not api_field.allow_null, name
        if model_field.choices:
            choices = set(api_field.choices)
            if name == "classification":
                choices = {Classification.from_name(label).value for label in choices}
            assert choices <= {value for value, _ in model_field.choices}, name
            continue
        if isinstance(model_field, models.CharField | models.TextField):
            assert isinstance(api_field, serializers.CharField), name
            if not model_field.blank:
                assert not api_field.allow_blank, name
            if model_field.max_length is not None:
                assert api_field.max_length is not None, name
                assert api_field.max_length <= model_field.max_length, name
        if isinstance(model_field, models.JSONField):
            assert isinstance(api_field, serializers.ListField), name
            assert isinstance(api_field.child, serializers.CharField), name
        if isinstance(model_field, models.DateTimeField):
            assert isinstance(api_field, StrictDateTimeField), name
            assert validate_datetime in api_field.validators, name
        if isinstance(model_field, models.FloatField):
            assert isinstance(api_field, StrictFloatField), name
            assert validate_finite in api_field.validators, name
        if isinstance(model_field, models.IntegerField):
            assert isinstance(api_field, StrictIntegerField), name
        for validator in model_field.validators:
            if isinstance(validator, MinValueValidator):
                assert api_field.min_value is not None, name
                assert api_field.min_value >= validator.limit_value, name
            elif isinstance(validator, MaxValueValidator):
                assert api_field.max_value is not None, name
                assert api_field.max_value <= validator.limit_value, name
            elif isinstance(validator, MaxLengthValidator):
                continue  # compared as max_length above
            elif (
                callable(validator)
                and not isinstance(validator, type)
                and (type(validator).__name__ == "function")
            ):  # a plain function (config.bounds): the API field runs that very function
                assert validator in api_field.validators, name
            else:  # anything else: the API field runs a validator of the same kind
                assert type(validator) in {type(v) for v in api_field.validators}, name


@pytest.mark.parametrize(
    "data",
    [
        {"namespace": "work", "content": "  Fine  ", "keywords": ["a"], "strength": 1},
        {"namespace": "work", "content": "", "strength": 7, "bogus": 1},
        {"namespace": "work", "content": "x", "utility": "abc"},
        ["not", "a", "dict"],
    ],
)
def test_validate_memory_input_answers_as_is_valid_does(data):
    serializer = s.MemoryCreateInput(data=data)
    try:
        serializer.is_valid(raise_exception=True)
        expected = ("ok", dict(serializer.validated_data))
    except serializers.ValidationError as exc:
        expected = ("error", exc.detail)
    try:
        outcome = ("ok", s.validate_memory_input(data))
    except serializers.ValidationError as exc:
        outcome = ("error", exc.detail)
    assert outcome == expected
    # Used again, the same (per-thread) serializer gives the same answer.
    try:
        again = ("ok", s.validate_memory_input(data))
    except serializers.ValidationError as exc:
        again = ("error", exc.detail)
    assert again == expected
