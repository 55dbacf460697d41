"""A migration operation that adds range check constraints to a table that may hold rows
outside them: it repairs those rows first, then adds every check in one pass.

The checks are the ones config.bounds builds (`column >= low AND column <= high`, plus
SQLite's readability test for dates); the operation reads low and high back from each
condition, so a migration states each range once.

Repairs, one set-based UPDATE per column, touching only the rows the check would refuse:
- floats: a finite value outside the range is clamped to it; NaN, the infinities and
  anything that is no number (SQLite keeps text in any column) become the column's
  default, or NULL where the column allows it;
- dates and datetimes: a value below the range (PostgreSQL's -infinity, year 0) becomes
  the lower bound, anything else (infinity, a five-digit year, SQLite text that is no
  date) the upper bound.

Django's AddConstraint rebuilds the whole table on SQLite once per constraint and scans
it once per constraint on PostgreSQL; this adds them all in one rebuild on SQLite and one
ALTER TABLE (one scan) on PostgreSQL.
"""

from __future__ import annotations

import math
from typing import Any

from django.db import models
from django.db.migrations.operations.base import Operation
from django.db.models import Q


def range_of(constraint: models.CheckConstraint) -> tuple[str, Any, Any]:
    """(column's field name, low, high) of a check built by config.bounds."""
    bounds: dict[str, dict[str, Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, Q):
            for child in node.children:
                walk(child)
        elif isinstance(node, tuple):
            name, lookup = node[0].rsplit("__", 1)
            bounds.setdefault(name, {})[lookup] = node[1]

    walk(constraint.condition)
    if len(bounds) != 1 or set(next(iter(bounds.values()))) != {"gte", "lte"}:
        raise ValueError(f"{constraint.name} is not a range check of one column")
    ((name, limits),) = bounds.items()
    return name, limits["gte"], limits["lte"]


def repair_sql(
    model: type[models.Model], constraint: models.CheckConstraint, schema_editor: Any
) -> tuple[str, list[Any]]:
    """The UPDATE that brings the rows `constraint` would refuse inside its range."""
    connection = schema_editor.connection
    name, low, high = range_of(constraint)
    field = model._meta.get_field(name)
    table, column = (connection.ops.quote_name(n) for n in (model._meta.db_table, field.column))
    # The check itself picks the rows: NOT (check) is true exactly where the check fails
    # (and NULL, so untouched, where the column is NULL).
    refused = constraint._get_check_sql(model, schema_editor)
    if isinstance(field, models.FloatField):
        if field.null:
            replacement = None
        else:
            default = field.get_default() if field.has_default() else 0.0
            replacement = min(max(default, low), high)
        # NaN fails both finite branches on PostgreSQL (it sorts above infinity), and is
        # already NULL on SQLite; text on SQLite sorts above every number.
        fix = (
            f"CASE WHEN {column} < %s AND {column} > %s THEN %s "
            f"WHEN {column} > %s AND {column} < %s THEN %s ELSE %s END"
        )
        params = [low, -math.inf, low, high, math.inf, high, replacement]
    elif isinstance(field, models.DateField):  # DateTimeField too
        low, high = (field.get_db_prep_value(value, connection) for value in (low, high))
        fix = f"CASE WHEN {column} < %s THEN %s ELSE %s END"
        params = [low, low, high]
    else:
        raise ValueError(f"{constraint.name}: no repair for a {type(field).__name__}")
    return f"UPDATE {table} SET {column} = {fix} WHERE NOT ({refused})", params


class AddRangeConstraints(Operation):
    """Repair the rows outside each range check, then add the checks (see the module)."""

    reversible = True

    def __init__(self, model_name: str, constraints: list[models.CheckConstraint]) -> None:
        self.model_name = model_name
        self.constraints = constraints

    @property
    def model_name_lower(self) -> str:
        return self.model_name.lower()

    def deconstruct(self) -> tuple[str, list, dict[str, Any]]:
        return (
            self.__class__.__name__,
            [],
            {"model_name": self.model_name, "constraints": self.constraints},
        )

    def state_forwards(self, app_label: str, state: Any) -> None:
        for constraint in self.constraints:
            state.add_constraint(app_label, self.model_name_lower, constraint)

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        for constraint in self.constraints:
            schema_editor.execute(*repair_sql(model, constraint, schema_editor))
        vendor = schema_editor.connection.vendor
        if vendor == "sqlite":
            # SQLite adds a check by rebuilding the table from the model, and the model
            # of to_state already has them all.
            schema_editor.add_constraint(model, self.constraints[0])
        elif vendor == "postgresql":
            # A repaired row queues the deferred foreign key checks, and PostgreSQL alters
            # no table with pending trigger events: run them now (as Django's own
            # UPDATE-then-ALTER does), then defer again.
            schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE", params=None)
            schema_editor.execute("SET CONSTRAINTS ALL DEFERRED", params=None)
            # One ALTER TABLE validates every new check in one scan of the table.
            table = schema_editor.quote_name(model._meta.db_table)
            clauses = ", ".join(
                f"ADD {constraint.constraint_sql(model, schema_editor)}"
                for constraint in self.constraints
            )
            schema_editor.execute(f"ALTER TABLE {table} {clauses}", params=None)
        else:
            for constraint in self.constraints:
                schema_editor.add_constraint(model, constraint)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        # The repaired values stay: they were unreadable before.
        model = from_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        if schema_editor.connection.vendor == "sqlite":
            # One rebuild from the model without the checks drops them all.
            earlier = to_state.apps.get_model(app_label, self.model_name)
            schema_editor.remove_constraint(earlier, self.constraints[0])
            return
        for constraint in self.constraints:
            schema_editor.remove_constraint(model, constraint)

    def describe(self) -> str:
        names = ", ".join(constraint.name for constraint in self.constraints)
        return f"Repair values and create constraints {names} on model {self.model_name}"

    @property
    def migration_name_fragment(self) -> str:
        return f"{self.model_name_lower}_range_constraints"
