"""Set-based inserts for the bulk paths (memories, their events and cards).

`QuerySet.bulk_create` spends most of its time in Python: it builds a model instance per
row, compiles one parameter per value through each field's `get_db_prep_save`, and on
PostgreSQL psycopg then splices tens of thousands of parameters into the statement on the
client. Here values are prepared a column at a time, only where a field needs it
(memories.fastpaths.column_preparer: the values get_db_prep_save would give), and written:

- PostgreSQL: one `COPY ... FROM STDIN`; when the ids are wanted they are drawn first from
  the table's own sequence (`nextval`, so concurrent writers never collide).
- SQLite: multi-row `INSERT ... VALUES` as large as the variable limit allows, `RETURNING`
  the ids when wanted (ids are assigned in row order, so sorted they match the rows).
- Any other engine: `bulk_create`.

Like bulk_create this sends no signals and runs no `save()`. Foreign keys are written from
their `<name>_id` attributes. Each call is atomic by itself (a failed chunk undoes the
earlier ones, as bulk_create's batches do); call these inside `transaction.atomic()` to
make them atomic with the rest of the write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connections, models, router, transaction
from django.utils import timezone

from config.db import is_postgres, is_sqlite
from memories.fastpaths import column_preparer

_SQLITE_DEFAULT_VARIABLES = 999
# insert_new sends fewer objects than this through bulk_create: one INSERT ... RETURNING
# is as quick for a handful of rows, and keeps single writes on Django's usual path.
SMALL = 20


def _set_based(connection) -> bool:
    """An engine these functions write to themselves (any other goes through bulk_create)."""
    return is_postgres(connection) or is_sqlite(connection)


def _prepare(fields: Sequence[models.Field], rows: Sequence[Sequence], connection) -> list:
    """Rows of values for the fields, prepared for the driver, as a list of tuples."""
    columns = zip(*rows, strict=True) if rows else ()
    prepared = [
        column_preparer(field, connection)(list(column))
        for field, column in zip(fields, columns, strict=True)
    ]
    return list(zip(*prepared, strict=True))


def _write(connection, model, fields, rows: list[list], *, ids: bool) -> list[int]:
    with transaction.atomic(using=connection.alias, savepoint=False), connection.cursor() as cursor:
        if is_postgres(connection):
            new_ids = _reserve_ids(cursor, model._meta, len(rows)) if ids else []
            with _copy(cursor, model._meta, fields, ids=ids) as copy:
                _copy_rows(copy, rows, new_ids)
            return new_ids
        return _insert_sqlite(connection, cursor, model._meta, fields, rows, ids=ids)


@contextmanager
def writer(
    model: type[models.Model], *, ids: bool = False, expected: int
) -> Iterator[Callable[[Sequence[models.Model]], None]]:
    """Yield write(objs), which INSERTs a chunk of unsaved instances of `model`.

    For callers that build rows as they go: on PostgreSQL every chunk streams into one
    COPY, which the server works through while the caller builds the next chunk. At most
    `expected` instances may be written (their ids, wanted or not, are reserved up front
    on PostgreSQL; unused ones are skipped, as a rolled-back insert skips them). An
    exception inside the block aborts the COPY and undoes every chunk written.
    With `ids`, write sets each instance's primary key. auto_now fields are stamped.
    """
    alias = router.db_for_write(model)
    connection = connections[alias]
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    stamped = [
        field
        for field in fields
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
    ]
    attnames = [field.attname for field in fields]

    def rows_of(objs: Sequence[models.Model]) -> list:
        rows = []
        for obj in objs:
            for field in stamped:
                field.pre_save(obj, add=True)
            values = obj.__dict__
            rows.append([values[attname] for attname in attnames])
        return _prepare(fields, rows, connection)

    def saved(objs: Sequence[models.Model], new_ids: Sequence[int]) -> None:
        for obj in objs:
            obj._state.adding = False
            obj._state.db = alias
        if ids:
            for obj, pk in zip(objs, new_ids, strict=True):
                obj.pk = pk

    # All or nothing even where the caller holds no transaction, as bulk_create is.
    with transaction.atomic(using=alias, savepoint=False):
        if expected < SMALL or not _set_based(connection):

            def write_small(objs: Sequence[models.Model]) -> None:
                model._base_manager.using(alias).bulk_create(objs)

            yield write_small
            return
        if is_sqlite(connection):
            with connection.cursor() as cursor:

                def write_sqlite(objs: Sequence[models.Model]) -> None:
                    if objs:
                        rows = rows_of(objs)
                        opts = model._meta
                        saved(objs, _insert_sqlite(connection, cursor, opts, fields, rows, ids=ids))

                yield write_sqlite
            return
        with connection.cursor() as cursor:
            reserved = _reserve_ids(cursor, model._meta, expected) if ids else []
            position = 0
            with _copy(cursor, model._meta, fields, ids=ids) as copy:

                def write_postgresql(objs: Sequence[models.Model]) -> None:
                    nonlocal position
                    if position + len(objs) > expected:
                        raise ValueError(f"more than the {expected} rows expected")
                    new_ids = reserved[position : position + len(objs)]
                    position += len(objs)
                    _copy_rows(copy, rows_of(objs), new_ids)
                    saved(objs, new_ids)

                yield write_postgresql


def insert_new(objs: Sequence[models.Model], *, ids: bool = False) -> None:
    """INSERT unsaved instances of one model; with `ids`, set each one's primary key.

    auto_now and auto_now_add fields are stamped as bulk_create does.
    """
    if not objs:
        return
    with writer(type(objs[0]), ids=ids, expected=len(objs)) as write:
        write(objs)


def insert_rows(
    model: type[models.Model],
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    ids: bool = False,
) -> list[int]:
    """INSERT rows given as values for `columns` (field names or attnames, in that order).

    Every other field takes its default, evaluated once for all the rows (auto_now and
    auto_now_add fields: now); fewer than SMALL rows go through bulk_create, which
    evaluates defaults per row. Returns the new ids, in row order, when `ids` is set.
    """
    if not rows:
        return []
    alias = router.db_for_write(model)
    connection = connections[alias]
    opts = model._meta
    given = [opts.get_field(name) for name in columns]
    if len(rows) < SMALL or not _set_based(connection):
        # A handful of rows: instances through bulk_create, one INSERT ... RETURNING.
        attnames = [field.attname for field in given]
        objs = [model(**dict(zip(attnames, row, strict=True))) for row in rows]
        model._base_manager.using(alias).bulk_create(objs)
        return [obj.pk for obj in objs] if ids else []
    given_names = {field.name for field in given}
    rest = [
        field
        for field in opts.concrete_fields
        if not field.primary_key and field.name not in given_names
    ]
    now = timezone.now()
    defaults = [
        now
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
        else field.get_default()
        for field in rest
    ]
    fields = [*given, *rest]
    prepared_defaults = _prepare(rest, [defaults], connection)[0] if rest else ()
    prepared = [[*row, *prepared_defaults] for row in _prepare(given, rows, connection)]
    return _write(connection, model, fields, prepared, ids=ids)


def update_rows(
    model: type[models.Model], columns: Sequence[str], objs: Sequence[models.Model]
) -> None:
    """UPDATE each instance's `columns` (field names) by primary key, prepared as insert_rows
    prepares its values: one executemany, which psycopg sends as one pipeline on PostgreSQL.

    For a handful to a few hundred rows of different values, where `bulk_update` spends
    milliseconds building a CASE expression per column in Python. Sends no signals.
    """
    if not objs:
        return
    alias = router.db_for_write(model)
    connection = connections[alias]
    opts = model._meta
    fields = [opts.get_field(name) for name in columns]
    rows = [[getattr(obj, field.attname) for field in fields] for obj in objs]
    assignments = ", ".join(f"{connection.ops.quote_name(field.column)} = %s" for field in fields)
    pk = connection.ops.quote_name(opts.pk.column)
    sql = f"UPDATE {connection.ops.quote_name(opts.db_table)} SET {assignments} WHERE {pk} = %s"
    prepared = _prepare(fields, rows, connection)
    params = [[*values, obj.pk] for values, obj in zip(prepared, objs, strict=True)]
    with transaction.atomic(using=alias, savepoint=False), connection.cursor() as cursor:
        cursor.executemany(sql, params)


def _reserve_ids(cursor, opts, count: int) -> list[int]:
    """`count` new ids from the table's sequence, ascending."""
    cursor.execute(
        "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
        [cursor.db.ops.quote_name(opts.db_table), opts.pk.column, count],
    )
    return sorted(row[0] for row in cursor.fetchall())


@contextmanager
def _copy(cursor, opts, fields, *, ids: bool):
    """psycopg's COPY ... FROM STDIN, its errors raised as Django's (IntegrityError...)."""
    qn = cursor.db.ops.quote_name
    columns = [qn(field.column) for field in fields]
    if ids:
        columns.insert(0, qn(opts.pk.column))
    statement = f"COPY {qn(opts.db_table)} ({', '.join(columns)}) FROM STDIN"
    with cursor.db.wrap_database_errors, cursor.cursor.copy(statement) as copy:
        yield copy


def _copy_rows(copy, rows: Sequence[Sequence], ids: Sequence[int]) -> None:
    write_row = copy.write_row
    if ids:
        for pk, row in zip(ids, rows, strict=True):
            write_row((pk, *row))
    else:
        for row in rows:
            write_row(row)


def _sqlite_variable_limit(connection) -> int:
    try:
        return connection.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    except (AttributeError, sqlite3.Error):  # Python < 3.11
        return _SQLITE_DEFAULT_VARIABLES


def _insert_sqlite(connection, cursor, opts, fields, rows: list[list], *, ids: bool) -> list[int]:
    qn = connection.ops.quote_name
    columns = ", ".join(qn(field.column) for field in fields)
    placeholders = "(" + ", ".join(["%s"] * len(fields)) + ")"
    per_statement = max(1, _sqlite_variable_limit(connection) // len(fields))
    returning = f" RETURNING {qn(opts.pk.column)}" if ids else ""
    new_ids: list[int] = []
    for start in range(0, len(rows), per_statement):
        chunk = rows[start : start + per_statement]
        values = ", ".join([placeholders] * len(chunk))
        sql = f"INSERT INTO {qn(opts.db_table)} ({columns}) VALUES {values}{returning}"
        params = [value for row in chunk for value in row]
        cursor.execute(sql, params)
        if ids:
            new_ids += sorted(row[0] for row in cursor.fetchall())
    return new_ids
