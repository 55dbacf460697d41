"""The database engine, asked one way: every app's vendor-specific SQL branches on these.

Engram runs on PostgreSQL in production and SQLite as the embedded default; other
backends are not supported. Pass `conn` for a schema editor's or another alias's
connection; the default is Django's default connection.
"""

from __future__ import annotations

from typing import Any

from django.db import connection as default_connection


def vendor(conn: Any = None) -> str:
    """ "postgresql" or "sqlite" (Django's name for the engine)."""
    return (conn or default_connection).vendor


def is_postgres(conn: Any = None) -> bool:
    return vendor(conn) == "postgresql"


def is_sqlite(conn: Any = None) -> bool:
    return vendor(conn) == "sqlite"


def pick(*, postgres: Any, sqlite: Any, conn: Any = None) -> Any:
    """The engine's own form of a value, e.g. an SQL fragment written both ways."""
    return postgres if is_postgres(conn) else sqlite
