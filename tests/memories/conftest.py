"""Fixtures of the memories tests that write through the API as an agent does."""

from __future__ import annotations

import pytest

from memories.models import Classification


@pytest.fixture
def writer(user, make_token, api):
    """An API client with a write token for every namespace of `user`, up to restricted."""
    _, secret = make_token(user, ceiling=Classification.RESTRICTED)
    return api(secret)
