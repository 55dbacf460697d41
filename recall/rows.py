"""The columns fusion and ranking read for each candidate, and the association links
between candidates: the pipeline's reads besides the stages', in raw SQL."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection

from config.db import pick
from memories.models import Association
from recall.stages.filters import RecallFilters
from recall.stages.sql import in_list

# Columns read for every candidate; JSON columns are decoded by _decode, times are epochs.
ROW_FIELDS = (
    "id",
    "namespace_id",
    "content",
    "keywords",
    "topic",
    "tier",
    "storage",
    "classification",
    "emotion_score",
    "confidence",
    "utility",
    "strength",
    "use_count",
    "last_used_ts",
    "recall_count",
    "recall_timestamps",
    "trust",
    "credibility",
    "relevance_score",
    "created_ts",
    "emotion_tags",
    "importance_flags",
    "session_id",
    "valid_until_ts",
    "signature",
)
# keywords and recall_timestamps are decoded for every candidate, since ranking reads them;
# emotion_tags and importance_flags stay as stored until a candidate becomes a result
# (json_list), which only ten or so of the few hundred do.
_JSON_FIELDS = ("keywords", "recall_timestamps")
# Times are read as Unix seconds: decoding a few hundred timestamps per query into aware
# datetimes cost more than any ranking step; the results' created_at is made from them.
_EPOCH_SQL = {
    "postgres": "date_part('epoch', m.{})",
    # Whole seconds of the first 19 characters (strftime would round .9995 and up to the
    # next second), plus the ".ffffff" Django writes when there are microseconds: exact to
    # the microsecond, where julianday() would be off by tens of them.
    "sqlite": (
        "(CAST(strftime('%%s', substr(m.{0}, 1, 19)) AS INTEGER) + CAST(substr(m.{0}, 20) AS REAL))"
    ),
}
_EPOCH_FIELDS = {
    "last_used_ts": "last_used_at",
    "created_ts": "created_at",
    "valid_until_ts": "valid_until",
}


def row_columns() -> str:
    """The SELECT list of ROW_FIELDS over `memories_memory m`, for statements that read the
    rows along with something else (recall.stages.full_text)."""
    return _select_list()


def row_from(values: tuple) -> dict[str, Any]:
    """One row of row_columns() as load_rows returns it."""
    row = dict(zip(ROW_FIELDS, values, strict=True))
    _decode(row)
    return row


def _select_list() -> str:
    epoch = pick(**_EPOCH_SQL)
    return ", ".join(
        epoch.format(_EPOCH_FIELDS[name]) if name in _EPOCH_FIELDS else f"m.{name}"
        for name in ROW_FIELDS
    )


def load_rows(ids: list[int], filters: RecallFilters | None = None) -> dict[int, dict[str, Any]]:
    """Candidate rows by id in one raw query (optionally re-applying the filters, cold allowed).

    Raw SQL rather than .values(): on a few hundred candidates per query the ORM's
    per-value converters cost more than the search itself.
    """
    if not ids:
        return {}
    in_ids, params = in_list("m.id", ids)
    sql = f"SELECT {_select_list()} FROM memories_memory m "
    sql += f"WHERE {in_ids}"
    if filters is not None:
        where, extra = filters.sql("m", cold=True)
        sql += f" AND {where}"
        params += extra
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    rows = {}
    for values in fetched:
        row = row_from(values)
        rows[row["id"]] = row
    return rows


def json_list(value: Any) -> Any:
    """A JSON column's value as read (text on SQLite, and through Django's loader on
    PostgreSQL) decoded; unreadable or missing is an empty list."""
    if isinstance(value, str | bytes):
        if value == "[]" or value == b"[]":
            return []
        try:
            return json.loads(value)
        except ValueError:
            return []
    return [] if value is None else value


def _decode(row: dict[str, Any]) -> None:
    for name in _JSON_FIELDS:
        row[name] = json_list(row[name])


def _link_namespaces(alias: str, namespace_ids: tuple[int, ...]) -> tuple[str, list]:
    """The links' namespace condition, which must not choose the index: the links are found
    by their ends. Without statistics (SQLite has none unless ANALYZE ran) SQLite prefers
    the namespace's index to an IN list of ends, and scanned every link of the namespace
    once per branch of a statement; a unary plus keeps it off that index."""
    return in_list(
        pick(postgres=f"{alias}namespace_id", sqlite=f"+{alias}namespace_id"), list(namespace_ids)
    )


def association_links(
    ids: list[int], namespace_ids: tuple[int, ...], ceiling: int, *, kind: str | None = None
) -> list[tuple[int, int, float]]:
    """(source, target, weight) of the links at or below `ceiling` touching ids (of one
    kind, if given): two index range scans in one statement (an OR of the two columns
    would make the planner combine bitmaps)."""
    table = connection.ops.quote_name(Association._meta.db_table)
    sources, source_params = in_list("source_id", ids)
    targets, target_params = in_list("target_id", ids)
    namespaces, ns_params = _link_namespaces("", namespace_ids)
    ns_params = [*ns_params, ceiling]
    namespaces += " AND classification <= %s"
    of_kind, kind_params = ("AND kind = %s", [kind]) if kind is not None else ("", [])
    sql = (
        f"SELECT source_id, target_id, weight FROM {table} "
        f"WHERE {sources} AND {namespaces} {of_kind} "
        "UNION ALL "
        f"SELECT source_id, target_id, weight FROM {table} "
        f"WHERE {targets} AND NOT {sources} AND {namespaces} {of_kind}"
    )
    params = [*source_params, *ns_params, *kind_params]
    params += [*target_params, *source_params, *ns_params, *kind_params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def association_links_with_rows(
    ids: list[int], filters: RecallFilters, *, near_duplicate: str
) -> tuple[list[tuple[int, int, float]], dict[int, dict[str, Any]], set[tuple[int, int]]]:
    """association_links of ids (every kind, within the ceiling); in the same statement,
    the rows of their far ends that are not among ids and pass the filters (cold allowed),
    as load_rows would give them; and the links of kind `near_duplicate` touching ids or
    any far end.

    Association spreading and the collapsing of near-duplicates in one round trip instead
    of two: spreading adds far ends as candidates, and the collapsing needs the
    near-duplicate links of every candidate, which are among those returned (the caller
    keeps the ones touching its final candidates: association_links(candidates,
    kind=near_duplicate) would return the same).
    """
    table = connection.ops.quote_name(Association._meta.db_table)
    sources, source_params = in_list("source_id", ids)
    targets, target_params = in_list("target_id", ids)
    # Links above the ceiling are left out like the memories above it (their level is
    # the one their ends had when they were written: memories.models.Association).
    namespaces, ns_params = _link_namespaces("", filters.namespace_ids)
    namespaces += " AND classification <= %s"
    ns_params = [*ns_params, filters.ceiling]
    d_namespaces, d_ns_params = _link_namespaces("d.", filters.namespace_ids)
    d_namespaces += " AND d.classification <= %s"
    d_ns_params = [*d_ns_params, filters.ceiling]
    not_ids, not_params = in_list("m.id", ids)
    where, where_params = filters.sql("m", cold=True)
    no_row = ", ".join(["NULL"] * len(ROW_FIELDS))
    sql = (
        "WITH l AS ("
        f"SELECT source_id, target_id, weight, kind, target_id AS far FROM {table} "
        f"WHERE {sources} AND {namespaces} "
        "UNION ALL "
        f"SELECT source_id, target_id, weight, kind, source_id AS far FROM {table} "
        f"WHERE {targets} AND NOT {sources} AND {namespaces}) "
        f"SELECT 1, l.source_id, l.target_id, l.weight, l.kind, {_select_list()} FROM l "
        f"LEFT JOIN memories_memory m ON m.id = l.far AND NOT {not_ids} AND {where} "
        # The far ends' own near-duplicate links (each direction by its index).
        "UNION ALL "
        f"SELECT 2, d.source_id, d.target_id, d.weight, d.kind, {no_row} FROM {table} d "
        f"WHERE d.source_id IN (SELECT far FROM l) AND d.kind = %s AND {d_namespaces} "
        "UNION ALL "
        f"SELECT 2, d.source_id, d.target_id, d.weight, d.kind, {no_row} FROM {table} d "
        f"WHERE d.target_id IN (SELECT far FROM l) AND d.kind = %s AND {d_namespaces}"
    )
    params = [*source_params, *ns_params, *target_params, *source_params, *ns_params]
    params += [*not_params, *where_params]
    params += [near_duplicate, *d_ns_params, near_duplicate, *d_ns_params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    links = []
    rows: dict[int, dict[str, Any]] = {}
    near: set[tuple[int, int]] = set()
    for values in fetched:
        hop, source, target, weight, kind = values[:5]
        if kind == near_duplicate:
            near.add((source, target))
        if hop != 1:
            continue
        links.append((source, target, weight))
        if values[5] is not None and values[5] not in rows:
            rows[values[5]] = row_from(values[5:])
    return links, rows, near
