"""What a benchmark ran on: the machine's memory and the database server."""

from __future__ import annotations

from pathlib import Path

from django.db import connection

from config.db import is_postgres, is_sqlite, vendor


def memory_gib() -> float | None:
    """Total memory in GiB (from /proc/meminfo), or None where there is none."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return None


def database_server(*, autovacuum: bool = False) -> str:
    """The server and its version, e.g. "PostgreSQL 16.4" or "SQLite 3.40.1" (with
    autovacuum, PostgreSQL's autovacuum setting too)."""
    with connection.cursor() as cursor:
        if is_postgres():
            cursor.execute("SHOW server_version")
            server = f"PostgreSQL {cursor.fetchone()[0].split()[0]}"
            if autovacuum:
                cursor.execute("SHOW autovacuum")
                server += f" (autovacuum {cursor.fetchone()[0]})"
            return server
        if is_sqlite():
            cursor.execute("SELECT sqlite_version()")
            return f"SQLite {cursor.fetchone()[0]}"
        return vendor()
