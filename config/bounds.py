"""The values every stored float and datetime must keep, so that no stored row can break a read.

One home for the ranges: model validators, database check constraints, API serializers
and the import all use these, so no write path accepts what another refuses.

Datetimes: Python represents years 1 to 9999 only. A time of 9999-12-31 with a negative
offset is year 10000 in UTC, and a time of 0001-01-01 with a positive offset is year 0:
either is stored by PostgreSQL but can never be read back into Python. A day's margin at
each end keeps every stored instant representable in every time zone.

Dates (DateField) keep the same day's margin, so that a date taken as midnight in any time
zone is still a representable instant.

SQLite stores datetimes as text and compares them as text, where a five-digit year sorts
below '9999-...': its constraints also ask julianday(), which reads years 0000-9999 only,
whether the text is a date at all (see DateTextReadable).

Floats: NaN and the infinities are refused everywhere (PostgreSQL stores them in double
precision columns, JSON cannot carry them). Columns without a narrower natural range are
bounded by FLOAT_LIMIT.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import BooleanField, CheckConstraint, F, Func, Q
from django.utils import timezone

DATETIME_MIN = datetime(1, 1, 2, tzinfo=UTC)
DATETIME_MAX = datetime(9999, 12, 30, tzinfo=UTC)
DATE_MIN = DATETIME_MIN.date()
DATE_MAX = DATETIME_MAX.date()
FLOAT_LIMIT = 1e15
# The largest value of an integer column on PostgreSQL (int4); SQLite's are wider.
INT32_MAX = 2_147_483_647

DATETIME_MESSAGE = "Must be between 0001-01-02 and 9999-12-30 (UTC)."
DATE_MESSAGE = "Must be between 0001-01-02 and 9999-12-30."
FLOAT_MESSAGE = f"Must be a finite number between -{FLOAT_LIMIT:g} and {FLOAT_LIMIT:g}."


def datetime_in_range(value: datetime) -> bool:
    """Whether an aware (or naive, taken in the default time zone as Django does) datetime
    is storable."""
    try:
        if value.tzinfo is None or value.utcoffset() is None:
            value = value.replace(tzinfo=timezone.get_default_timezone())
        instant = value.astimezone(UTC)
    except OverflowError:
        return False
    return DATETIME_MIN <= instant <= DATETIME_MAX


def validate_datetime(value: datetime | None) -> None:
    """Django validator: a datetime every engine and Python round-trip."""
    if value is not None and not datetime_in_range(value):
        raise ValidationError(DATETIME_MESSAGE, code="datetime_range")


def validate_date(value: date | None) -> None:
    """Django validator for a DateField: a date every engine and Python round-trip."""
    if value is not None and not DATE_MIN <= value <= DATE_MAX:
        raise ValidationError(DATE_MESSAGE, code="date_range")


def validate_finite(value: float | None) -> None:
    """Django validator: not NaN, not infinite, within FLOAT_LIMIT."""
    if value is None:
        return
    if isinstance(value, bool) or not math.isfinite(value) or abs(value) > FLOAT_LIMIT:
        raise ValidationError(FLOAT_MESSAGE, code="not_finite")


class DateTextReadable(Func):
    """On SQLite, whether a date or datetime column's text is a date (NULL passes).

    SQLite compares the stored text with the bounds as text, and '10000-01-01 00:00:00'
    sorts between '0001-...' and '9999-...'; julianday() returns NULL for a five-digit
    year or any text that is no date. Always true elsewhere: PostgreSQL's date and
    timestamp columns hold only dates, and the bounds refuse its 'infinity'.
    """

    arity = 1
    conditional = True
    output_field = BooleanField()

    def as_sql(self, compiler: Any, connection: Any, **extra_context: Any) -> tuple[str, list]:
        return "TRUE", []

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> tuple[str, list]:
        column, params = compiler.compile(self.source_expressions[0])
        return f"(julianday({column}) IS NOT NULL OR {column} IS NULL)", [*params, *params]


def q_datetime_in_range(field: str) -> Q:
    """A check constraint's condition for a datetime column (NULL passes, as in SQL)."""
    return Q(
        Q(**{f"{field}__gte": DATETIME_MIN, f"{field}__lte": DATETIME_MAX}),
        DateTextReadable(F(field)),
    )


def q_date_in_range(field: str) -> Q:
    """A check constraint's condition for a date column (NULL passes, as in SQL)."""
    return Q(
        Q(**{f"{field}__gte": DATE_MIN, f"{field}__lte": DATE_MAX}),
        DateTextReadable(F(field)),
    )


def q_finite(field: str, low: float = -FLOAT_LIMIT, high: float = FLOAT_LIMIT) -> Q:
    """A check constraint's condition for a float column: NaN and infinities fail it.

    On PostgreSQL NaN sorts above every number, so `<= high` refuses it; SQLite stores
    NaN as NULL, which NOT NULL columns refuse and nullable ones read back harmlessly.
    """
    return Q(**{f"{field}__gte": low, f"{field}__lte": high})


def datetime_checks(prefix: str, *fields: str) -> list[CheckConstraint]:
    """A `<prefix>_<field>_range` check constraint for each datetime column."""
    return [
        CheckConstraint(condition=q_datetime_in_range(field), name=f"{prefix}_{field}_range")
        for field in fields
    ]


def date_checks(prefix: str, *fields: str) -> list[CheckConstraint]:
    """A `<prefix>_<field>_range` check constraint for each date column."""
    return [
        CheckConstraint(condition=q_date_in_range(field), name=f"{prefix}_{field}_range")
        for field in fields
    ]


def float_check(
    prefix: str, field: str, low: float = -FLOAT_LIMIT, high: float = FLOAT_LIMIT
) -> CheckConstraint:
    """`<prefix>_<field>_range` for a column with a natural range, else `_finite`."""
    suffix = "finite" if (low, high) == (-FLOAT_LIMIT, FLOAT_LIMIT) else "range"
    return CheckConstraint(condition=q_finite(field, low, high), name=f"{prefix}_{field}_{suffix}")
