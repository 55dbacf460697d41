"""Serializer plumbing every app's API uses: input that refuses unknown keys by name, and
fields that take JSON types as they are (no coercion), within what every engine stores."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any

import numpy as np
from rest_framework import serializers

from config.bounds import FLOAT_LIMIT, FLOAT_MESSAGE, validate_datetime, validate_finite


class StrictSerializer(serializers.Serializer):
    """Refuses keys it does not declare, naming each one (read-only ones say so)."""

    read_only_names: frozenset[str] = frozenset()

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            unknown = sorted(set(data) - writable)
            if unknown:
                raise serializers.ValidationError(
                    {
                        name: [
                            "This field is read-only."
                            if name in self.read_only_names
                            else "Unknown field."
                        ]
                        for name in unknown
                    }
                )
        return super().to_internal_value(data)


# --- Strict fields: JSON types as they are ---------------------------------------------
#
# DRF coerces: CharField makes 5 into "5", FloatField takes true and "1.5", IntegerField
# "4", BooleanField "yes" and 1. An API whose clients send JSON has no reason to guess, and
# each guess is a value a client did not mean. Request bodies use these; query strings,
# where every value is text, keep DRF's fields. Datetimes and floats are also held to what
# every engine stores and reads back (config.bounds), the same rules as the models'.


class StrictCharField(serializers.CharField):
    """A JSON string; a number or a boolean is a type error, not text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictSlugField(serializers.SlugField):
    """A JSON string that is a slug."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def _with_validator(field: serializers.Field, validator: Any) -> None:
    if validator not in field.validators:
        field.validators.append(validator)


class StrictFloatField(serializers.FloatField):
    """A JSON number (not a boolean, not a numeric string), finite and within FLOAT_LIMIT."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _with_validator(self, validate_finite)

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer within 64 bits; 3.0 counts (as in JSON Schema), 3.5, true and "3" do not."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", INT64_MIN)
        kwargs.setdefault("max_value", INT64_MAX)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        if isinstance(data, float) and not data.is_integer():
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """true or false; "yes", 1 and "on" are type errors."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictDateTimeField(serializers.DateTimeField):
    """An ISO 8601 date-time that every engine stores and Python reads back (bounds)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _with_validator(self, validate_datetime)

    def enforce_timezone(self, value: datetime) -> datetime:
        # An aware value is an instant already: DRF would move it into the current time
        # zone, which stores the same instant and costs a context-local lookup per value
        # (a fifth of an import's validation). Out-of-range ones fail validate_datetime.
        if value.utcoffset() is not None and not hasattr(self, "timezone"):
            return value
        return super().enforce_timezone(value)


class EmbeddingField(serializers.Field):
    """A vector as base64 of its float32 bytes (as exports carry it): whole float32s,
    each finite and within FLOAT_LIMIT, so no similarity computed from it overflows."""

    def to_internal_value(self, data: Any) -> bytes:
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be base64 text.")
        try:
            blob = base64.b64decode(data, validate=True)
        except (ValueError, binascii.Error):
            raise serializers.ValidationError("Not valid base64.") from None
        if not blob or len(blob) % 4:
            raise serializers.ValidationError(
                f"{len(blob)} bytes is not a whole number of float32 values."
            )
        vector = np.frombuffer(blob, dtype=np.float32)
        if not np.isfinite(vector).all() or float(np.abs(vector).max()) > FLOAT_LIMIT:
            raise serializers.ValidationError(FLOAT_MESSAGE)
        return blob

    def to_representation(self, value: Any) -> str:
        return base64.b64encode(bytes(value)).decode()


# --- Bodies of routes that take little or none ------------------------------------------


class _NoBody(StrictSerializer):
    """Declares nothing: every key is an unknown field."""


def request_body(request: Any) -> Any:
    """The JSON body of a route whose body is optional: {} when none was sent. A body sent
    as null, a list or a number is passed on as it is, for the serializer to refuse."""
    data = request.data
    return {} if hasattr(data, "keys") and not data else data


def require_no_body(request: Any) -> None:
    """A route that takes no body accepts none or an empty object, as strictly as the
    others read theirs: malformed JSON is a 400 parse_error, and null, a list or any key
    a 400 naming it. Called before the route looks anything up, so the answer is the same
    for any id."""
    if _sent_nothing(request):
        return
    body = _NoBody(data=request_body(request))
    body.is_valid(raise_exception=True)


_FORMS = ("multipart/form-data", "application/x-www-form-urlencoded")


def _sent_nothing(request: Any) -> bool:
    """No body, or an empty form (what a bare POST from a form library sends); a form
    with fields goes on to request.data, which refuses its media type (415)."""
    if request.stream is None:
        return True
    if request.content_type.startswith(_FORMS):
        return not request._request.POST and not request._request.FILES
    return False
