from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import connection

from memories import services
from memories.models import Namespace

# Fixtures shared across apps' tests: the dashboard's data (personal, theirs, ada_client).
pytest_plugins = ["tests.support.dashboard", "tests.support.background", "tests.support.receiver"]

# What a refused request may still write, by design: the session, django-axes' record of
# failed sign-ins, and a token's last use (stamped on its first request in a window,
# whatever the answer).
BOOKKEEPING_APPS = frozenset({"sessions", "axes"})
BOOKKEEPING_FIELDS = {"memories.ApiToken": frozenset({"last_used_at"})}


@pytest.fixture(autouse=True)
def throttle_clock_stands_still(monkeypatch):
    """The API throttle counts in windows of wall-clock time (memories.auth). A request in a
    new window adds its counter first: a few more queries than the request before it. A
    test that compares two requests' queries failed whenever a minute ended between them
    (in CI on PostgreSQL, 13 queries then 22). In-process, the throttle's clock stands at
    the test's start, so a test runs in one window; real servers (tests/e2e) keep real
    time."""
    from memories.auth import TokenRateThrottle

    started = time.time()
    monkeypatch.setattr(TokenRateThrottle, "timer", staticmethod(lambda: started))


def database_rows(ignore: Mapping[str, set[str]] | None = None) -> dict[str, list[tuple]]:
    """Every row of every model's table (the apps', Django's, django-q's), field by field,
    less the bookkeeping above and `ignore` ({"app.Model": {"field", ...}}). Read with
    plain SQL: through the ORM it is fifty times slower, too slow to call around every
    refused request."""
    quote = connection.ops.quote_name
    rows: dict[str, list[tuple]] = {}
    with connection.cursor() as cursor:
        for model in apps.get_models(include_auto_created=True):
            meta = model._meta
            if meta.app_label in BOOKKEEPING_APPS or meta.proxy or not meta.managed:
                continue
            skip = BOOKKEEPING_FIELDS.get(meta.label, frozenset()) | (ignore or {}).get(
                meta.label, set()
            )
            columns = ", ".join(
                quote(field.column)
                for field in meta.concrete_fields
                if field.column and field.attname not in skip  # a composite key has none
            )
            table = quote(meta.db_table)
            order = ", ".join(quote(field.column) for field in meta.pk_fields)
            cursor.execute(f"SELECT {columns} FROM {table} ORDER BY {order}")
            rows[meta.label] = cursor.fetchall()
    return rows


@contextmanager
def nothing_written(ignore: Mapping[str, set[str]] | None = None) -> Iterator[None]:
    """Fails unless the block leaves every table as it found it: for refused writes."""
    before = database_rows(ignore)
    yield
    after = database_rows(ignore)
    changed = {
        label: {
            "gone": [row for row in before[label] if row not in after[label]][:3],
            "new": [row for row in after[label] if row not in before[label]][:3],
        }
        for label in before
        if before[label] != after[label]
    }
    assert not changed, f"a refused write changed {sorted(changed)}: {changed}"


@pytest.fixture(name="nothing_written")
def nothing_written_fixture(db):
    """`with nothing_written(): ...` around requests that must be refused."""
    return nothing_written


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("ada", "ada@example.com", "pw-ada-12345")


@pytest.fixture
def other_user(db):
    return get_user_model().objects.create_user("bob", "bob@example.com", "pw-bob-12345")


@pytest.fixture
def namespace(user) -> Namespace:
    return services.namespace_create(owner=user, name="Work", mode=Namespace.Mode.PERSONAL)


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """`with committed():` the writes inside commit as far as the worker is concerned: the
    tasks they queue for after the commit (near-duplicate indexing, ...) run when the block
    ends, synchronously (Q_CLUSTER sync in the test settings)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def make_memory(namespace):
    def make(content: str = "The project uses PostgreSQL in production.", **fields):
        fields.setdefault("namespace", namespace)
        return services.memory_create(content=content, **fields)

    return make


@pytest.fixture
def make_token():
    """make_token(user, namespaces=[...], access="write", ceiling=1) -> (token, secret)."""

    def make(owner, namespaces=(), **fields):
        fields.setdefault("access", "write")
        if not namespaces:
            fields.setdefault("all_namespaces", True)
        return services.token_create(owner=owner, name="test", namespaces=namespaces, **fields)

    return make


@pytest.fixture
def api():
    """An APIClient factory authenticated by a bearer secret."""
    from rest_framework.test import APIClient

    def make(secret: str | None = None) -> APIClient:
        client = APIClient()
        if secret:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return make
