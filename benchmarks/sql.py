"""SQL that builds large synthetic data sets in a few set-based statements, on either engine.

The benchmarks fill namespaces with hundreds of thousands of rows by INSERT ... SELECT
over a generated series instead of one ORM object per row.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, models

from config.db import is_postgres, pick


def series(first: int, last: int) -> tuple[str, list[Any]]:
    """A FROM clause yielding i = first..last as a set, and its parameters."""
    if is_postgres():
        return "generate_series(%s, %s) AS g(i)", [first, last]
    return (
        "(WITH RECURSIVE g(i) AS (SELECT %s UNION ALL SELECT i + 1 FROM g WHERE i < %s) "
        "SELECT i FROM g) AS g",
        [first, last],
    )


def insert_select(
    model: type[models.Model],
    expressions: dict[str, tuple[str, list[Any]]],
    source: str,
    source_params: list[Any],
) -> int:
    """INSERT INTO model SELECT ...: named columns from (SQL, params), the rest defaults.

    `source` is what follows FROM (e.g. a series() clause); returns the rows inserted.
    """
    qn = connection.ops.quote_name
    columns, values, params = [], [], []
    for field in model._meta.concrete_fields:
        if field.primary_key:
            continue
        columns.append(qn(field.column))
        if field.name in expressions:
            sql, sql_params = expressions[field.name]
            values.append(sql)
            params.extend(sql_params)
        else:
            values.append("%s")
            params.append(field.get_db_prep_save(field.get_default(), connection))
    sql = (
        f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(columns)}) "
        f"SELECT {', '.join(values)} FROM {source}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *source_params])
        return cursor.rowcount


def plus_days(base: str, days_sql: str) -> str:
    """SQL for the timestamp `base` plus a number of days given as SQL."""
    return pick(
        postgres=f"({base}::timestamptz + ({days_sql}) * interval '1 day')",
        sqlite=f"strftime('%%Y-%%m-%%d %%H:%%M:%%f', {base}, ({days_sql}) || ' days')",
    )


def minus_days(base: str, days_sql: str) -> str:
    """SQL for the timestamp `base` minus a number of days given as SQL."""
    return pick(
        postgres=f"({base}::timestamptz - ({days_sql}) * interval '1 day')",
        sqlite=f"strftime('%%Y-%%m-%%d %%H:%%M:%%f', {base}, '-' || ({days_sql}) || ' days')",
    )
