"""An agent's round trip over real HTTP against the live server."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from memories import services

pytestmark = pytest.mark.django_db(transaction=True)


def _call(url: str, secret: str, method: str = "GET", body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_an_agent_stores_lists_and_loses_access_when_revoked(live_server, user):
    namespace = services.namespace_create(owner=user, name="agent-9", mode="agent_memory")
    token, secret = services.token_create(
        owner=user, name="agent", namespaces=[namespace], access="write"
    )
    api = f"{live_server.url}/api/v1"
    status, body = _call(
        f"{api}/memories", secret, "POST", {"namespace": "agent-9", "content": "User likes tea"}
    )
    assert status == 201 and body["content"] == "User likes tea"
    status, body = _call(f"{api}/memories?namespace=agent-9", secret)
    assert status == 200 and [m["content"] for m in body["results"]] == ["User likes tea"]
    status, body = _call(f"{api}/memories/{body['results'][0]['id']}/touch", secret, "POST", {})
    assert status == 200 and body["use_count"] == 1

    services.token_revoke(token=token)
    status, body = _call(f"{api}/memories", secret)
    assert status == 401 and body["error"]["code"] == "authentication_failed"
