from __future__ import annotations

import pytest


@pytest.fixture
def ada_client(client, user):
    client.force_login(user)
    return client
