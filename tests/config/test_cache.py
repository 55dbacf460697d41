"""The database cache commits its own writes lazily on PostgreSQL, and only its own."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection, transaction

from tests.support.redis_db import redis_url


def _synchronous_commit() -> str | None:
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


@pytest.fixture
def cache_table(transactional_db):
    from django.core.management import call_command

    call_command("createcachetable", verbosity=0)
    yield
    cache.clear()


def test_writes_outside_a_transaction_are_stored_and_the_setting_does_not_leak(cache_table):
    before = _synchronous_commit()
    sent: list[str] = []

    def record(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        assert cache.set("k", [1, 2]) is None
    if connection.vendor == "postgresql":
        assert sent[0] == "SET LOCAL synchronous_commit TO OFF"
    else:
        assert "synchronous_commit" not in " ".join(sent)
    assert cache.get("k") == [1, 2]
    assert cache.add("k", "other") is False
    assert cache.add("k2", "new") is True
    cache.touch("k", 60)
    assert cache.get_many(["k", "k2"]) == {"k": [1, 2], "k2": "new"}
    assert _synchronous_commit() == before
    assert not connection.in_atomic_block


def test_writes_inside_a_transaction_belong_to_it(cache_table):
    with pytest.raises(RuntimeError), transaction.atomic():
        cache.set("inside", "x")
        assert _synchronous_commit() in (None, "on")
        raise RuntimeError
    assert cache.get("inside") is None
    with transaction.atomic():
        cache.set("kept", "y")
    assert cache.get("kept") == "y"


@pytest.mark.django_db
def test_a_thousand_live_keys_all_stay(cache_table):
    """Each key a throttle counter of its own token: none is culled while it is live."""
    for n in range(1000):
        cache.set(f"throttle-{n}", n, timeout=60)
    assert cache.get_many([f"throttle-{n}" for n in range(1000)]) == {
        f"throttle-{n}": n for n in range(1000)
    }


def test_the_redis_cache_keeps_one_client_per_pool(monkeypatch):
    """Django's Redis cache builds a redis-py client for every operation; ours keeps the
    pool's one, and the cache works as Django's does against a real Redis."""
    import redis

    from config.cache import RedisCache

    url = redis_url("cache")
    try:
        redis.Redis.from_url(url, socket_timeout=2).flushdb()
    except redis.RedisError:
        pytest.skip("Redis is not answering on 127.0.0.1:6379")
    made = []
    real = redis.Redis.__init__

    def counting(self, *args, **kwargs):
        made.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(redis.Redis, "__init__", counting)
    redis_cache = RedisCache(url, {})
    redis_cache.set("a", {"n": 1}, 30)
    assert redis_cache.add("b", 0, 30) is True
    assert redis_cache.incr("b") == 1
    assert redis_cache.get_many(["a", "b", "missing"]) == {"a": {"n": 1}, "b": 1}
    redis_cache.delete_many(["a", "b"])
    assert redis_cache.get("a") is None
    assert len(made) == 1
    redis_cache.clear()
