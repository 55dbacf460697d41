"""MCP's tools in process (memories/mcp.py): the SDK's client connected to the server object,
the caller's token given as stdio gives it. The same tools over real HTTP and stdio, with
two users, ceilings and read-only tokens: tests/e2e/test_mcp.py."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from mcp import Client

from memories import mcp
from memories.models import Classification
from tests.support.mcp import ok, refused

pytestmark = pytest.mark.django_db(transaction=True)


def tools(secret: str, calls, *, writes: bool = True):
    """Run `calls(client)` against the in-process server as the token `secret`."""

    async def go():
        mcp._stdio_secret.set(secret)
        mcp._stdio_writes.set(writes)
        async with Client(mcp.build_server()) as client:
            return await calls(client)

    return asyncio.run(go())


@pytest.fixture
def secret(user, namespace, make_token) -> str:
    return make_token(user, namespaces=[namespace], ceiling=Classification.RESTRICTED)[1]


def test_the_tools_answer_as_the_api_does(secret, namespace):
    async def calls(client):
        tea = await ok(client, "remember", content="Ada drinks tea.", session_id="s1")
        assert tea["namespace"] == namespace.slug  # the token's only namespace
        turn = await ok(
            client,
            "remember",
            content="Ada moved to Lisbon in May.",
            namespace=namespace.slug,
            topic="home",
            keywords=["move"],
            session_id="s1",
            position=1,
            classification="internal",
            cue="Where does Ada live?",
            created_at="2026-05-01T10:00:00Z",
        )
        found = await ok(client, "recall", query="Where does Ada live?", limit=3)
        assert turn["id"] in [hit["memory_id"] for hit in found["results"]]
        untracked = await ok(
            client,
            "recall",
            query="tea",
            namespaces=[namespace.slug],
            topic="drinks",
            tier="short_term",
            time_start="2020-01-01T00:00:00Z",
            time_end="2030-01-01T00:00:00Z",
            as_of="2030-01-01T00:00:00Z",
            session_id="s2",
            track=False,
        )
        assert untracked["query"] == "tea"
        got = await ok(client, "get", id=turn["id"])
        assert got["memory"]["cue"] == "Where does Ada live?"
        assert [event["kind"] for event in got["history"]] == ["created"]
        assert {link["kind"] for link in got["links"]} == {"next_turn"}
        changed = await ok(client, "update", id=tea["id"], topic="drinks", keywords=["tea"])
        assert changed["topic"] == "drinks"
        page = await ok(client, "list", limit=1, topic="drinks")
        assert [m["id"] for m in page["results"]] == [tea["id"]] and page["next_cursor"] is None
        first = await ok(client, "list", limit=1)
        second = await ok(client, "list", limit=1, cursor=first["next_cursor"])
        assert first["results"][0]["id"] != second["results"][0]["id"]
        await ok(client, "link", source=tea["id"], target=turn["id"], kind="related")
        await ok(client, "relate", subject="Ada", predicate="lives_in", object="Lisbon")
        assert (await ok(client, "graph", entity="Ada"))["results"][0]["object"] == "lisbon"
        assert (await ok(client, "forget", id=tea["id"], reason="wrong"))["status"] == "forgotten"
        assert (await ok(client, "restore", id=tea["id"]))["status"] == "active"
        assert (await ok(client, "reinforce_due", limit=5)) == {"results": []}

        text = await refused(client, "remember", content=" ")
        assert "Invalid input. (HTTP 400, invalid)" in text and "- content:" in text
        assert "Nothing to change" in await refused(client, "update", id=tea["id"])
        assert "Not found. (HTTP 404" in await refused(client, "get", id=10**9)

    tools(secret, calls)


def test_arguments_are_held_to_the_tools_schemas_before_anything_runs(secret, namespace):
    """JSON types as they are (no true for an id, no "1"), no argument a tool does not
    declare, required ones required: a tool error naming each, and nothing written."""
    from memories.models import Memory

    async def calls(client):
        listed = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
        assert all(schema["additionalProperties"] is False for schema in listed.values())
        assert "reason" in listed["forget"]["required"]
        tea = await ok(client, "remember", content="Ada drinks tea.")
        refusals = [
            (("get", {"id": True}), "id: true is not an integer"),
            (("get", {"id": str(tea["id"])}), f'id: "{tea["id"]}" is not an integer'),
            (("forget", {"id": tea["id"]}), "'reason' is a required property"),
            (("remember", {"content": "More tea.", "bogus": 1}), "bogus: unknown argument"),
            (("recall", {"query": "tea", "limit": 2.5}), "limit: 2.5 is not an integer"),
            (("update", {"id": tea["id"], "keywords": "tea"}), "keywords:"),
        ]
        for (tool, arguments), expected in refusals:
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            assert expected in result.content[0].text, (tool, result.content[0].text)
        return tea

    tea = tools(secret, calls)
    memory = Memory.objects.get(pk=tea["id"])
    assert (memory.status, list(Memory.objects.values_list("content", flat=True))) == (
        Memory.Status.ACTIVE,
        ["Ada drinks tea."],
    )


def test_a_read_only_tokens_recall_does_not_track(user, namespace, make_token):
    writer = make_token(user, namespaces=[namespace])[1]
    reader = make_token(user, namespaces=[namespace], access="read")[1]

    async def write(client):
        return await ok(client, "remember", content="Standup is at 9:30.")

    stored = tools(writer, write)

    async def read(client):
        await ok(client, "recall", query="standup")
        assert "read-only" in await refused(client, "forget", id=stored["id"], reason="old")
        return await ok(client, "get", id=stored["id"])

    assert tools(reader, read, writes=False)["memory"]["recall_count"] == 0


def test_a_token_of_several_namespaces_must_name_one(user, namespace, make_token):
    from memories import services

    services.namespace_create(owner=user, name="Other")
    secret = make_token(user)[1]  # all namespaces

    async def calls(client):
        text = await refused(client, "remember", content="Where does this go?")
        assert "namespace: required" in text and namespace.slug in text

    tools(secret, calls)


def test_without_a_token_a_tool_says_so():
    async def calls(client):
        return await refused(client, "recall", query="x")

    assert "Authentication required" in tools("", calls)


def test_the_token_verifier_accepts_live_tokens_only(secret, user, make_token):
    verifier = mcp.ApiTokenVerifier()
    access = asyncio.run(verifier.verify_token(secret))
    assert access is not None and access.scopes == ["read", "write"]
    reader = make_token(user, access="read")[1]
    assert asyncio.run(verifier.verify_token(reader)).scopes == ["read"]
    assert asyncio.run(verifier.verify_token("eng_nope_nope")) is None
    assert asyncio.run(verifier.verify_token("garbage")) is None


def test_the_api_call_answers_404_for_a_route_that_does_not_exist(secret):
    assert mcp.api_call(secret, "GET", "/api/v1/nowhere")[0] == 404


def test_errors_read_as_text_a_model_can_use():
    assert mcp._error_text(502, "oops") == "HTTP 502"
    limited = {"error": {"message": "Too many requests.", "code": "throttled", "retry_after": 3}}
    assert mcp._error_text(429, limited).endswith("Retry after 3 seconds.")


@pytest.mark.parametrize(
    ("hosts", "host"),
    [
        (["*"], "localhost"),
        ([".example.com"], "example.com"),
        (["a.test"], "a.test"),
        ([], "localhost"),
    ],
)
def test_in_process_calls_name_a_host_django_accepts(hosts, host):
    with override_settings(ALLOWED_HOSTS=hosts):
        assert mcp._host() == host


def test_the_asgi_app_sends_mcp_to_mcp_and_the_rest_to_django():
    from config.asgi import application

    async def go():
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            mcp_answer = await http.post("/mcp", json={})
            page = await http.get("/accounts/login/")
            api = await http.post(
                "/api/v1/memories",
                content=b'{"content": "x"}',
                headers={"Content-Type": "application/json"},
            )
        return mcp_answer, page, api

    mcp_answer, page, api = asyncio.run(go())
    assert mcp_answer.status_code == 401
    assert "resource_metadata=" in mcp_answer.headers["www-authenticate"]
    assert page.status_code == 200 and b"csrfmiddlewaretoken" in page.content
    assert api.status_code == 401  # Django's API, through a2wsgi, with its JSON errors
    assert api.json()["error"]["status"] == 401


def test_the_stdio_command_refuses_to_start_without_a_good_token(monkeypatch):
    monkeypatch.delenv("ENGRAM_TOKEN", raising=False)
    with pytest.raises(CommandError, match="An API token is needed"):
        call_command("mcp")
    with pytest.raises(CommandError, match="The token was refused: Invalid token"):
        call_command("mcp", "--token", "eng_nope_nope")
