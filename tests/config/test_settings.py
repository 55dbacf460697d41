"""Malformed settings stop start-up with a message naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import Env, database_from_url

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "value", "reader"),
    [
        (
            "EMBEDDING_SIMILARITY_THRESHOLD",
            "high",
            lambda e: e.float("EMBEDDING_SIMILARITY_THRESHOLD", 0.5),
        ),
        ("RECALL_DECAY_DAYS", "nan", lambda e: e.float("RECALL_DECAY_DAYS", 365.0)),
        ("SIGNATURE_BITS", "2.5", lambda e: e.int("SIGNATURE_BITS", 256)),
        ("EMBEDDING_ENABLED", "maybe", lambda e: e.bool("EMBEDDING_ENABLED")),
        (
            "DECAY_MODEL",
            "linear",
            lambda e: e.choice("DECAY_MODEL", "exponential", ("exponential",)),
        ),
        ("RECALL_DECAY_FLOOR", "1.5", lambda e: e.float("RECALL_DECAY_FLOOR", 0.3, maximum=1.0)),
    ],
)
def test_a_malformed_value_names_the_variable(name, value, reader):
    with pytest.raises(ImproperlyConfigured, match=name):
        reader(Env({name: value}))


def test_values_parse_when_well_formed():
    env = Env({"A": "0.75", "B": "yes", "C": "12", "D": "x, y ,,z"})
    assert env.float("A", 0.5) == 0.75
    assert env.bool("B") is True
    assert env.int("C", 0) == 12
    assert env.list("D", []) == ["x", "y", "z"]
    assert env.float("MISSING", 0.5) == 0.5


@pytest.mark.parametrize("url", ["nonsense", "mysql://root@localhost/x", "postgres://"])
def test_an_unusable_database_url_names_the_variable(url):
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL"):
        database_from_url("DATABASE_URL", url)


def _start(env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SECRET_KEY"}}
    clean.update({"DJANGO_SETTINGS_MODULE": "config.settings", **env})
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEBUG": "false"}, "SECRET_KEY is not set"),
        ({"DATABASE_URL": "not-a-url"}, "DATABASE_URL"),
        ({"EMBEDDING_SIMILARITY_THRESHOLD": "abc"}, "EMBEDDING_SIMILARITY_THRESHOLD='abc'"),
        ({"Q_TIMEOUT": "600", "Q_RETRY": "300"}, "Q_RETRY=300 must be greater than Q_TIMEOUT"),
        ({"TIME_ZONE": "Mars/Olympus"}, "TIME_ZONE"),
        ({"REDIS_URL": "localhost:6379"}, "REDIS_URL"),
        ({"TASK_BROKER": "rabbit"}, "TASK_BROKER='rabbit'"),
        ({"TASK_BROKER": "redis"}, "TASK_BROKER=redis needs REDIS_URL"),
        (
            {"DECAY_FAST_HALF_LIFE_DAYS": "9", "DECAY_SLOW_HALF_LIFE_DAYS": "2"},
            "DECAY_FAST_HALF_LIFE_DAYS=9.0 must not be above DECAY_SLOW_HALF_LIFE_DAYS=2.0",
        ),
    ],
)
def test_start_up_fails_with_a_clear_message(env, message):
    result = _start(env)
    assert result.returncode != 0
    assert message in result.stderr
    # One line of explanation, not a page of unrelated traceback noise at the end.
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("django.core.exceptions.ImproperlyConfigured")
    )


def test_production_settings_start_with_a_secret_key():
    result = _start({"DEBUG": "false", "SECRET_KEY": "x" * 60})
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("env", "broker"),
    [
        ({}, "orm"),
        ({"REDIS_URL": "redis://127.0.0.1:6379/0"}, "redis"),
        ({"REDIS_URL": "redis://127.0.0.1:6379/0", "TASK_BROKER": "database"}, "orm"),
    ],
)
def test_the_task_broker_follows_task_broker_and_redis_url(env, broker):
    clean = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "TASK_BROKER"}}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings; "
            "print('redis' if 'redis' in settings.Q_CLUSTER else 'orm', "
            "settings.CACHES['default']['BACKEND'].rsplit('.', 1)[-1])",
        ],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    queue, cache_backend = result.stdout.split()
    assert queue == broker
    assert cache_backend == ("RedisCache" if "REDIS_URL" in env else "DatabaseCache")
