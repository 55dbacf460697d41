"""The candidate filter every recall stage applies in SQL, so nothing above the caller's
ceiling is ever read into Python.

Its visibility part is Memory.objects.visible_to(...).live() written as a WHERE fragment
over memories_memory (raw SQL, because every stage joins it into its own statement);
tests/recall/test_visibility.py checks the two admit the same memories.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from memories.models import LIVE_STATUSES, Memory


@dataclass(frozen=True)
class RecallFilters:
    """What every stage restricts to; built once per call by the service."""

    namespace_ids: tuple[int, ...]
    ceiling: int
    now: datetime
    topic: str | None = None
    tier: str | None = None
    time_start: datetime | None = None
    time_end: datetime | None = None
    include_expired: bool = False
    as_of: datetime | None = None
    include_superseded: bool = False

    def population_sql(self, alias: str = "m") -> tuple[str, list]:
        """A WHERE fragment over memories_memory AS alias for what the caller may know of at
        all: the live memories of the namespaces at or below the ceiling. Statistics that
        steer a recall (Sf's word counts) are taken over this, never over the namespace, so
        neither a result's order nor Sf's explanation depends on a memory above the
        ceiling; sql() narrows it to the candidates."""
        namespaces = ", ".join(["%s"] * len(self.namespace_ids))
        statuses = ", ".join(["%s"] * len(LIVE_STATUSES))
        where = (
            f"{alias}.namespace_id IN ({namespaces}) AND {alias}.classification <= %s "
            f"AND {alias}.status IN ({statuses})"
        )
        return where, [*self.namespace_ids, self.ceiling, *LIVE_STATUSES]

    def sql(self, alias: str = "m", *, cold: bool = False) -> tuple[str, list]:
        """A WHERE fragment over memories_memory AS alias, and its parameters.

        Live memories of the namespaces at or below the ceiling, hot unless `cold`
        (associative results may be cold: they are reactivated when returned), unexpired
        unless include_expired, not superseded (valid at `as_of` when given; any when
        include_superseded), then the optional topic, tier and creation-time range.
        """
        ops = connection.ops
        population, params = self.population_sql(alias)
        parts = [population]
        if not cold:
            parts.append(f"{alias}.storage = %s")
            params.append(Memory.Storage.HOT.value)
        if not self.include_expired:
            parts.append(f"({alias}.expires_at IS NULL OR {alias}.expires_at > %s)")
            params.append(ops.adapt_datetimefield_value(self.now))
        if self.include_superseded:
            pass
        elif self.as_of:  # what was valid then: MemoryQuerySet.valid_at
            parts.append(
                f"{alias}.valid_from <= %s AND "
                f"({alias}.valid_until IS NULL OR {alias}.valid_until > %s)"
            )
            params += [ops.adapt_datetimefield_value(self.as_of)] * 2
        else:  # not superseded now: MemoryQuerySet.current
            parts.append(f"({alias}.valid_until IS NULL OR {alias}.valid_until > %s)")
            params.append(ops.adapt_datetimefield_value(self.now))
        if self.topic:
            parts.append(f"{alias}.topic = %s")
            params.append(self.topic)
        if self.tier:
            parts.append(f"{alias}.tier = %s")
            params.append(self.tier)
        if self.time_start:
            parts.append(f"{alias}.created_at >= %s")
            params.append(ops.adapt_datetimefield_value(self.time_start))
        if self.time_end:
            parts.append(f"{alias}.created_at <= %s")
            params.append(ops.adapt_datetimefield_value(self.time_end))
        return " AND ".join(parts), params
