from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from memories.models import ApiToken, Classification

pytestmark = pytest.mark.django_db


def test_a_logged_in_user_creates_a_token_and_sees_the_secret_once(client, user, namespace):
    client.force_login(user)
    response = client.post(
        "/api/v1/tokens",
        {
            "name": "agent",
            "namespaces": [namespace.slug],
            "access": "write",
            "ceiling": "confidential",
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    secret = body["secret"]
    assert secret.startswith(f"eng_{body['prefix']}_")
    token = ApiToken.objects.get(pk=body["id"])
    assert secret not in (token.secret_hash, token.prefix)  # only a hash is stored
    assert token.ceiling == Classification.CONFIDENTIAL
    listed = client.get("/api/v1/tokens").json()
    assert "secret" not in listed[0] and listed[0]["status"] == "active"
    assert listed[0]["namespaces"] == [namespace.slug]


def test_token_creation_validates_its_fields(client, user, other_user, nothing_written):
    from memories import services

    theirs = services.namespace_create(owner=other_user, name="Theirs")
    client.force_login(user)
    past = (timezone.now() - timedelta(days=1)).isoformat()
    refused = [
        ({"name": "x", "namespaces": [theirs.slug]}, "namespaces"),
        ({"name": "x", "all_namespaces": True, "ceiling": "top-secret"}, "ceiling"),
        ({"name": "x", "all_namespaces": True, "expires_at": past}, "expires_at"),
    ]
    for body, field in refused:
        with nothing_written():
            response = client.post("/api/v1/tokens", body, content_type="application/json")
        assert response.status_code == 400, body
        assert field in response.json()["error"]["fields"]


def test_tokens_cannot_manage_tokens(user, make_token, api, nothing_written):
    token, secret = make_token(user)
    agent = api(secret)
    with nothing_written():
        response = agent.post(
            "/api/v1/tokens", {"name": "more", "all_namespaces": True}, format="json"
        )
        assert response.status_code == 403
        assert agent.post(f"/api/v1/tokens/{token.pk}/revoke").status_code == 403


def test_a_revoked_token_is_refused_on_the_next_request(client, user, make_token, api):
    token, secret = make_token(user)
    agent = api(secret)
    assert agent.get("/api/v1/memories").status_code == 200
    client.force_login(user)
    assert client.post(f"/api/v1/tokens/{token.pk}/revoke").json()["status"] == "revoked"
    response = agent.get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "This token has been revoked."


def test_an_expired_token_is_refused(user, make_token, api):
    token, secret = make_token(user, expires_at=timezone.now() + timedelta(hours=1))
    agent = api(secret)
    assert agent.get("/api/v1/memories").status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = agent.get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "This token has expired."


@pytest.mark.parametrize(
    "header", ["Bearer nonsense", "Bearer eng_abc_def", "Bearer eng_000000000000_wrong"]
)
def test_a_wrong_secret_is_refused(user, make_token, api, header):
    make_token(user)
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_a_right_prefix_with_a_wrong_secret_is_refused(user, make_token, api):
    _, secret = make_token(user)
    response = api(secret[:-3] + "xyz").get("/api/v1/memories")
    assert response.status_code == 401


def test_last_used_is_recorded_without_a_write_per_request(user, make_token, api):
    token, secret = make_token(user)
    agent = api(secret)
    agent.get("/api/v1/memories")
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    agent.get("/api/v1/memories")
    token.refresh_from_db()
    assert token.last_used_at == first  # within the 5-minute resolution: no new write
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=6))
    agent.get("/api/v1/memories")
    token.refresh_from_db()
    assert token.last_used_at > first


@override_settings(API_RATE_LIMIT="3/min")
def test_requests_over_the_rate_limit_get_a_429_naming_the_limit(user, make_token, api):
    from django.core.cache import cache

    cache.clear()
    _, secret = make_token(user)
    agent = api(secret)
    codes = [agent.get("/api/v1/memories").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    error = agent.get("/api/v1/memories").json()["error"]
    assert error["code"] == "throttled" and error["limit"] == "API_RATE_LIMIT"
    # Another token has its own budget.
    _, other = make_token(user)
    assert api(other).get("/api/v1/memories").status_code == 200
    cache.clear()


@override_settings(API_RATE_LIMIT="5/min")
def test_the_rate_limit_counter_is_stored_outside_the_process(
    user, make_token, api, transactional_db
):
    """The throttle counts in the database cache (or Redis), which a second connection, as
    another process has, reads: not in process memory. That gunicorn's worker processes
    really share one limit under load is tests/api/test_throttle_concurrency.py."""
    import base64
    import pickle

    from django.conf import settings
    from django.core.cache import cache
    from django.db import connections

    cache.clear()
    token, secret = make_token(user)
    agent = api(secret)
    assert [agent.get("/api/v1/memories").status_code for _ in range(3)] == [200] * 3
    counter = f"throttle_api_token-{token.pk}_"
    location = settings.CACHES["default"]["LOCATION"]
    if "redis" in settings.CACHES["default"]["BACKEND"].lower():
        import redis

        other = redis.Redis.from_url(location)
        counts = [int(other.get(key)) for key in other.scan_iter(f"*{counter}*")]
    else:
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:
                cursor.execute(f"SELECT cache_key, value FROM {location}")
                rows = cursor.fetchall()
        finally:
            other.close()
        counts = [pickle.loads(base64.b64decode(value)) for key, value in rows if counter in key]
    assert counts == [3]
    cache.clear()


def test_a_scope_reads_only_the_named_namespaces_it_holds(user, other_user, make_token):
    """Scope.namespaces_named, behind recall, bulk create and every slug in a body: a
    namespace outside the token's or of another user, or a name that is no string, is
    not found; the token's own are, whatever the model's ordering."""
    from memories import services
    from memories.auth import Scope

    mine = [services.namespace_create(owner=user, name=name) for name in ("Beta", "Alpha")]
    outside = services.namespace_create(owner=user, name="Gamma")
    theirs = services.namespace_create(owner=other_user, name="Beta")
    token, _ = make_token(user, namespaces=mine)
    scope = Scope(user=user, token=token)
    named = scope.namespaces_named([mine[0].slug, mine[1].slug, outside.slug, 7, None])
    assert named == {ns.slug: ns for ns in mine}
    assert named[mine[0].slug].decay_params() == mine[0].decay_params()
    assert scope.namespaces_named([theirs.slug]) == {mine[0].slug: mine[0]}  # same slug: mine
    assert Scope(user=other_user, token=None).namespaces_named([mine[1].slug]) == {}
