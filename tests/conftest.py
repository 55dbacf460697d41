from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from memories import services
from memories.models import Namespace


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
