from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def dashboard_urls(settings):
    """The project's URLs with the dashboard at the root (tests/web/urls.py)."""
    settings.ROOT_URLCONF = "tests.web.urls"


@pytest.fixture
def ada_client(client, user):
    client.force_login(user)
    return client
