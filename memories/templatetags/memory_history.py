"""A memory's history for people: the before/after values of a `MemoryEvent` as words,
dates in the person's time zone and rounded numbers, never Python's reprs (docs/dashboard.md,
"History"). The formatting is pure; the filter only supplies the time zone."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, tzinfo
from typing import Any

from django import template
from django.utils.dateformat import format as date_format

from config.web import user_tz

register = template.Library()

EMPTY = "—"
DECIMALS = 3
DATETIME_FORMAT = "M j, Y, H:i"
DATE_FORMAT = "M j, Y"
_ISO_DATETIME = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d")
_ISO_DATE = re.compile(r"^\d{4}-\d\d-\d\d$")


def format_number(value: float) -> str:
    """At most DECIMALS decimals, trailing zeros dropped; a tiny non-zero value keeps three
    significant digits instead of reading as 0."""
    if not math.isfinite(value):
        return str(value)
    if value and abs(value) < 10**-DECIMALS:
        decimals = DECIMALS - 1 - math.floor(math.log10(abs(value)))
    else:
        decimals = DECIMALS
    text = f"{value:.{decimals}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def format_value(value: Any, tz: tzinfo) -> str:
    """One recorded value as a person reads it; EMPTY for nothing (None, "", [], {})."""
    if value is None or value == "" or value == [] or value == {}:
        return EMPTY
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_number(value)
    if isinstance(value, datetime):
        return _format_datetime(value, tz)
    if isinstance(value, date):
        return date_format(value, DATE_FORMAT)
    if isinstance(value, (list, tuple, set)):
        return ", ".join(format_value(item, tz) for item in value)
    if isinstance(value, dict):
        return ", ".join(f"{_label(k)}: {format_value(v, tz)}" for k, v in value.items())
    text = str(value)
    if _ISO_DATETIME.match(text):
        try:
            return _format_datetime(datetime.fromisoformat(text), tz)
        except ValueError:
            return text
    if _ISO_DATE.match(text):
        try:
            return date_format(date.fromisoformat(text), DATE_FORMAT)
        except ValueError:
            return text
    return text


def _format_datetime(value: datetime, tz: tzinfo) -> str:
    # A naive value was stored in UTC (USE_TZ); show every instant in the person's zone.
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return date_format(value.astimezone(tz), DATETIME_FORMAT)


def _label(key: Any) -> str:
    return str(key).replace("_", " ")


def history_changes(
    changes: Iterable[tuple[str, Any, Any]], tz: tzinfo
) -> list[tuple[str, str | None, str]]:
    """(label, before or None, after) for each change worth reading: a value recorded as
    nothing on both sides, or the same before and after, is left out; a before that was
    nothing is None (the row shows only the new value)."""
    rows = []
    for key, before, after in changes:
        old, new = format_value(before, tz), format_value(after, tz)
        if new == old:
            continue
        rows.append((_label(key), None if old == EMPTY else old, new))
    return rows


@register.filter
def for_people(changes: Iterable[tuple[str, Any, Any]]) -> list[tuple[str, str | None, str]]:
    """`{% for key, before, after in row.changes|for_people %}` in the history table."""
    return history_changes(changes, user_tz())


@register.filter
def as_json(value: Any) -> str:
    """A stored JSON value as the JSON it is (a webhook's payload), indented: what the
    receiver gets, not Python's repr of it."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
