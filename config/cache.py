"""The database cache (used when REDIS_URL is unset), with its writes committed lazily on
PostgreSQL."""

from __future__ import annotations

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.db import DatabaseCache as DjangoDatabaseCache
from django.db import connections, router, transaction


class DatabaseCache(DjangoDatabaseCache):
    """Django's database cache; on PostgreSQL a write made outside any transaction commits
    with `synchronous_commit` off.

    The API throttle writes its request history here on every request, in a transaction
    of its own. Waiting for that commit's WAL flush cost more than the rest of a small
    POST (5 ms at the median, 20 at the 95th percentile, against 7 ms without the throttle).
    An asynchronous commit is still atomic and ordered; a crash can lose only the last
    moments of throttle history (PostgreSQL's wal_writer_delay), and `SET LOCAL` confines
    the setting to this one transaction, so no other write is affected.
    """

    def _base_set(self, mode, key, value, timeout=DEFAULT_TIMEOUT) -> bool:
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        if connection.vendor != "postgresql" or connection.in_atomic_block:
            return super()._base_set(mode, key, value, timeout)
        with transaction.atomic(using=db):
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
            return super()._base_set(mode, key, value, timeout)
