"""Fixtures of the API tests that run a real server (tests/api/servers.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from django.db import connection

from tests.support.servers import migrate


@pytest.fixture(scope="module")
def prepared_database(tmp_path_factory, django_db_setup, django_db_blocker) -> Iterator[str]:
    """A migrated database of the engine under test, with its cache table; its URL."""
    if connection.vendor == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('server') / 'server.sqlite3'}"
        migrate(url)
        yield url
        return
    from tests.e2e.test_cluster import _pg_admin, _pg_url

    name = f"engram_server_{uuid.uuid4().hex[:8]}"
    with django_db_blocker.unblock():
        admin, _ = _pg_admin()
        with admin:
            admin.execute(f'CREATE DATABASE "{name}"')
    url = _pg_url(name)
    migrate(url)
    yield url
    with django_db_blocker.unblock():
        admin, _ = _pg_admin()
        with admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
