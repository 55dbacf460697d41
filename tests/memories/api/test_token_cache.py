"""The token cache (memories/token_cache.py): with API_TOKEN_CACHE_SECONDS a request does
not cost a token query, and every change that matters to authentication still takes effect
on the next request. The test settings' cache is the database cache, shared like Redis."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories import services
from memories.models import ApiToken, Classification
from memories.token_cache import _token_cache_keys

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def token_cache(settings):
    settings.API_TOKEN_CACHE_SECONDS = 60
    cache.clear()
    yield
    cache.clear()


def token_queries(agent, path: str = "/api/v1/memories") -> tuple[int, int]:
    """(status, statements that read the token table) of one GET."""
    with CaptureQueriesContext(connection) as queries:
        status = agent.get(path).status_code
    table = ApiToken._meta.db_table
    return status, sum(
        f'FROM "{table}"' in q["sql"] or f"FROM {table}" in q["sql"] for q in queries
    )


def test_the_second_request_reads_no_token_row(user, make_token, api):
    _token, secret = make_token(user)
    agent = api(secret)
    assert token_queries(agent) == (200, 1)
    assert token_queries(agent) == (200, 0)
    assert token_queries(agent) == (200, 0)


def test_without_the_setting_every_request_reads_the_token(settings, user, make_token, api):
    settings.API_TOKEN_CACHE_SECONDS = 0
    _token, secret = make_token(user)
    agent = api(secret)
    assert token_queries(agent) == (200, 1)
    assert token_queries(agent) == (200, 1)


def test_a_revoked_token_is_refused_on_the_next_request(client, user, make_token, api):
    token, secret = make_token(user)
    agent = api(secret)
    assert token_queries(agent) == (200, 1)
    assert token_queries(agent) == (200, 0)
    client.force_login(user)
    assert client.post(f"/api/v1/tokens/{token.pk}/revoke").status_code == 200
    response = agent.get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "This token has been revoked."


def test_an_edit_in_the_admin_takes_effect_on_the_next_request(
    user, namespace, make_token, make_memory, api
):
    secret_memory = make_memory(
        "The launch code is 0000.", classification=Classification.RESTRICTED
    )
    token, secret = make_token(user, ceiling=Classification.RESTRICTED)
    agent = api(secret)
    assert agent.get(f"/api/v1/memories/{secret_memory.pk}").status_code == 200
    assert token_queries(agent, f"/api/v1/memories/{secret_memory.pk}") == (200, 0)
    token.ceiling = Classification.INTERNAL
    token.save()  # what the admin's change form does
    assert agent.get(f"/api/v1/memories/{secret_memory.pk}").status_code == 404


def test_a_deleted_token_is_refused(user, make_token, api):
    token, secret = make_token(user)
    agent = api(secret)
    assert agent.get("/api/v1/memories").status_code == 200
    token.delete()
    response = agent.get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Invalid token."


def test_a_deactivated_owner_is_refused(user, make_token, api):
    _token, secret = make_token(user)
    agent = api(secret)
    assert agent.get("/api/v1/memories").status_code == 200
    user.is_active = False
    user.save()
    response = agent.get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "The token's owner is inactive."


def test_a_token_read_before_its_revocation_and_stored_after_it_is_not_served(
    user, make_token, api
):
    """The race the generations close: a request reads the live row, the token is revoked
    (new generation), then that request stores what it read under the generation it saw."""
    token, secret = make_token(user)
    entry_key, generation_key = _token_cache_keys(token.prefix)
    seen_generation = cache.get(generation_key)
    live = ApiToken.objects.select_related("owner").get(pk=token.pk)
    services.token_revoke(token=token)
    cache.set(entry_key, (seen_generation, live), 60)
    response = api(secret).get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "This token has been revoked."


@pytest.mark.parametrize("header", ["eng_NOT-HEX_x", "eng_0123456789abcdef0_x", "eng__x"])
def test_a_made_up_prefix_reads_neither_cache_nor_database(user, api, header):
    with CaptureQueriesContext(connection) as queries:
        response = api(header).get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Invalid token."
    # The database cache is the database: nothing at all was read for the token.
    assert not [q for q in queries if "cache" in q["sql"] or "apitoken" in q["sql"]]


def test_last_used_is_still_recorded(user, make_token, api):
    token, secret = make_token(user)
    assert token.last_used_at is None
    assert api(secret).get("/api/v1/memories").status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_the_cache_never_holds_the_owners_password_hash(user, make_token, api):
    token, secret = make_token(user)
    assert api(secret).get("/api/v1/memories").status_code == 200
    entry_key, _ = _token_cache_keys(token.prefix)
    _generation, cached = cache.get(entry_key)
    assert "password" in cached.owner.get_deferred_fields()
    assert user.password not in repr(cached.owner.__dict__)
