"""The use log (MemoryUse): one row per use of a memory, what decay fitting learns from.

Every writer of a use in seed 003's sense (use_count up, decay clock restarted) calls
uses_record right after its UPDATE, in the same transaction: recall's direct hits
(memories.tracking, which on PostgreSQL folds the two into one statement with
USES_INSERT_FROM), memory_touch, a deduplicated create and Keep on the about-to-forget
digest. The sweep prunes rows older than DECAY_FIT_HISTORY_DAYS (uses_prune).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection

from memories.models import Memory, MemoryUse

# INSERT INTO the log from rows (namespace_id, id, use_count) named `source`; one
# parameter: the moment of the use.
USES_INSERT_FROM = (
    f"INSERT INTO {MemoryUse._meta.db_table} (namespace_id, memory_ref, used_at, use_count) "
    "SELECT namespace_id, id, %s, use_count FROM {source}"
)


def uses_record(ids: Collection[int], *, now: datetime) -> int:
    """Log a use at `now` of each memory of `ids`, with its use_count as it now stands: one
    INSERT ... SELECT, whatever the number of ids."""
    if not ids:
        return 0
    marks = ", ".join(["%s"] * len(ids))
    source = f"{Memory._meta.db_table} WHERE id IN ({marks})"
    with connection.cursor() as cursor:
        cursor.execute(
            USES_INSERT_FROM.format(source=source),
            [connection.ops.adapt_datetimefield_value(now), *ids],
        )
        return cursor.rowcount


def uses_prune(*, now: datetime) -> int:
    """Delete the uses older than DECAY_FIT_HISTORY_DAYS (one statement)."""
    cutoff = now - timedelta(days=settings.DECAY_FIT_HISTORY_DAYS)
    deleted, _ = MemoryUse.objects.filter(used_at__lt=cutoff).delete()
    return deleted
