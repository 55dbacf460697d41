"""What kind of database error an exception is, on PostgreSQL (SQLSTATE) and SQLite (message).

Django wraps the driver's exception (psycopg's, sqlite3's) in its own IntegrityError or
OperationalError and keeps the original as __cause__; the kind decides the answer: a
unique violation is a conflict (409, or the field error of the sequential check), a check
or not-null violation is invalid input (400), and an unreachable database or a cancelled
statement is a temporary failure (503).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

IntegrityKind = Literal["unique", "check", "not_null", "foreign_key", "other"]

_SQLSTATE_KINDS: dict[str, IntegrityKind] = {
    "23505": "unique",
    "23514": "check",
    "23502": "not_null",
    "23503": "foreign_key",
}
_SQLITE_KINDS: tuple[tuple[str, IntegrityKind], ...] = (
    ("UNIQUE constraint failed", "unique"),
    ("CHECK constraint failed", "check"),
    ("NOT NULL constraint failed", "not_null"),
    ("FOREIGN KEY constraint failed", "foreign_key"),
)
STATEMENT_TIMEOUT_SQLSTATE = "57014"  # query_canceled: statement_timeout (or a cancel)


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a psycopg error, wrapped by Django or not; None elsewhere."""
    for error in (exc, exc.__cause__):
        state = getattr(error, "sqlstate", None)
        if state:
            return state
    return None


def integrity_kind(exc: BaseException) -> IntegrityKind:
    """Which constraint an IntegrityError broke."""
    state = sqlstate(exc)
    if state is not None:
        return _SQLSTATE_KINDS.get(state, "other")
    message = str(exc.__cause__ or exc)
    for text, kind in _SQLITE_KINDS:
        if text in message:
            return kind
    return "other"


def is_statement_timeout(exc: BaseException) -> bool:
    return sqlstate(exc) == STATEMENT_TIMEOUT_SQLSTATE


@contextmanager
def unique_or(field: str, message: str) -> Iterator[None]:
    """Run an insert in a savepoint; a unique violation becomes {field: message}.

    The check before an insert ("already exists?") cannot see a concurrent writer's row
    until it commits, so two racing duplicates both pass it; the unique constraint stops
    the second, and this gives it the answer a sequential duplicate gets instead of an
    IntegrityError (a 500). The savepoint keeps a caller's transaction usable. Other
    integrity errors (check, not-null, foreign key) pass through unchanged.
    """
    try:
        with transaction.atomic():
            yield
    except IntegrityError as error:
        if integrity_kind(error) != "unique":
            raise
        raise ValidationError({field: message}) from error
